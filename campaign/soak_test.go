package campaign

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/fencecheck/fencecheck/builtin"
	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/spec"
	"github.com/stretchr/testify/require"
)

// A tiny soak: one unsafe and one safe naive scenario, two runs each, as the catalogue
// expects: every violation detected, no false alarm.
func TestSoakNaive(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 4 scenarios")
	}
	t.Parallel() // like the catalogue's runs: the faults heal on events, not timers
	list, _, err := builtin.Catalogue().Select(builtin.Registry(), "naive-unfenced-pause,naive-fenced-pause")
	require.NoError(t, err)
	var seen []int64
	store := t.TempDir()
	res, err := Soak(context.Background(), SoakConfig{Registry: builtin.Registry(), Scenarios: list, Runs: 2, Store: store,
		Progress: func(_ string, r SoakRun) { seen = append(seen, r.Seed) }})
	require.NoError(t, err)
	require.Equal(t, []int64{1, 2, 1, 2}, seen)
	require.Len(t, res.Scenarios, 2)
	require.Zero(t, res.Mismatches(), "%+v", res.Scenarios)
	require.Zero(t, res.Errors())

	unsafe, safe := res.Scenarios[0], res.Scenarios[1]
	require.Equal(t, 1.0, *unsafe.DetectionRate)
	require.Equal(t, 0.0, *unsafe.FalseAlarmRate) // tokens are expected held
	require.Equal(t, 2, unsafe.TimeToFirstViolation.N)
	require.Positive(t, unsafe.TimeToFirstViolation.P50ns)
	require.LessOrEqual(t, unsafe.TimeToFirstViolation.P50ns, unsafe.TimeToFirstViolation.MaxNs)
	require.Equal(t, 1.0, *safe.DetectionRate) // mutex is expected violated
	require.Equal(t, 0.0, *safe.FalseAlarmRate)
	require.Zero(t, safe.TimeToFirstViolation.N, "no stale write gets through a fence")
	for _, s := range res.Scenarios {
		for _, r := range s.Detail {
			require.FileExists(t, filepath.Join(store, r.Evidence, "history.json"), "a store keeps every run's evidence")
		}
		require.Zero(t, s.InconclusiveRate)
		require.Positive(t, s.OpsPerSec)
		require.Equal(t, 2, s.Check.N)
	}
}

func TestSoakBadInput(t *testing.T) {
	reg := builtin.Registry()
	all, _, err := builtin.Catalogue().Select(reg, "all")
	require.NoError(t, err)
	_, err = Soak(context.Background(), SoakConfig{Registry: reg, Scenarios: all[:1], Runs: 0})
	require.ErrorIs(t, err, spec.ErrSpec)
	noFault := catalogue.Scenario{Spec: spec.Spec{Name: "x", Backend: "naive"}}
	_, err = Soak(context.Background(), SoakConfig{Registry: reg, Scenarios: []catalogue.Scenario{noFault}, Runs: 1, Random: true})
	require.ErrorIs(t, err, spec.ErrSpec)
	bad := catalogue.Scenario{Spec: spec.Spec{Name: "y", Backend: "chubby"}}
	_, err = Soak(context.Background(), SoakConfig{Registry: reg, Scenarios: []catalogue.Scenario{bad}, Runs: 1})
	require.ErrorIs(t, err, spec.ErrSpec)
	_, err = Soak(context.Background(), SoakConfig{Scenarios: all[:1], Runs: 1})
	require.ErrorIs(t, err, spec.ErrSpec, "no registry")
}

// In random mode every catalogue scenario with faults becomes a valid random schedule.
func TestSoakRandomSpecs(t *testing.T) {
	for _, sc := range builtin.Catalogue() {
		if len(sc.Faults) == 0 {
			continue
		}
		t.Run(sc.Name, func(t *testing.T) {
			s, err := soakSpec(sc, true, false)
			require.NoError(t, err)
			require.Empty(t, s.Faults)
			r, err := spec.Resolve(builtin.Registry(), s)
			require.NoError(t, err)
			_, ok := r.Schedule()
			require.True(t, ok)
		})
	}
}
