package judge

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/models"
)

// scoreRun is a fenced or unfenced run of a scorecard row.
func scoreRun(resource string, outcome RunOutcome, staleRejected, staleAccepted int, reason models.Reason, why string) ScoreRun {
	v := map[models.Property]models.Verdict{models.Register: models.Held, models.Updates: models.Held, models.Tokens: models.Held}
	switch outcome {
	case OutcomeUnsafe:
		v[models.Register], v[models.Updates] = models.Violated, models.Violated
	case OutcomeInconclusive:
		v[models.Register], v[models.Updates] = models.Inconclusive, models.Inconclusive
	}
	return ScoreRun{Resource: resource, Outcome: outcome, Verdicts: v, StaleRejected: staleRejected, StaleAccepted: staleAccepted, Reason: reason, Why: why}
}

// The scorecard is safe only on evidence: the fence rejected stale writes somewhere,
// and no fenced run tested nothing. Otherwise, with nothing unsafe, it is inconclusive
// and says why; its verdict never calls the backend safe.
func TestScorecardNeedsEvidence(t *testing.T) {
	noGrant := "no lock was granted: all 15 acquire(s) failed, the first with \"tls error: server refused TLS connection\""
	tested := ScoreRow{Fault: "pause", Runs: []ScoreRun{scoreRun("unfenced", OutcomeUnsafe, 0, 1, "", ""), scoreRun("fenced", OutcomeSafe, 1, 0, "", "")}}
	noStale := func(fault string) ScoreRow {
		return ScoreRow{Fault: fault, Runs: []ScoreRun{scoreRun("unfenced", OutcomeInconclusive, 0, 0, models.ReasonNoStaleWrite, "no stale write was attempted"),
			scoreRun("fenced", OutcomeInconclusive, 0, 0, models.ReasonNoStaleWrite, "no stale write was attempted")}}
	}
	untested := ScoreRow{Fault: "pause", Runs: []ScoreRun{scoreRun("unfenced", OutcomeInconclusive, 0, 0, models.ReasonNoGrant, noGrant),
		scoreRun("fenced", OutcomeInconclusive, 0, 0, models.ReasonNoGrant, noGrant)}}
	for _, tc := range []struct {
		name         string
		rows         []ScoreRow
		safe         bool
		inconclusive string
		verdict      []string
		not          []string
	}{
		{"tested", []ScoreRow{tested}, true, "",
			[]string{"is safe to adopt", "under every applicable fault (pause) the fence rejected every stale write (1 in all)"}, nil},
		{"tested under one fault, no stale write under another", []ScoreRow{tested, noStale("delay")}, true, "",
			[]string{"is safe to adopt", "under pause the fence rejected every stale write (1 in all)", "Under delay no stale write was attempted"},
			[]string{"every applicable fault"}},
		{"no stale write under any fault", []ScoreRow{noStale("pause"), noStale("delay")}, false,
			"no stale write was attempted against the fenced resource under any fault (pause and delay)",
			[]string{"NOT shown safe", "verdict is inconclusive"}, []string{"safe to adopt", "rejected every stale write"}},
		{"every acquire failed", []ScoreRow{untested}, false, "under pause the fenced run tested nothing (" + noGrant + ")",
			[]string{"NOT shown safe", "tested nothing", "server refused TLS connection"}, []string{"safe to adopt", "rejected every stale write (0 in all)"}},
		{"one fault tested, another tested nothing", []ScoreRow{tested, untested}, false, "under pause the fenced run tested nothing (" + noGrant + ")",
			[]string{"NOT shown safe"}, []string{"safe to adopt"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Scorecard{Backend: "lease-table", Token: "the row's version", Resources: []string{"unfenced", "fenced"}, Rows: tc.rows}
			s.Judge()
			require.Equal(t, tc.safe, s.Safe, s.Verdict)
			require.True(t, s.Complete)
			require.Equal(t, tc.inconclusive, s.Inconclusive)
			for _, w := range tc.verdict {
				require.Contains(t, s.Verdict, w)
			}
			for _, w := range tc.not {
				require.NotContains(t, s.Verdict, w)
			}
			for _, r := range s.Rows {
				if f, _ := r.Run("fenced"); f.Outcome == OutcomeInconclusive {
					require.Equal(t, Cell("not tested"), r.Fenced)
					require.Equal(t, f.Why, r.Why)
					require.Equal(t, !f.Reason.Untested(), r.Safe, "a row that tested nothing is not safe")
				}
			}
		})
	}
}

// A service of a comparison is safe with fencing only on evidence, like a scorecard.
func TestCompareNeedsEvidence(t *testing.T) {
	base := runs(cmpRun(OutcomeSafe, 0, 0, models.Held))
	tested := CompareFault{Fault: "pause", Unfenced: runs(cmpRun(OutcomeUnsafe, 0, 1, models.Held)), Fenced: runs(cmpRun(OutcomeSafe, 1, 0, models.Held))}
	inconclusive := func(resource string, reason models.Reason, why string) []CompareRun {
		r := cmpRun(OutcomeInconclusive, 0, 0, models.Held)
		r.Resource, r.Reason, r.Why = resource, reason, why
		return runs(r)
	}
	noStale := CompareFault{Fault: "pause", Unfenced: inconclusive("", models.ReasonNoStaleWrite, "no stale write was attempted"), Fenced: inconclusive("", models.ReasonNoStaleWrite, "no stale write was attempted")}
	neverStruck := CompareFault{Fault: "pause", Unfenced: inconclusive("unfenced", models.ReasonFaultNeverStruck, "the run asked for pause, but no fault struck"),
		Fenced: inconclusive("fenced", models.ReasonFaultNeverStruck, "the run asked for pause, but no fault struck")}
	for _, tc := range []struct {
		name    string
		fault   CompareFault
		verdict ServiceVerdict
		why     string
	}{
		{"tested", tested, VerdictSafe, ""},
		{"no stale write", noStale, VerdictInconclusive, "no stale write was attempted against the fenced resource under any fault (pause)"},
		{"the fault never struck", neverStruck, VerdictInconclusive, "under pause an unfenced run tested nothing (the run asked for pause, but no fault struck); under pause a fenced run tested nothing (the run asked for pause, but no fault struck)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Comparison{Services: []ServiceRow{{Name: "svc", Facts: Facts{Token: "t"}, Baseline: base, Faults: []CompareFault{tc.fault}}}}
			c.Judge()
			s := c.Services[0]
			require.Equal(t, tc.verdict, s.Verdict)
			require.Equal(t, tc.verdict == VerdictSafe, s.Safe)
			require.Equal(t, tc.why, s.Inconclusive)
			require.True(t, c.Complete)
			if tc.verdict == VerdictInconclusive {
				require.Equal(t, RunOutcome("inconclusive"), c.Outcome())
				require.Contains(t, s.Paragraph, "not shown safe")
				require.Contains(t, s.Paragraph, tc.why)
				require.NotContains(t, s.Paragraph, "safe to adopt")
			} else {
				require.Equal(t, RunOutcome("complete"), c.Outcome())
			}
		})
	}
}

// A soak counts the runs that tested nothing, with the first one's reason.
func TestSummariseUntested(t *testing.T) {
	inc := map[models.Property]models.Verdict{models.Register: models.Inconclusive}
	st := Summarise("s", nil, []SoakRun{
		{Seed: 1, Verdicts: inc, Reason: models.ReasonNoStaleWrite, Why: "no stale write was attempted"},
		{Seed: 2, Verdicts: inc, Reason: models.ReasonFaultNeverStruck, Why: "the run asked for pause, but no fault struck"},
		{Seed: 3, Verdicts: map[models.Property]models.Verdict{models.Register: models.Held}},
	})
	require.Equal(t, 1, st.Untested)
	require.Equal(t, "the run asked for pause, but no fault struck", st.UntestedWhy)
	require.InDelta(t, 2.0/3, st.InconclusiveRate, 1e-9)
	n, first := (&SoakResult{Scenarios: []SoakStats{st}}).Untested()
	require.Equal(t, 1, n)
	require.True(t, strings.HasPrefix(first, "s: the run asked for pause"))
}

// Why is the reason of the outcome: register's, else updates'; nothing when the outcome
// is not inconclusive.
func TestWhy(t *testing.T) {
	rep := &models.Report{Verdicts: map[models.Property]models.Verdict{models.Register: models.Held, models.Updates: models.Inconclusive},
		Results: []models.Result{{Property: models.Register, Verdict: models.Held}, {Property: models.Updates, Verdict: models.Inconclusive, Reason: models.ReasonNoAcceptedWrite, Why: "no write was accepted (0 attempted)"}}}
	reason, why := Why(rep)
	require.Equal(t, models.ReasonNoAcceptedWrite, reason)
	require.Equal(t, "no write was accepted (0 attempted)", why)
	rep.Verdicts[models.Register] = models.Violated
	reason, why = Why(rep)
	require.Empty(t, reason)
	require.Empty(t, why)
}
