package reports

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/judge"
	"github.com/fencecheck/fencecheck/models"
)

func TestComparisonPage(t *testing.T) {
	run := func(outcome judge.RunOutcome, never int) judge.CompareRun {
		return judge.CompareRun{Outcome: outcome, TTLNanos: 2e9, Verdicts: map[models.Property]models.Verdict{models.Register: models.Held},
			Superseded: 1, Noticed: 1 - never, NeverNoticed: never, ValidityGapNanos: 2e9, NoticeDelayNanos: 5e8, TakeoverNanos: 2e9, Grants: 5, Dir: "r/1"}
	}
	// Safe with fencing on evidence: the fence rejected a stale write.
	rejected := func(r judge.CompareRun) judge.CompareRun { r.StaleAttempted, r.StaleRejected = 1, 1; return r }
	c := &Comparison{
		Started: time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC), TTLNanos: 2e9, Faults: []string{"pause"}, Runs: 2, Seeds: []int64{1, 2}, Parallel: 3, BaselineAlone: true, Machine: judge.Machine{CPUs: 2, OS: "linux", Arch: "amd64", GoVersion: "go1.26"},
		Services: []judge.ServiceRow{
			{Name: "a<b", Service: "a", Backend: "a", Facts: judge.Facts{Token: "t"}, Baseline: []judge.CompareRun{run(judge.OutcomeSafe, 0), run(judge.OutcomeSafe, 0)},
				Faults: []judge.CompareFault{{Fault: "pause", Unfenced: []judge.CompareRun{run(judge.OutcomeUnsafe, 1), run(judge.OutcomeUnsafe, 1)},
					Fenced: []judge.CompareRun{rejected(run(judge.OutcomeSafe, 0)), rejected(run(judge.OutcomeSafe, 0))}}}},
		},
		Skipped: []judge.SkippedEntry{{Backend: "x", Reason: "needs Debian package x"}},
	}
	c.Judge()
	dir := t.TempDir()
	require.NoError(t, WriteComparison(dir, c))
	page, err := os.ReadFile(filepath.Join(dir, ComparePage))
	require.NoError(t, err)
	for _, w := range []string{`<svg id="compare-chart"`, `url(#never)`, `data-service="a&lt;b"`, "never", "needs Debian package x", `href="../../r/1/report.html"`, `title="seed 0: safe"`, "n=4", "is safe to adopt with a fenced resource"} {
		require.Contains(t, string(page), w)
	}
	require.NotContains(t, string(page), "a<b", "names are escaped")
	back, err := ReadComparison(filepath.Join(dir, CompareJSON))
	require.NoError(t, err)
	require.Equal(t, c.Services[0].Paragraph, back.Services[0].Paragraph)

	// Outside a store: no links to runs, and the same page for the same comparison.
	var a, b strings.Builder
	require.NoError(t, WriteComparisonPage(&a, c))
	require.NoError(t, WriteComparisonPage(&b, c))
	require.Equal(t, a.String(), b.String())
	require.NotContains(t, a.String(), "report.html")

	table := WhichLock(c, "docs/compare/")
	require.Contains(t, table, "| a | `a<b` | t | stale writes got through | held | 2.00 s (n=4) under pause | — | never in 2 run(s) under pause | 2.00 s (n=4) under pause |")
	require.Contains(t, table, "2 run(s) per cell (seeds 1, 2; the runs without a fault alone, 3 fault run(s) at a time)")
	md := CompareMarkdown(c)
	require.Contains(t, md, "| a<b | pause | stale writes got through | held | 0/0/0 \\| 2/2/0 | 2.00 s (n=4) | — | never in 2 of 4 runs; else 500 ms (n=2) | 2.00 s (n=4) |")
	var term strings.Builder
	PrintComparison(&term, c)
	require.Contains(t, term.String(), "2 run(s) per cell, seeds 1, 2")
	require.Contains(t, term.String(), "without faults (each run alone; 3 fault run(s) at a time)")
	require.Contains(t, table, "Not compared here: x.")
}

// A compare.json of the format before each cell ran several times reads as a comparison
// of one run per cell, judged again.
func TestReadComparisonV1(t *testing.T) {
	v1 := `{"format":"fencecheck.compare/v1","started":"2026-12-02T01:00:00Z","seconds":1,"ttl_ns":2000000000,"faults":["pause"],
"machine":{"cpus":2,"os":"linux","arch":"amd64","go_version":"go1.26"},"skipped":[],"complete":true,
"services":[{"name":"a","service":"a","backend":"a","recommended":true,"setup":"","version":"","facts":{"token":"t","tokens_reset_on_crash":false,"token_from_clock":false,"client_clock_expiry":false,"durable_leases":false,"client_expiry":false},
"baseline":{"resource":"unfenced","scenario":"b","outcome":"safe","ttl_ns":2000000000,"grants":10,"acquire_p50_ns":3000000,"acquire_p99_ns":9000000,"grants_per_second":2},
"faults":[{"fault":"pause","meaning":"m","unfenced":{"resource":"unfenced","scenario":"u","outcome":"unsafe","ttl_ns":2000000000,"stale_attempted":1,"stale_accepted":1,"superseded":1,"never_noticed":1,"validity_gap_ns":2000000000,"takeover_ns":2100000000},
"fenced":{"resource":"fenced","scenario":"f","outcome":"safe","ttl_ns":2000000000,"stale_attempted":1,"stale_rejected":1,"superseded":1,"noticed":1,"notice_delay_ns":5000000,"validity_gap_ns":1000000000,"takeover_ns":2000000000},
"unfenced_verdict":"x","fenced_verdict":"y"}],
"verdict":"safe with fencing","safe":true,"validity_gap_ns":2000000000,"notice_delay_ns":0,"never_noticed":1,"takeover_ns":2100000000,"paragraph":"old"}]}`
	path := filepath.Join(t.TempDir(), CompareJSON)
	require.NoError(t, os.WriteFile(path, []byte(v1), 0o644))
	c, err := ReadComparison(path)
	require.NoError(t, err)
	require.Equal(t, judge.ComparisonFormat, c.Format)
	require.Equal(t, 1, c.Runs)
	require.False(t, c.BaselineAlone)
	s := c.Services[0]
	require.Len(t, s.Baseline, 1)
	require.Equal(t, "stale writes got through", s.Faults[0].UnfencedWord, "judged again")
	require.Equal(t, judge.Spread[int64]{Median: 1e9, Min: 1e9, Max: 2e9, N: 2}, s.Faults[0].Figures.ValidityGap)
	require.Contains(t, s.Paragraph, "beside other runs of the comparison")
	require.NotEqual(t, "old", s.Paragraph)
}
