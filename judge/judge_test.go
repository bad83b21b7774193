package judge

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/models"
)

// Summarise: the rates count completed runs only, and each rate applies only when the
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
			st := Summarise("s", tc.expect, runs)
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

func TestPercentile(t *testing.T) {
	s := []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, tc := range []struct {
		p    float64
		want int64
	}{{50, 5}, {90, 9}, {100, 10}, {0, 1}} {
		require.Equal(t, tc.want, Percentile(s, tc.p), "p%v", tc.p)
	}
	require.Zero(t, Percentile(nil, 50))
	require.Equal(t, Percentiles{N: 3, P50ns: 2, P95ns: 3, MaxNs: 3}, Summary([]int64{3, 1, 2}))
}

// The scorecard's rows are "rows" in JSON; a scorecard written with the old "Rows" key
// reads the same.
func TestScorecardRowsKey(t *testing.T) {
	b, err := json.Marshal(Scorecard{Rows: []ScoreRow{{Fault: "pause"}}})
	require.NoError(t, err)
	require.Contains(t, string(b), `"rows":[`)
	require.NotContains(t, string(b), `"Rows"`)
	for _, doc := range []string{`{"rows":[{"fault":"pause"}]}`, `{"Rows":[{"fault":"pause"}]}`} {
		var sc Scorecard
		require.NoError(t, json.Unmarshal([]byte(doc), &sc))
		require.Len(t, sc.Rows, 1, doc)
		require.Equal(t, "pause", sc.Rows[0].Fault)
	}
}

// Durations print in the unit their rounded value belongs to.
func TestDuration(t *testing.T) {
	for _, tc := range []struct {
		ns   int64
		want string
	}{
		{500, "500 ns"},
		{999, "999 ns"},
		{1_000, "1 µs"},
		{999_400, "999 µs"},
		{999_600, "1 ms"},
		{664_000, "664 µs"},
		{999_400_000, "999 ms"},
		{999_600_000, "1.00 s"},
		{1_010_000_000, "1.01 s"},
		{59_400_000_000, "59.40 s"},
		{59_600_000_000, "1m0s"},
		{90_000_000_000, "1m30s"},
	} {
		require.Equal(t, tc.want, Duration(tc.ns), "%d ns", tc.ns)
	}
}

// A tokenless backend's verdict says once that it cannot be fenced, whether or not its
// reason already does.
func TestNoTokenVerdict(t *testing.T) {
	for _, reason := range []string{
		"no fencing token: GET_LOCK returns only 1 or 0, so the lock cannot be made safe by fencing",
		"its leases carry no ordering",
	} {
		s := Scorecard{Backend: "b", NoToken: reason}
		s.Judge()
		require.Equal(t, 1, strings.Count(s.Verdict, "cannot be made safe by fencing"), s.Verdict)
		require.Contains(t, strings.ToLower(s.Verdict), "no fenced resource was run against it")
	}
}

// A violated property's time is the latest call among its counterexample's ops (the
// moment the run had shown it); a held one, or one whose ops the history lacks, has none.
func TestViolations(t *testing.T) {
	h := &history.History{Ops: []history.Op{{ID: 1, Call: 100}, {ID: 2, Call: 300}, {ID: 3, Call: 200}}}
	rep := &models.Report{Results: []models.Result{
		{Property: models.Register, Verdict: models.Violated, Counterexample: []int{3, 1}},
		{Property: models.Tokens, Verdict: models.Violated, Counterexample: []int{1, 2}},
		{Property: models.Mutex, Verdict: models.Held},
		{Property: models.Updates, Verdict: models.Violated, Counterexample: []int{9}},
	}}
	require.Equal(t, map[models.Property]int64{models.Register: 200, models.Tokens: 300}, Violations(h, rep))
	require.Nil(t, Violations(nil, rep), "a history checked as a stream is not kept")
}
