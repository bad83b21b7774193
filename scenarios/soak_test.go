package scenarios

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/models"
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
	res, err := Soak(context.Background(), SoakConfig{Scenarios: list, Runs: 2, OutDir: t.TempDir(),
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
			require.FileExists(t, filepath.Join(r.Evidence, "history.json"), "--out keeps every run's evidence")
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
		needs, configured := needsPostgres(sc.Spec)
		require.True(t, needs && !configured, name)
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

// summarise: the rates count completed runs only, and each rate applies only when the
// catalogue expects some property that way.
func TestSummarise(t *testing.T) {
	v, h, inc := models.Violated, models.Held, models.Inconclusive
	ns := func(x int64) *int64 { return &x }
	runs := []SoakRun{
		{Seed: 1, Verdicts: map[models.Property]models.Verdict{models.Register: v, models.Tokens: h}, FirstViolationNanos: ns(3e9), CheckNanos: 10, Ops: 100, WorkloadNanos: 2e9},
		{Seed: 2, Verdicts: map[models.Property]models.Verdict{models.Register: h, models.Tokens: v}, Diffs: []string{"x"}, CheckNanos: 30, Ops: 300, WorkloadNanos: 2e9},
		{Seed: 3, Verdicts: map[models.Property]models.Verdict{models.Register: v, models.Tokens: inc}, FirstViolationNanos: ns(1e9), CheckNanos: 20, Ops: 200, WorkloadNanos: 2e9},
		{Seed: 4, Err: "boom"},
	}
	for _, tc := range []struct {
		name                  string
		expect                map[models.Property]models.Verdict
		detect, alarm         *float64
		wantInconclusive, ops float64
	}{
		{"both", map[models.Property]models.Verdict{models.Register: v, models.Tokens: h}, ptr(2.0 / 3), ptr(1.0 / 3), 1.0 / 3, 100},
		{"only violated", map[models.Property]models.Verdict{models.Register: v}, ptr(2.0 / 3), nil, 1.0 / 3, 100},
		{"none", nil, nil, nil, 1.0 / 3, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := summarise("s", Expect{Verdicts: tc.expect}, runs)
			require.Equal(t, 4, st.Runs)
			require.Equal(t, 1, st.Errors)
			require.Equal(t, 1, st.Mismatches)
			require.Equal(t, tc.detect, st.DetectionRate)
			require.Equal(t, tc.alarm, st.FalseAlarmRate)
			require.InDelta(t, tc.wantInconclusive, st.InconclusiveRate, 1e-9)
			require.InDelta(t, tc.ops, st.OpsPerSec, 1e-9)
			require.Equal(t, Percentiles{N: 2, P50ns: 1e9, P95ns: 3e9, MaxNs: 3e9}, st.TimeToFirstViolation)
			require.Equal(t, Percentiles{N: 3, P50ns: 20, P95ns: 30, MaxNs: 30}, st.Check)
		})
	}
}

func ptr(f float64) *float64 { return &f }

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
