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

func vs(register, updates, tokens models.Verdict) map[models.Property]models.Verdict {
	return map[models.Property]models.Verdict{models.Register: register, models.Updates: updates, models.Tokens: tokens, models.Mutex: models.Violated}
}

func unfencedRun() ScoreRun {
	return ScoreRun{Resource: "unfenced", Outcome: OutcomeUnsafe, Verdicts: vs(models.Violated, models.Violated, models.Held), StaleAccepted: 1, GapSamples: []int64{400e6, 600e6}}
}

func fencedRun() ScoreRun {
	return ScoreRun{Resource: "fenced", Outcome: OutcomeSafe, Verdicts: vs(models.Held, models.Held, models.Held), StaleRejected: 1, WritesRefused: 1, LongestNoAcceptedWriteNanos: 1.4e9, GapSamples: []int64{500e6}}
}

func TestScorecardSafe(t *testing.T) {
	native := ScoreRun{Resource: "etcd-txn", Outcome: OutcomeSafe, Verdicts: vs(models.Held, models.Held, models.Held), StaleRejected: 1}
	sc := &Scorecard{Backend: "etcd", Token: "the lock key's CreateRevision", TTLNanos: 1e9, Native: []string{"etcd-txn"},
		Rows: []ScoreRow{{Fault: "pause", Runs: []ScoreRun{unfencedRun(), fencedRun(), native}}, {Fault: "delay", Runs: []ScoreRun{unfencedRun(), fencedRun(), native}}}}
	sc.Judge()
	require.True(t, sc.Safe)
	require.True(t, sc.Complete)
	require.Contains(t, sc.Verdict, "etcd is safe to adopt with a fenced resource that uses the lock key's CreateRevision as its fencing token")
	require.Contains(t, sc.Verdict, "under every applicable fault (pause and delay) the fence rejected every stale write (2 in all)")
	require.Contains(t, sc.Verdict, "It is unsafe as a bare lock: without fencing, stale writes got through under pause and delay; a client went on believing it held the lock for up to 600 ms after another client got it (TTL 1.00 s)")
	require.Contains(t, sc.Verdict, "The backend-native etcd-txn resource held under every fault as well.")
	require.Equal(t, int64(500e6), sc.GapP50)
	require.Equal(t, int64(600e6), sc.GapMax)
	r := sc.Rows[0]
	require.Equal(t, judge.Cell("stale writes got through"), r.Unfenced)
	require.Equal(t, judge.Cell("held"), r.Fenced)
	require.Equal(t, judge.Cell("held"), r.Native)
	require.Equal(t, judge.Cell("monotonic"), r.Tokens)
	require.True(t, r.Safe)

	var b strings.Builder
	PrintScorecard(&b, sc)
	require.Contains(t, b.String(), "verdict: SAFE with fencing")
	require.Contains(t, b.String(), "STALE WRITES GOT THROUGH (1)")
}

func TestScorecardUnsafe(t *testing.T) {
	badTokens := fencedRun()
	badTokens.Verdicts = vs(models.Held, models.Held, models.Violated)
	through := fencedRun()
	through.Outcome, through.StaleAccepted, through.Verdicts = OutcomeUnsafe, 1, vs(models.Violated, models.Violated, models.Held)
	failed := ScoreRun{Resource: "fenced", Outcome: "error", Error: "etcd did not start"}
	sc := &Scorecard{Backend: "naive", Token: "the lock server's in-memory counter",
		Rows: []ScoreRow{
			{Fault: "crash", Runs: []ScoreRun{unfencedRun(), badTokens}},
			{Fault: "pause", Runs: []ScoreRun{unfencedRun(), through}},
			{Fault: "delay", Runs: []ScoreRun{unfencedRun(), failed}},
		}}
	sc.Judge()
	require.False(t, sc.Safe)
	require.False(t, sc.Complete)
	require.Contains(t, sc.Verdict, "naive is NOT shown safe, even with a fenced resource")
	require.Contains(t, sc.Verdict, "under pause a stale write got through the fence")
	require.Contains(t, sc.Verdict, "under crash its tokens went backwards or were reused")
	require.Contains(t, sc.Verdict, "under delay the evaluation did not finish")
	require.Equal(t, judge.Cell("WENT BACKWARDS"), sc.Rows[0].Tokens)
	require.Equal(t, judge.Cell("VIOLATED"), sc.Rows[1].Fenced)
	require.Equal(t, judge.Cell("error"), sc.Rows[2].Fenced)
}

// A native store that refuses a write the register model accepts let nothing stale
// through: the scorecard says so rather than "violated".
func TestScorecardNativeRefusesValidWrite(t *testing.T) {
	native := ScoreRun{Resource: "etcd-txn", Outcome: OutcomeUnsafe, Verdicts: vs(models.Violated, models.Inconclusive, models.Held), WritesRefused: 1}
	sc := &Scorecard{Backend: "etcd", Token: "t", Native: []string{"etcd-txn"}, Rows: []ScoreRow{{Fault: "leader-isolation", Runs: []ScoreRun{unfencedRun(), fencedRun(), native}}}}
	sc.Judge()
	require.True(t, sc.Safe)
	require.Equal(t, judge.CellRefusedValid, sc.Rows[0].Native)
	require.Contains(t, sc.Verdict, "let no stale write through, but under leader-isolation it refused a write")
	require.Equal(t, "refused a valid write (register violated)", scorecardView{}.RunWord(native))
}

func TestPercentile(t *testing.T) {
	s := []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	require.Equal(t, int64(5), judge.Percentile(s, 50))
	require.Equal(t, int64(9), judge.Percentile(s, 90))
	require.Equal(t, int64(10), judge.Percentile(s, 100))
	require.Equal(t, int64(1), judge.Percentile(s, 0))
	require.Zero(t, judge.Percentile(nil, 50))
}

func TestWrap(t *testing.T) {
	got := wrap("one two three four five six", 12, "  - ", "    ")
	require.Equal(t, "  - one two\n    three\n    four\n    five six", got)
}

func TestMatrixCounts(t *testing.T) {
	m := &Matrix{Seconds: 65, Cells: []MatrixCell{
		{Outcome: OutcomeUnsafe, Match: true},
		{Outcome: OutcomeSafe, Match: false, Diffs: []string{"register: got violated, want held"}},
		{Outcome: "error", Error: "boom"},
		{Outcome: "n/a", Error: "needs etcd"},
	}}
	require.Equal(t, 1, m.Mismatches())
	require.Equal(t, 1, m.Errors())
	require.Equal(t, "2 cells ran in 1m5s: 1 as expected, 1 differ, 1 failed to run; 1 combinations do not apply", m.SummaryLine())
}

func TestStoreLayout(t *testing.T) {
	root := t.TempDir()
	now := time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.UTC)
	a, err := NewRunDir(root, "s", now)
	require.NoError(t, err)
	b, err := NewRunDir(root, "s", now)
	require.NoError(t, err)
	require.Equal(t, "20260102-030405.006", filepath.Base(a))
	require.Equal(t, "20260102-030405.006-2", filepath.Base(b))
	require.NoError(t, MarkLatest(a))
	require.NoError(t, MarkLatest(b))
	target, err := os.Readlink(filepath.Join(root, "s", LatestLink))
	require.NoError(t, err)
	require.Equal(t, filepath.Base(b), target)
	_, err = NewRunDir(root, "../escape", now)
	require.Error(t, err)

	require.NoError(t, os.WriteFile(filepath.Join(b, HistoryFile), []byte("{}"), 0o644))
	es, err := ScanStore(root)
	require.NoError(t, err)
	require.Len(t, es, 1)
	require.Equal(t, "run", es[0].Kind)
	require.Equal(t, 2, es[0].Runs)
	require.Equal(t, "s/"+filepath.Base(b)+"/report.html", es[0].Page)
	require.Equal(t, judge.RunOutcome("unknown"), es[0].Outcome)
}

// A backend without a fencing token has only unfenced runs, whose tokens are violated by
// declaration: the scorecard says there are none, and nothing to fence with.
func TestScorecardNoToken(t *testing.T) {
	run := unfencedRun()
	run.Verdicts = vs(models.Violated, models.Violated, models.Violated)
	sc := &Scorecard{Backend: "redlock", Token: "no token", NoToken: "no fencing token: cannot be made safe by fencing",
		Rows: []ScoreRow{{Fault: "pause", Runs: []ScoreRun{run}}}}
	sc.Judge()
	require.False(t, sc.Safe)
	require.Equal(t, judge.Cell("none"), sc.Rows[0].Tokens)
	require.NotContains(t, sc.Verdict, "went backwards")
	var b strings.Builder
	PrintScorecard(&b, sc)
	require.Contains(t, b.String(), "nothing to fence with")
	dir := t.TempDir()
	require.NoError(t, WriteScorecard(dir, sc))
	page, err := os.ReadFile(filepath.Join(dir, ScorecardPage))
	require.NoError(t, err)
	require.Contains(t, string(page), "nothing to fence with")
}
