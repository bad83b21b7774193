package reports

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/models/judge"
)

func TestComparisonPage(t *testing.T) {
	run := func(outcome string, never int) judge.CompareRun {
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
