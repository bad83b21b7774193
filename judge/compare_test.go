package judge

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/models"
)

// run is a decided run with the given outcome and figures.
func cmpRun(outcome RunOutcome, staleRejected, staleAccepted int, tokens models.Verdict) CompareRun {
	v := map[models.Property]models.Verdict{models.Register: models.Held, models.Updates: models.Held, models.Tokens: tokens}
	if outcome == OutcomeUnsafe {
		v[models.Register], v[models.Updates] = models.Violated, models.Violated
	}
	return CompareRun{
		Outcome: outcome, Verdicts: v, TTLNanos: 2e9, StaleAttempted: staleRejected + staleAccepted,
		StaleRejected: staleRejected, StaleAccepted: staleAccepted, ValidityGapNanos: 2.1e9, Superseded: 1, Noticed: 1,
		NoticeDelayNanos: 4e8, TakeoverNanos: 2.5e9, Grants: 10, AcquireP50Nanos: 3e6, AcquireP99Nanos: 9e6, GrantsPerSecond: 1.5,
		FaultNanos: 4e9,
	}
}

func runs(rs ...CompareRun) []CompareRun { return rs }

func TestSpreadOf(t *testing.T) {
	for _, tc := range []struct {
		name    string
		samples []int64
		want    Spread[int64]
		words   string
	}{
		{"none", nil, Spread[int64]{}, "—"},
		{"one", []int64{5e8}, Spread[int64]{Median: 5e8, Min: 5e8, Max: 5e8, N: 1}, "500 ms (n=1)"},
		{"two: the lower middle", []int64{3e9, 1e9}, Spread[int64]{Median: 1e9, Min: 1e9, Max: 3e9, N: 2}, "1.00 s (1.00 s–3.00 s, n=2)"},
		{"odd, unsorted", []int64{9, 1, 5, 3, 7}, Spread[int64]{Median: 5, Min: 1, Max: 9, N: 5}, "5 ns (1 ns–9 ns, n=5)"},
		{"even", []int64{4, 1, 3, 2}, Spread[int64]{Median: 2, Min: 1, Max: 4, N: 4}, "2 ns (1 ns–4 ns, n=4)"},
		{"all the same", []int64{7, 7, 7}, Spread[int64]{Median: 7, Min: 7, Max: 7, N: 3}, "7 ns (n=3)"},
		{"zeros count", []int64{0, 0, 2e6}, Spread[int64]{Median: 0, Min: 0, Max: 2e6, N: 3}, "0 ns (0 ns–2 ms, n=3)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]int64(nil), tc.samples...)
			got := SpreadOf(tc.samples)
			require.Equal(t, tc.want, got)
			require.Equal(t, in, tc.samples, "the samples are left as they were")
			require.Equal(t, tc.words, DurationWords(got))
		})
	}
	require.Equal(t, Spread[float64]{Median: 1.5, Min: 1, Max: 2, N: 3}, SpreadOf([]float64{2, 1, 1.5}))
	require.Equal(t, "1.5/s (1.0/s–2.0/s, n=3)", RateWords(SpreadOf([]float64{2, 1, 1.5})))
}

// The figures of a fault are over its decided runs, unfenced and fenced alike; each
// figure counts only the runs that give it.
func TestFiguresOf(t *testing.T) {
	r := func(gap, notice, takeover int64, never, estimated int, over int64) CompareRun {
		x := cmpRun(OutcomeUnsafe, 0, 1, models.Held)
		x.ValidityGapNanos, x.NoticeDelayNanos, x.TakeoverNanos, x.NeverNoticed, x.Estimated, x.OvershootNanos = gap, notice, takeover, never, estimated, over
		x.Noticed = 1 - never
		return x
	}
	fenced := cmpRun(OutcomeSafe, 1, 0, models.Held)
	fenced.ValidityGapNanos, fenced.TakeoverNanos, fenced.Superseded = 1e9, 1e9, 1
	notSuperseded := cmpRun(OutcomeSafe, 0, 0, models.Held)
	notSuperseded.Superseded, notSuperseded.Noticed = 0, 0
	for _, tc := range []struct {
		name             string
		unfenced, fenced []CompareRun
		check            func(t *testing.T, f Figures)
	}{
		{"the fenced twin counts", runs(r(3e9, 1e8, 2e9, 0, 0, 0)), runs(fenced), func(t *testing.T, f Figures) {
			require.Equal(t, 2, f.Runs)
			require.Equal(t, Spread[int64]{Median: 1e9, Min: 1e9, Max: 3e9, N: 2}, f.ValidityGap)
			require.Equal(t, Spread[int64]{Median: 1e9, Min: 1e9, Max: 2e9, N: 2}, f.Takeover)
			require.Equal(t, 1, f.UnfencedRuns)
			require.Equal(t, 1, f.Through)
			require.Equal(t, Stale{1, 0, 1}, f.StaleUnfenced)
			require.Equal(t, Stale{1, 1, 0}, f.StaleFenced)
			require.Equal(t, 0, f.Overshoot.N, "no run recorded an estimate")
		}},
		{"a run that never noticed gives no notice delay", runs(r(1, 2e8, 1, 0, 0, 0), r(1, 0, 1, 1, 0, 0), r(1, 4e8, 1, 0, 0, 0)), nil, func(t *testing.T, f Figures) {
			require.Equal(t, 3, f.Superseded)
			require.Equal(t, 1, f.NeverNoticed)
			require.Equal(t, Spread[int64]{Median: 2e8, Min: 2e8, Max: 4e8, N: 2}, f.NoticeDelay)
			require.Equal(t, "never in 1 of 3 runs; else 200 ms (200 ms–400 ms, n=2)", f.NoticeWords())
		}},
		{"only runs with an estimate give an overshoot", runs(r(1, 0, 1, 0, 1, 0), r(1, 0, 1, 0, 0, 0), r(1, 0, 1, 0, 2, 5e8)), nil, func(t *testing.T, f Figures) {
			require.Equal(t, Spread[int64]{Median: 0, Min: 0, Max: 5e8, N: 2}, f.Overshoot)
			require.Equal(t, "0 (before the takeover, n=3)", f.NoticeWords())
		}},
		{"undecided runs and runs without a supersession", runs(ErrorRun("unfenced", "x", "boom"), notSuperseded), runs(CompareRun{Outcome: OutcomeNotRun}), func(t *testing.T, f Figures) {
			require.Equal(t, 1, f.Runs)
			require.Equal(t, 0, f.Superseded)
			require.Equal(t, 1, f.ValidityGap.N)
			require.Equal(t, 0, f.Takeover.N)
			require.Equal(t, "—", f.NoticeWords())
			require.Equal(t, 0, f.Through)
		}},
		{"the gap beside the fault", runs(r(4e9, 0, 1, 0, 0, 0)), nil, func(t *testing.T, f Figures) {
			require.Equal(t, "4.00 s (n=1) of a 4.00 s (n=1) fault", f.GapWords())
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.check(t, figuresOf(tc.unfenced, tc.fenced)) })
	}
}

func TestRunsWord(t *testing.T) {
	require.Equal(t, "held", runsWord([]Cell{CellHeld, CellHeld}))
	require.Equal(t, "held in 2 of 3 runs, VIOLATED in 1 of 3 runs", runsWord([]Cell{CellHeld, CellViolated, CellHeld}))
	require.Equal(t, NotRunWord, runsWord(nil))
}

func TestParagraphFromFacts(t *testing.T) {
	pauseOK := CompareFault{Fault: "pause", Unfenced: runs(cmpRun(OutcomeUnsafe, 0, 1, models.Held)), Fenced: runs(cmpRun(OutcomeSafe, 1, 0, models.Held))}
	neverNoticed := pauseOK
	neverNoticed.Unfenced = runs(pauseOK.Unfenced[0])
	neverNoticed.Unfenced[0].NeverNoticed, neverNoticed.Unfenced[0].Noticed = 1, 0
	neverNoticed.Fenced = runs(neverNoticed.Unfenced[0])
	neverNoticed.Fenced[0].Outcome, neverNoticed.Fenced[0].StaleRejected = OutcomeSafe, 1
	noticedFirst := CompareFault{Fault: "pause", Unfenced: runs(cmpRun(OutcomeUnsafe, 0, 1, models.Held)), Fenced: runs(cmpRun(OutcomeSafe, 1, 0, models.Held))}
	noticedFirst.Unfenced[0].NoticeDelayNanos, noticedFirst.Fenced[0].NoticeDelayNanos = 0, 0
	fencedThrough := CompareFault{Fault: "pause", Unfenced: runs(cmpRun(OutcomeUnsafe, 0, 1, models.Held)), Fenced: runs(cmpRun(OutcomeUnsafe, 0, 1, models.Held))}
	backwards := CompareFault{Fault: "partition", Unfenced: runs(cmpRun(OutcomeUnsafe, 0, 1, models.Violated)), Fenced: runs(cmpRun(OutcomeSafe, 1, 0, models.Violated))}
	noToken := CompareFault{Fault: "pause", Unfenced: runs(cmpRun(OutcomeUnsafe, 0, 1, models.Held)), Fenced: runs(CompareRun{Outcome: OutcomeNotRun})}
	failed := CompareFault{Fault: "partition", Unfenced: runs(cmpRun(OutcomeUnsafe, 0, 1, models.Held)), Fenced: runs(ErrorRun("fenced", "x", "server died"))}
	// The careful-client claim needs every run's estimate to have run out before the
	// next grant; one run that overshot withdraws it.
	estimate := func(over ...int64) CompareFault {
		f := CompareFault{Fault: "partition"}
		for _, o := range over {
			u := cmpRun(OutcomeUnsafe, 0, 1, models.Held)
			u.Estimated, u.OvershootNanos = 1, o
			f.Unfenced = append(f.Unfenced, u)
			fe := cmpRun(OutcomeSafe, 1, 0, models.Held)
			fe.Estimated, fe.OvershootNanos = 1, o
			f.Fenced = append(f.Fenced, fe)
		}
		return f
	}
	mixed := CompareFault{Fault: "pause", Unfenced: runs(cmpRun(OutcomeUnsafe, 0, 1, models.Held), cmpRun(OutcomeSafe, 0, 0, models.Held)),
		Fenced: runs(cmpRun(OutcomeSafe, 1, 0, models.Held), cmpRun(OutcomeSafe, 0, 0, models.Held))}
	base := runs(cmpRun(OutcomeSafe, 0, 0, models.Held))
	for _, tc := range []struct {
		name    string
		facts   Facts
		faults  []CompareFault
		verdict ServiceVerdict
		want    []string
		not     []string
	}{
		{
			name: "safe, nothing breaks the token", facts: Facts{Token: "the key's revision", DurableLeases: true}, faults: []CompareFault{pauseOK},
			verdict: VerdictSafe,
			want: []string{"svc is safe to adopt with a fenced resource: send the key's revision with every write", "refused every stale write (1 in all)",
				"declares nothing that resets the token", "a restarted server keeps its leases", "a stale write got through in every run (1 of 1)",
				"held the lock 2.10 s (n=2) after another client got it, in faults that lasted 4.00 s (n=2)",
				"learned it had lost the lock 400 ms (n=2)", "waited 2.50 s (n=2)", "3 ms (n=1) at the median and 9 ms (n=1) at p99", "at 1.5/s (n=1)",
				"compare crashes no server and moves no clock; `fencecheck evaluate --backend be` runs"},
			not: []string{"clock reading", "through PgBouncer", "careful client", "nothing known"},
		},
		{
			name: "tokens reset on crash", facts: Facts{Token: "an in-memory counter", TokensResetOnCrash: true}, faults: []CompareFault{pauseOK},
			verdict: VerdictSafe, want: []string{"its token counter is lost when the server crashes", "compare crashes no server and moves no clock"},
			not: []string{"nothing known"},
		},
		{
			name: "a clock and a pool and the client's clock", facts: Facts{Token: "t", TokenFromClock: true, Pool: "PgBouncer", ClientClockExpiry: true, ClientExpiry: true}, faults: []CompareFault{pauseOK},
			verdict: VerdictSafe, want: []string{"its token is a clock reading", "through PgBouncer", "each client's own clock decides", "no superseded holder recorded its validity estimate"},
			not: []string{"stops in time"},
		},
		{
			name: "every estimate ran out in time", facts: Facts{Token: "t", ClientExpiry: true}, faults: []CompareFault{estimate(0, 0)},
			verdict: VerdictSafe, want: []string{"in every run (4) the holder's own validity estimate had run out before the next grant, so a careful client that checks it right before writing stops in time"},
		},
		{
			name: "one estimate overshot", facts: Facts{Token: "t", ClientExpiry: true}, faults: []CompareFault{estimate(0, 3e8)},
			verdict: VerdictSafe, want: []string{"still said it held the lock 0 ns (0 ns–300 ms, n=4) after the next grant (overshoot), so a careful client that checks it before writing would still write late"},
			not: []string{"stops in time"},
		},
		{
			name: "no token", facts: Facts{Token: "no token", NoToken: "the lock's random value is no fencing token"}, faults: []CompareFault{noToken},
			verdict: VerdictNoToken, want: []string{"svc hands out no fencing token (the lock's random value is no fencing token)", "only the lock's own mutual exclusion stands between two writers", "Under pause without fencing a stale write got through in every run", "no resource can tell", "compare crashes no server"},
			not: []string{"What breaks it", "safe to adopt"},
		},
		{
			name: "no token, in the reason's own words", facts: Facts{Token: "no token", NoToken: "no fencing token: cannot be made safe by fencing (a random value)"}, faults: []CompareFault{noToken},
			verdict: VerdictNoToken, want: []string{"svc: no fencing token: cannot be made safe by fencing (a random value): a resource has nothing"},
			not: []string{"hands out no fencing token (no fencing token"},
		},
		{
			name: "noticed before the takeover", facts: Facts{Token: "t"}, faults: []CompareFault{noticedFirst},
			verdict: VerdictSafe, want: []string{"in every run (2) its client signalled the loss before the other client was granted the lock"},
			not: []string{"learned it had lost"},
		},
		{
			name: "never noticed", facts: Facts{Token: "t"}, faults: []CompareFault{neverNoticed},
			verdict: VerdictSafe, want: []string{"in every run (2) a superseded holder never noticed the loss", "cannot rely on the lock's loss signal"},
			not: []string{"learned it had lost"},
		},
		{
			name: "runs that differ", facts: Facts{Token: "t"}, faults: []CompareFault{mixed},
			verdict: VerdictSafe, want: []string{"a stale write got through in 1 of 2 runs"},
			not: []string{"in every run (1 of"},
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
			c := Comparison{TTLNanos: 2e9, Runs: 1, BaselineAlone: true, Services: []ServiceRow{{Name: "svc", Backend: "be", Facts: tc.facts, Baseline: base, Faults: tc.faults}}}
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
	ok := ServiceRow{Name: "a", Facts: Facts{Token: "t"}, Baseline: runs(cmpRun(OutcomeSafe, 0, 0, models.Held)),
		Faults: []CompareFault{{Fault: "pause", Unfenced: runs(cmpRun(OutcomeUnsafe, 0, 1, models.Held)), Fenced: runs(cmpRun(OutcomeSafe, 1, 0, models.Held))}}}
	noTok := ok
	noTok.Name, noTok.Facts = "b", Facts{Token: "none", NoToken: "none"}
	noTok.Faults = []CompareFault{{Fault: "pause", Unfenced: runs(cmpRun(OutcomeUnsafe, 0, 1, models.Held)), Fenced: runs(CompareRun{Outcome: OutcomeNotRun})}}
	c := Comparison{Services: []ServiceRow{ok, noTok}}
	c.Judge()
	require.True(t, c.Complete)
	require.Equal(t, RunOutcome("complete"), c.Outcome(), "a service without a token is a finding, not a failure")
	require.NotNil(t, c.Skipped)
	bad := ok
	bad.Name = "c"
	bad.Faults = []CompareFault{{Fault: "pause", Unfenced: runs(cmpRun(OutcomeUnsafe, 0, 1, models.Held)), Fenced: runs(cmpRun(OutcomeSafe, 1, 0, models.Held), cmpRun(OutcomeUnsafe, 0, 1, models.Held))}}
	c = Comparison{Services: []ServiceRow{ok, bad}}
	c.Judge()
	require.Equal(t, RunOutcome("unsafe"), c.Outcome(), "one unsafe fenced run of several makes the row unsafe")
	require.Equal(t, "held in 1 of 2 runs, VIOLATED in 1 of 2 runs", c.Services[1].Faults[0].FencedWord)
	require.Contains(t, c.SummaryLine(), "safe with fencing: a")
}

func TestWorstNamesItsFault(t *testing.T) {
	slow := cmpRun(OutcomeUnsafe, 0, 1, models.Held)
	slow.TakeoverNanos = 3e9
	never := cmpRun(OutcomeUnsafe, 0, 1, models.Held)
	never.NeverNoticed, never.Noticed = 1, 0
	s := ServiceRow{Name: "a", Facts: Facts{Token: "t"}, Baseline: runs(cmpRun(OutcomeSafe, 0, 0, models.Held)), Faults: []CompareFault{
		{Fault: "pause", Unfenced: runs(never), Fenced: runs(cmpRun(OutcomeSafe, 1, 0, models.Held))},
		{Fault: "partition", Unfenced: runs(slow), Fenced: runs(slow)},
	}}
	c := Comparison{Services: []ServiceRow{s}}
	c.Judge()
	got := c.Services[0]
	require.Equal(t, "partition", got.Takeover.Fault)
	require.Equal(t, int64(3e9), got.Takeover.Median)
	require.Equal(t, []string{"pause"}, got.NeverFaults)
	require.Equal(t, "never in 1 run(s) under pause", got.NoticeWords())
	require.Equal(t, "400 ms (n=1) under pause", noticeSpread(got.NoticeDelay.Spread)+" under "+got.NoticeDelay.Fault)
}

func TestScrub(t *testing.T) {
	for in, want := range map[string]string{
		"":                                 "",
		"client exited (pid 4242): boom":   "client exited (a process): boom",
		"process 77 was killed":            "the process was killed",
		"read /tmp/fencecheck-123/x.sock:": "read x.sock:",
		`open "/home/u/.cache/k": denied`:  `open "k": denied`,
		"see docs/checker.md, not /":       "see docs/checker.md, not /",
		"rapid pidgin":                     "rapid pidgin",
	} {
		require.Equal(t, want, Scrub(in), in)
	}
}

// A paragraph names what a team must set for the result to hold (the descriptor's
// declared configuration), the session settings the server reported and a granted TTL
// that differs from the asked one; every paragraph says what compare does not test, and
// none names a process or a path.
func TestParagraphNamesConfiguration(t *testing.T) {
	pause := CompareFault{Fault: "pause", Unfenced: runs(cmpRun(OutcomeUnsafe, 0, 1, models.Held)), Fenced: runs(cmpRun(OutcomeSafe, 1, 0, models.Held))}
	for _, tc := range []struct {
		name     string
		row      ServiceRow
		want     []string
		not      []string
		verdict  ServiceVerdict
		notToken bool
	}{
		{
			name: "declared configuration",
			row:  ServiceRow{Facts: Facts{Token: "t", Configuration: "appendfsync always on the Redis server."}},
			want: []string{"For this result to hold in production, set what the runs relied on: appendfsync always on the Redis server."},
			not:  []string{"The server ran with", "granted leases of up to"},
		},
		{
			name: "session timeouts as reported",
			row:  ServiceRow{Facts: Facts{Token: "t", Configuration: "wait_timeout about the TTL"}, SessionTimeouts: map[string]string{"wait_timeout": "2", "net_read_timeout": "30"}},
			want: []string{"set what the runs relied on: wait_timeout about the TTL.", "The server ran with net_read_timeout=30, wait_timeout=2, as it reported them"},
		},
		{
			name: "a granted TTL longer than asked",
			row:  ServiceRow{Facts: Facts{Token: "t"}, GrantedTTLNanos: 4e9},
			want: []string{"The service granted leases of up to 4.00 s for the 2.00 s asked"},
			not:  []string{"For this result to hold"},
		},
		{
			name: "granted as asked, nothing declared",
			row:  ServiceRow{Facts: Facts{Token: "t"}, GrantedTTLNanos: 2e9},
			not:  []string{"For this result to hold", "granted leases of up to", "The server ran with"},
		},
		{
			name: "no process id or path in it",
			row:  ServiceRow{Facts: Facts{Token: "t", Configuration: "idle_session_timeout (see /etc/postgresql/15/main/postgresql.conf, pid 4711)"}},
			want: []string{"idle_session_timeout (see postgresql.conf, a process)."},
			not:  []string{"/etc/", "4711"},
		},
		{
			name:    "no token",
			row:     ServiceRow{Facts: Facts{Token: "none", NoToken: "a random value", Configuration: "appendfsync always"}},
			verdict: VerdictNoToken, notToken: true,
			want: []string{"set what the runs relied on: appendfsync always."},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			row := tc.row
			row.Name, row.Backend, row.Baseline = "svc", "be", runs(cmpRun(OutcomeSafe, 0, 0, models.Held))
			f := pause
			if tc.notToken {
				f.Fenced = runs(CompareRun{Outcome: OutcomeNotRun})
			}
			row.Faults = []CompareFault{f}
			c := Comparison{TTLNanos: 2e9, Runs: 1, BaselineAlone: true, Services: []ServiceRow{row}}
			c.Judge()
			s := c.Services[0]
			want := tc.verdict
			if want == VerdictNone {
				want = VerdictSafe
			}
			require.Equal(t, want, s.Verdict)
			for _, w := range tc.want {
				require.Contains(t, s.Paragraph, w)
			}
			for _, w := range tc.not {
				require.NotContains(t, s.Paragraph, w)
			}
			require.True(t, strings.HasSuffix(s.Paragraph, NotTested("be")), "it ends saying what compare does not test: %s", s.Paragraph)
			require.Contains(t, s.Paragraph, "`fencecheck evaluate --backend be`")
		})
	}
}

func TestServiceVerdictJSON(t *testing.T) {
	for _, tc := range []struct {
		v    ServiceVerdict
		json string
	}{
		{VerdictNone, `""`},
		{VerdictSafe, `"safe with fencing"`},
		{VerdictUnsafe, `"UNSAFE with fencing"`},
		{VerdictNoToken, `"no fencing token"`},
		{VerdictIncomplete, `"incomplete"`},
		{VerdictInconclusive, `"inconclusive"`},
	} {
		b, err := json.Marshal(tc.v)
		require.NoError(t, err)
		require.Equal(t, tc.json, string(b))
		var back ServiceVerdict
		require.NoError(t, json.Unmarshal(b, &back))
		require.Equal(t, tc.v, back)
	}
	var v ServiceVerdict
	require.ErrorContains(t, json.Unmarshal([]byte(`"safe"`), &v), `unknown service verdict "safe"`)
}
