package judge

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/models"
)

// run is a decided run with the given outcome and figures.
func cmpRun(outcome string, staleRejected, staleAccepted int, tokens models.Verdict) CompareRun {
	v := map[models.Property]models.Verdict{models.Register: models.Held, models.Updates: models.Held, models.Tokens: tokens}
	if outcome == OutcomeUnsafe {
		v[models.Register], v[models.Updates] = models.Violated, models.Violated
	}
	return CompareRun{
		Outcome: outcome, Verdicts: v, TTLNanos: 2e9, StaleAttempted: staleRejected + staleAccepted,
		StaleRejected: staleRejected, StaleAccepted: staleAccepted, ValidityGapNanos: 2.1e9, Superseded: 1, Noticed: 1,
		NoticeDelayNanos: 4e8, TakeoverNanos: 2.5e9, Grants: 10, AcquireP50Nanos: 3e6, AcquireP99Nanos: 9e6, GrantsPerSecond: 1.5,
	}
}

func TestParagraphFromFacts(t *testing.T) {
	pauseOK := CompareFault{Fault: "pause", Unfenced: cmpRun(OutcomeUnsafe, 0, 1, models.Held), Fenced: cmpRun(OutcomeSafe, 1, 0, models.Held)}
	neverNoticed := pauseOK
	neverNoticed.Unfenced.NeverNoticed, neverNoticed.Unfenced.Noticed = 1, 0
	noticedFirst := pauseOK
	noticedFirst.Unfenced.NoticeDelayNanos = 0
	fencedThrough := CompareFault{Fault: "pause", Unfenced: cmpRun(OutcomeUnsafe, 0, 1, models.Held), Fenced: cmpRun(OutcomeUnsafe, 0, 1, models.Held)}
	backwards := CompareFault{Fault: "partition", Unfenced: cmpRun(OutcomeUnsafe, 0, 1, models.Violated), Fenced: cmpRun(OutcomeSafe, 1, 0, models.Violated)}
	noToken := CompareFault{Fault: "pause", Unfenced: cmpRun(OutcomeUnsafe, 0, 1, models.Held), Fenced: CompareRun{Outcome: NotRunWord}}
	failed := CompareFault{Fault: "partition", Unfenced: cmpRun(OutcomeUnsafe, 0, 1, models.Held), Fenced: ErrorRun("fenced", "x", "server died")}
	base := cmpRun(OutcomeSafe, 0, 0, models.Held)
	for _, tc := range []struct {
		name    string
		facts   Facts
		faults  []CompareFault
		verdict string
		want    []string
		not     []string
	}{
		{
			name: "safe, nothing breaks the token", facts: Facts{Token: "the key's revision", DurableLeases: true}, faults: []CompareFault{pauseOK},
			verdict: VerdictSafe,
			want: []string{"svc is safe to adopt with a fenced resource: send the key's revision with every write", "refused every stale write (1 in all)",
				"What breaks it: nothing known", "a restarted server keeps its leases", "up to 2.10 s after another client got it at a TTL of 2.00 s",
				"learned it had lost the lock up to 400 ms", "wait up to 2.50 s", "3 ms at the median and 9 ms at p99", "1.5 locks/s"},
			not: []string{"clock reading", "through PgBouncer", "careful client"},
		},
		{
			name: "tokens reset on crash", facts: Facts{Token: "an in-memory counter", TokensResetOnCrash: true}, faults: []CompareFault{pauseOK},
			verdict: VerdictSafe, want: []string{"its token counter is lost when the server crashes", "do not crash servers or move clocks"},
			not: []string{"nothing known"},
		},
		{
			name: "a clock and a pool and the client's clock", facts: Facts{Token: "t", TokenFromClock: true, Pool: "PgBouncer", ClientClockExpiry: true, ClientExpiry: true}, faults: []CompareFault{pauseOK},
			verdict: VerdictSafe, want: []string{"its token is a clock reading", "through PgBouncer", "each client's own clock decides", "a careful client can stop before writing late"},
		},
		{
			name: "no token", facts: Facts{Token: "no token", NoToken: "the lock's random value is no fencing token"}, faults: []CompareFault{noToken},
			verdict: VerdictNoToken, want: []string{"svc hands out no fencing token (the lock's random value is no fencing token)", "only the lock's own mutual exclusion stands between two writers", "stale writes got through under pause", "no resource can tell"},
			not: []string{"What breaks it", "safe to adopt"},
		},
		{
			name: "no token, in the reason's own words", facts: Facts{Token: "no token", NoToken: "no fencing token: cannot be made safe by fencing (a random value)"}, faults: []CompareFault{noToken},
			verdict: VerdictNoToken, want: []string{"svc: no fencing token: cannot be made safe by fencing (a random value): a resource has nothing"},
			not: []string{"hands out no fencing token (no fencing token"},
		},
		{
			name: "noticed before the takeover", facts: Facts{Token: "t"}, faults: []CompareFault{noticedFirst},
			verdict: VerdictSafe, want: []string{"signalled the loss before the other client was granted the lock"},
			not: []string{"up to 0 ns"},
		},
		{
			name: "never noticed", facts: Facts{Token: "t"}, faults: []CompareFault{neverNoticed},
			verdict: VerdictSafe, want: []string{"1 holder(s) never noticed the loss", "cannot rely on the lock's loss signal"},
			not: []string{"learned it had lost"},
		},
		{
			name: "fence let a write through", facts: Facts{Token: "t"}, faults: []CompareFault{fencedThrough},
			verdict: VerdictUnsafe, want: []string{"svc is NOT safe even with a fenced resource: under pause a stale write got through the fence"},
		},
		{
			name: "tokens went backwards", facts: Facts{Token: "the counter"}, faults: []CompareFault{pauseOK, backwards},
			verdict: VerdictUnsafe, want: []string{"under partition its tokens (the counter) went backwards or repeated"},
		},
		{
			name: "a run failed", facts: Facts{Token: "t"}, faults: []CompareFault{pauseOK, failed},
			verdict: VerdictIncomplete, want: []string{"svc is not shown safe: under partition a run failed or was not decided"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Comparison{TTLNanos: 2e9, Services: []ServiceRow{{Name: "svc", Facts: tc.facts, Baseline: base, Faults: tc.faults}}}
			c.Judge()
			s := c.Services[0]
			require.Equal(t, tc.verdict, s.Verdict)
			require.Equal(t, tc.verdict == VerdictSafe, s.Safe)
			for _, w := range tc.want {
				require.Contains(t, s.Paragraph, w)
			}
			for _, w := range tc.not {
				require.NotContains(t, s.Paragraph, w)
			}
			require.False(t, strings.Contains(s.Paragraph, "%!"), s.Paragraph)
		})
	}
}

func TestComparisonOutcome(t *testing.T) {
	ok := ServiceRow{Name: "a", Facts: Facts{Token: "t"}, Baseline: cmpRun(OutcomeSafe, 0, 0, models.Held),
		Faults: []CompareFault{{Fault: "pause", Unfenced: cmpRun(OutcomeUnsafe, 0, 1, models.Held), Fenced: cmpRun(OutcomeSafe, 1, 0, models.Held)}}}
	noTok := ok
	noTok.Name, noTok.Facts = "b", Facts{Token: "none", NoToken: "none"}
	noTok.Faults = []CompareFault{{Fault: "pause", Unfenced: cmpRun(OutcomeUnsafe, 0, 1, models.Held), Fenced: CompareRun{Outcome: NotRunWord}}}
	c := Comparison{Services: []ServiceRow{ok, noTok}}
	c.Judge()
	require.True(t, c.Complete)
	require.Equal(t, "complete", c.Outcome(), "a service without a token is a finding, not a failure")
	require.NotNil(t, c.Skipped)
	bad := ok
	bad.Name = "c"
	bad.Faults = []CompareFault{{Fault: "pause", Unfenced: cmpRun(OutcomeUnsafe, 0, 1, models.Held), Fenced: cmpRun(OutcomeUnsafe, 0, 1, models.Held)}}
	c = Comparison{Services: []ServiceRow{ok, bad}}
	c.Judge()
	require.Equal(t, "unsafe", c.Outcome())
	require.Contains(t, c.SummaryLine(), "safe with fencing: a")
}

func TestNoticeWords(t *testing.T) {
	require.Equal(t, "—", CompareRun{}.NoticeWords())
	require.Equal(t, "never", CompareRun{Superseded: 1, NeverNoticed: 1}.NoticeWords())
	require.Equal(t, "400 ms", CompareRun{Superseded: 1, Noticed: 1, NoticeDelayNanos: 4e8}.NoticeWords())
}
