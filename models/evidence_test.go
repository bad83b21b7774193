package models

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/harness/history"
)

// A verdict needs evidence: a history that tested nothing is inconclusive with the
// reason, whether it is checked in memory or as a stream, and a fault-free baseline
// with grants and accepted writes is held.
func TestEvidenceGaps(t *testing.T) {
	baseline := func() *builder {
		b := newHistory(strict)
		b.acquire(0, 0, 5, ok, 1)
		b.write(0, 10, 20, ok, 1, "c0-1")
		b.release(0, 21, 22, ok, 1)
		b.acquire(1, 23, 25, ok, 2)
		b.write(1, 30, 40, ok, 2, "c1-1")
		b.read(2, 50, 60, 2, "c1-1")
		return b
	}
	all := func(v Verdict, r Reason) map[Property]want {
		return map[Property]want{Register: {v, r}, Updates: {v, r}, Tokens: {v, r}, Mutex: {v, r}}
	}
	cases := []struct {
		name  string
		build func() *history.History
		want  map[Property]want
		why   string // in register's Why
	}{
		{"no ops", func() *history.History { return newHistory(strict).h }, all(Inconclusive, ReasonNoOps), "the history has no operations"},
		{"every acquire failed", func() *history.History {
			b := newHistory(strict)
			b.add(history.Op{Client: 1, Kind: history.Acquire, Call: 7, Status: failed, Error: "second"}, 9)
			b.add(history.Op{Client: 0, Kind: history.Acquire, Call: 3, Status: failed, Error: "dial: \x1b]0;pwned\x07 tls error: server refused TLS connection"}, 8)
			b.add(history.Op{Client: 2, Kind: history.Acquire, Call: 1, Status: unknown}, never) // no text: not the first quoted
			b.read(0, 10, 11, 0, "")
			return b.h
		}, all(Inconclusive, ReasonNoGrant), `no lock was granted: all 3 acquire(s) failed, the first with "dial: \x1b]0;pwned\a tls error: server refused TLS connection"`},
		{"the fault asked for never struck", func() *history.History {
			b := baseline()
			b.h.Run.Faults = []string{"pause"}
			return b.h
		}, map[Property]want{Register: {Inconclusive, ReasonFaultNeverStruck}, Updates: {Inconclusive, ReasonFaultNeverStruck}, Tokens: {Held, ""}, Mutex: {Held, ""}},
			"the run asked for pause, but no fault struck"},
		{"only a fault the run did not ask for was recorded", func() *history.History {
			b := baseline()
			b.h.Run.Faults = []string{"pause"}
			b.h.Faults = []history.Fault{{Kind: "paus", Target: "client-0", Start: 12}}
			return b.h
		}, map[Property]want{Register: {Inconclusive, ReasonFaultNeverStruck}, Updates: {Inconclusive, ReasonFaultNeverStruck}},
			"the run asked for pause, but the faults recorded (paus) are none of them"},
		{"a random schedule that never struck", func() *history.History {
			b := baseline()
			b.h.Run.RandomFaults = []string{"pause", "crash"}
			return b.h
		}, map[Property]want{Register: {Inconclusive, ReasonFaultNeverStruck}}, "the run asked for pause, crash, but no fault struck"},
		{"no write accepted", func() *history.History {
			b := newHistory(strict)
			b.acquire(0, 0, 5, ok, 1)
			b.write(0, 10, 20, failed, 1, "c0-1")
			b.release(0, 21, 22, ok, 1)
			b.acquire(1, 23, 25, ok, 2)
			return b.h
		}, map[Property]want{Register: {Inconclusive, ReasonNoAcceptedWrite}, Updates: {Inconclusive, ReasonNoAcceptedWrite}, Tokens: {Held, ""}, Mutex: {Held, ""}},
			"no write was accepted (1 attempted)"},
		{"a fault struck, no stale write", func() *history.History {
			b := baseline()
			end := int64(45)
			b.h.Run.Faults = []string{"pause"}
			b.h.Faults = []history.Fault{{Kind: "pause", Target: "client-0", Start: 26, End: &end}}
			return b.h
		}, map[Property]want{Register: {Inconclusive, ReasonNoStaleWrite}, Updates: {Inconclusive, ReasonNoStaleWrite}, Tokens: {Held, ""}, Mutex: {Held, ""}},
			"no stale write was attempted"},
		{"a fault-free baseline", func() *history.History { return baseline().h }, all(Held, ""), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.build()
			require.NoError(t, h.Validate())
			mem, err := Check(context.Background(), h, Options{PorcupineBudget: NoPorcupine})
			require.NoError(t, err)
			path := filepath.Join(t.TempDir(), "history.json")
			require.NoError(t, history.WriteFile(path, h))
			streamed, err := CheckFile(context.Background(), path, Options{StreamAbove: -1})
			require.NoError(t, err)
			for how, rep := range map[string]*Report{"in memory": mem, "streamed": streamed.Report} {
				for p, w := range tc.want {
					res, _ := rep.Result(p)
					require.Equal(t, w.verdict, res.Verdict, "%s, %s: %s", how, p, res.Explanation)
					require.Equal(t, w.reason, res.Reason, "%s, %s", how, p)
					if w.verdict == Inconclusive {
						require.NotEmpty(t, res.Why)
						require.Contains(t, res.Explanation, "test", "%s, %s", how, p)
					} else {
						require.Empty(t, res.Why)
					}
				}
				reg, _ := rep.Result(Register)
				require.Equal(t, tc.why, reg.Why, how)
			}
		})
	}
}

type want struct {
	verdict Verdict
	reason  Reason
}

func TestShorten(t *testing.T) {
	require.Equal(t, "short", Shorten("short", 10))
	s := Shorten("a: b: c: d: e: f: g: the cause at the end", 24)
	require.Equal(t, "a: b: c: … cause at the end", s)
	require.Equal(t, "é … éé", Shorten("ééééééééé", 6)) // never a broken rune
}
