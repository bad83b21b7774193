package scenarios

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A tiny soak: one unsafe and one safe naive scenario, two runs each, as the catalogue
// expects: every violation detected, no false alarm.
func TestSoakNaive(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 4 scenarios")
	}
	t.Parallel() // like the catalogue's runs: the faults heal on events, not timers
	list, _, err := SelectScenarios("naive-unfenced-pause,naive-fenced-pause")
	require.NoError(t, err)
	var seen []int64
	store := t.TempDir()
	res, err := Soak(context.Background(), SoakConfig{Scenarios: list, Runs: 2, Store: store,
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
	_, _, err := SelectScenarios("naive-fenced-pause,nope")
	require.ErrorIs(t, err, ErrSpec)
	all, skipped, err := SelectScenarios("all")
	require.NoError(t, err)
	require.Len(t, all, len(Catalogue())-len(skipped))
	for _, name := range skipped {
		sc, ok := Lookup(name)
		require.True(t, ok)
		require.NotEmpty(t, Unavailable(sc.Spec), name)
	}
	_, err = Soak(context.Background(), SoakConfig{Scenarios: all[:1], Runs: 0})
	require.ErrorIs(t, err, ErrSpec)
	noFault := Scenario{Spec: Spec{Name: "x", Backend: "naive"}}
	_, err = Soak(context.Background(), SoakConfig{Scenarios: []Scenario{noFault}, Runs: 1, Random: true})
	require.ErrorIs(t, err, ErrSpec)
	bad := Scenario{Spec: Spec{Name: "y", Backend: "chubby"}}
	_, err = Soak(context.Background(), SoakConfig{Scenarios: []Scenario{bad}, Runs: 1})
	require.ErrorIs(t, err, ErrSpec)
}

// In random mode every catalogue scenario with faults becomes a valid random schedule.
func TestSoakRandomSpecs(t *testing.T) {
	for _, sc := range Catalogue() {
		if len(sc.Faults) == 0 {
			continue
		}
		t.Run(sc.Name, func(t *testing.T) {
			spec, err := soakSpec(sc, true)
			require.NoError(t, err)
			require.Empty(t, spec.Faults)
			_, _, ok, err := Schedule(spec)
			require.NoError(t, err)
			require.True(t, ok)
		})
	}
}
