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
		Started: time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC), TTLNanos: 2e9, Faults: []string{"pause"}, Machine: judge.Machine{CPUs: 2, OS: "linux", Arch: "amd64", GoVersion: "go1.26"},
		Services: []judge.ServiceRow{
			{Name: "a<b", Service: "a", Backend: "a", Facts: judge.Facts{Token: "t"}, Baseline: run(judge.OutcomeSafe, 0),
				Faults: []judge.CompareFault{{Fault: "pause", Unfenced: run(judge.OutcomeUnsafe, 1), Fenced: rejected(run(judge.OutcomeSafe, 0))}}},
		},
		Skipped: []judge.SkippedEntry{{Backend: "x", Reason: "needs Debian package x"}},
	}
	c.Judge()
	dir := t.TempDir()
	require.NoError(t, WriteComparison(dir, c))
	page, err := os.ReadFile(filepath.Join(dir, ComparePage))
	require.NoError(t, err)
	for _, w := range []string{`<svg id="compare-chart"`, `url(#never)`, `data-service="a&lt;b"`, "never", "needs Debian package x", `href="../../r/1/report.html"`, "is safe to adopt with a fenced resource"} {
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
	require.Contains(t, table, "| a | `a<b` | t | stale writes got through | held | 2.00 s | never | 2.00 s |")
	require.Contains(t, table, "Not compared here: x.")
}
