package models

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/harness/history"
)

// heedBoth checks h in memory and as a stream and requires the two to give heed the
// same verdict and witness; it returns the in-memory result.
func heedBoth(t *testing.T, h *history.History) Result {
	t.Helper()
	require.NoError(t, h.Validate())
	rep, err := Check(context.Background(), h, Options{PorcupineBudget: NoPorcupine, Select: []Property{Heed}})
	require.NoError(t, err)
	require.Empty(t, rep.Trouble(), "heed has no porcupine model: its violation is no checker trouble")
	res, ok := rep.Result(Heed)
	require.True(t, ok, "a history with lost records has a heed result")
	require.Equal(t, res.Verdict, rep.Verdicts[Heed])
	sr, err := streamSelect(context.Background(), func() (opSource, error) { return &memSource{h: h, step: 1}, nil }, []Property{Heed})
	require.NoError(t, err)
	got, ok := sr.Report.Result(Heed)
	require.True(t, ok)
	require.Equal(t, res.Verdict, got.Verdict, "stream: %s", got.Explanation)
	require.Equal(t, res.Witness, got.Witness)
	require.Equal(t, res.Explanation, got.Explanation)
	return res
}

// leaseLost is a client granted the lock (acquire #1, token 1, returning at 10) and
// told at 50 that the lease was lost.
func leaseLost() *builder {
	b := newHistory(strict)
	b.acquire(0, 0, 10, ok, 1)
	b.h.Lost = []history.Lost{{Client: 0, AcquireID: 1, Token: 1, At: 50, Reason: "a renewal was refused"}}
	return b
}

func TestHeed(t *testing.T) {
	t.Run("a write called after the loss is a violation", func(t *testing.T) {
		b := leaseLost()
		b.write(0, 20, 30, ok, 1, "a") // before the loss: fine
		w := b.write(0, 60, 70, rejected, 1, "b")
		res := heedBoth(t, b.h)
		require.Equal(t, Violated, res.Verdict, res.Explanation)
		require.Equal(t, []int{w, 1}, res.Counterexample)
		require.Equal(t, []int{w, 1}, res.Witness, "the witness names the write and the acquire")
		require.False(t, res.Certified)
		require.Contains(t, res.CertifyNote, "no porcupine model")
		for _, part := range []string{"write #3", "acquire #1", "lost[0]", "60ns", "50ns", "a renewal was refused"} {
			require.Contains(t, res.Explanation, part)
		}
	})
	t.Run("whatever the write's status", func(t *testing.T) {
		for _, s := range []history.Status{ok, rejected, unknown, failed} {
			b := leaseLost()
			ret := int64(70)
			if s == unknown {
				ret = never
			}
			b.write(0, 60, ret, s, 1, "b")
			require.Equal(t, Violated, heedBoth(t, b.h).Verdict, s)
		}
	})
	t.Run("a write in flight when the loss arrived is not one", func(t *testing.T) {
		b := leaseLost()
		b.write(0, 40, 90, ok, 1, "a")
		b.write(0, 50, 90, ok, 1, "b") // called at the very moment: not after
		res := heedBoth(t, b.h)
		require.Equal(t, Held, res.Verdict, res.Explanation)
		require.Empty(t, res.Witness)
	})
	t.Run("a new grant in between clears it", func(t *testing.T) {
		b := leaseLost()
		b.acquire(0, 52, 55, ok, 1) // granted again (same token, as a re-acquired lease may be)
		b.write(0, 60, 70, ok, 1, "b")
		require.Equal(t, Held, heedBoth(t, b.h).Verdict)
	})
	t.Run("a grant that returns after the write does not", func(t *testing.T) {
		b := leaseLost()
		b.acquire(0, 52, 80, ok, 1)
		b.write(0, 60, 70, ok, 1, "b")
		require.Equal(t, Violated, heedBoth(t, b.h).Verdict)
	})
	t.Run("a grant that returned before the loss does not", func(t *testing.T) {
		b := leaseLost()
		b.acquire(0, 20, 30, ok, 1) // a renewal, before the lease was lost
		b.write(0, 60, 70, ok, 1, "b")
		require.Equal(t, Violated, heedBoth(t, b.h).Verdict)
	})
	t.Run("a failed acquire is no grant", func(t *testing.T) {
		b := leaseLost()
		b.acquire(0, 52, 55, failed, 0)
		b.write(0, 60, 70, ok, 1, "b")
		require.Equal(t, Violated, heedBoth(t, b.h).Verdict)
	})
	t.Run("under a new lease's token it is no violation", func(t *testing.T) {
		b := leaseLost()
		b.acquire(0, 52, 55, ok, 2)
		b.write(0, 60, 70, ok, 2, "b")
		require.Equal(t, Held, heedBoth(t, b.h).Verdict)
	})
	t.Run("another client's write is not", func(t *testing.T) {
		b := leaseLost()
		b.acquire(1, 52, 55, ok, 2)
		b.write(1, 60, 70, ok, 1, "b") // client 1 with client 0's token: the register's business
		require.Equal(t, Held, heedBoth(t, b.h).Verdict)
	})
	t.Run("another key's lease is not", func(t *testing.T) {
		b := leaseLost()
		b.h.Ops[0].Key = "a"
		b.acquire(0, 1, 5, ok, 1)
		b.h.Ops[1].Key = "b"
		b.write(0, 60, 70, ok, 1, "v")
		b.h.Ops[2].Key = "b"
		require.Equal(t, Held, heedBoth(t, b.h).Verdict)
		b.write(0, 61, 70, ok, 1, "w")
		b.h.Ops[3].Key = "a"
		res := heedBoth(t, b.h)
		require.Equal(t, Violated, res.Verdict)
		require.True(t, strings.HasPrefix(res.Explanation, `Key "a": `), res.Explanation)
	})
	t.Run("the earliest violating write and the earliest loss are named", func(t *testing.T) {
		b := leaseLost()
		b.h.Lost = append(b.h.Lost, history.Lost{Client: 0, AcquireID: 1, Token: 1, At: 40})
		w := b.write(0, 80, 90, ok, 1, "late")
		first := b.write(0, 45, 90, ok, 1, "early") // after lost[1] only
		res := heedBoth(t, b.h)
		require.Equal(t, []int{first, 1}, res.Counterexample, res.Explanation)
		require.Contains(t, res.Explanation, "lost[1]")
		require.NotEqual(t, w, first)
	})
	t.Run("it is checked only when asked for", func(t *testing.T) {
		b := leaseLost()
		b.h.Run.Fence = mono // one token, two accepted writes: the register holds
		b.write(0, 20, 30, ok, 1, "a")
		b.write(0, 60, 70, ok, 1, "b")
		asked, err := Check(context.Background(), b.h, Options{PorcupineBudget: NoPorcupine, Select: []Property{Heed}})
		require.NoError(t, err)
		require.Equal(t, Violated, asked.Verdicts[Heed])
		unasked, err := Check(context.Background(), b.h, Options{PorcupineBudget: NoPorcupine})
		require.NoError(t, err)
		_, ok := unasked.Result(Heed)
		require.False(t, ok, "unasked, a report has no heed result")
		require.NotContains(t, unasked.Verdicts, Heed)
		for _, p := range Properties {
			require.Equal(t, unasked.Verdicts[p], asked.Verdicts[p], "asking for heed changes no other verdict")
			require.NotEqual(t, Violated, asked.Verdicts[p], p)
		}
		res, err := CheckFile(context.Background(), writeHistory(t, b.h), Options{PorcupineBudget: NoPorcupine, StreamAbove: -1, Select: []Property{Heed}})
		require.NoError(t, err)
		require.True(t, res.Streamed)
		require.Equal(t, Violated, res.Report.Verdicts[Heed], "CheckFile asks for it too")
		require.Equal(t, AllProperties[len(AllProperties)-1], Heed)
		require.False(t, slices.Contains(Properties, Heed), "heed is optional, not core")
		require.True(t, Heed.OptIn())
	})
	t.Run("a history without lost records has no heed result", func(t *testing.T) {
		b := newHistory(strict)
		b.acquire(0, 0, 10, ok, 1)
		b.write(0, 60, 70, ok, 1, "b")
		rep, err := Check(context.Background(), b.h, Options{PorcupineBudget: NoPorcupine, Select: []Property{Heed}})
		require.NoError(t, err)
		_, ok := rep.Result(Heed)
		require.False(t, ok)
		require.NotContains(t, rep.Verdicts, Heed)
		require.Len(t, rep.Results, len(Properties))
	})
}

// heedOracle is the definition, literally: the first write (by call, then id) of the
// history that some lost record makes a violation, for single-key histories.
func heedOracle(h *history.History) (write, acquire int, found bool) {
	byID := h.ByID()
	var best *history.Op
	bestAt, bestIdx := int64(0), 0
	for i := range h.Ops {
		w := &h.Ops[i]
		if w.Kind != history.Write {
			continue
		}
		for li, l := range h.Lost {
			a := byID[l.AcquireID]
			if l.Client != w.Client || l.Token != w.Token || a.Key != w.Key || !heedBefore(a, w) || !(w.Call > l.At) {
				continue
			}
			granted := false
			for j := range h.Ops {
				g := &h.Ops[j]
				if g.Kind == history.Acquire && g.Status == history.OK && g.Client == w.Client && g.Key == w.Key && g.ID != a.ID &&
					l.At <= g.End() && g.End() < w.Call {
					granted = true
				}
			}
			if granted {
				continue
			}
			if best == nil || heedBefore(w, best) || w.ID == best.ID && (l.At < bestAt || l.At == bestAt && li < bestIdx) {
				best, bestAt, bestIdx, acquire = w, l.At, li, a.ID
			}
		}
	}
	if best == nil {
		return 0, 0, false
	}
	return best.ID, acquire, true
}

// TestHeedAgrees holds heed's direct analysis to the definition (heedOracle) and its
// streamed form to the direct analysis on generated histories with lost records at
// random times, and requires both verdicts to come up often.
func TestHeedAgrees(t *testing.T) {
	n := 3000
	if testing.Short() || raceDetector {
		n = 600
	}
	var violated, held, fallbacks int
	for i := range n {
		r := rand.New(rand.NewPCG(uint64(i), 42))
		var h *history.History
		switch i % 3 {
		case 0:
			h = arbitraryHistory(r)
		default:
			h = simulate(randomConfig(r), r)
		}
		addLost(h, r)
		// Writes under the lost lease's token, as a client that ignores its loss makes.
		for j := range h.Ops {
			if o := &h.Ops[j]; o.Kind == history.Write && r.IntN(2) == 0 {
				for _, l := range h.Lost {
					if l.Client == o.Client {
						o.Token = l.Token
						break
					}
				}
			}
		}
		if len(h.Lost) == 0 || h.Validate() != nil {
			continue
		}
		d := directSelect(h, []Property{Heed})
		f := d.Findings[Heed]
		w, a, want := heedOracle(h)
		require.Equal(t, want, f.Violated, "history %d: the definition says %v (write #%d), the direct analysis %s\n%s", i, want, w, f.Reason, dump(h))
		if want {
			require.Equal(t, []int{w, a}, f.Ops, "history %d: %s\n%s", i, f.Reason, dump(h))
			violated++
		} else {
			held++
		}
		sr, err := streamSelect(context.Background(), func() (opSource, error) { return &memSource{h: h, step: 1 + r.IntN(5)}, nil }, []Property{Heed})
		if errors.Is(err, errNeedsMemory) {
			fallbacks++
			continue
		}
		require.NoError(t, err)
		got, _ := sr.Report.Result(Heed)
		require.Equal(t, f.Violated, got.Verdict == Violated, "history %d: the stream says %s (%s), the direct analysis %v (%s)\n%s", i, got.Verdict, got.Explanation, f.Violated, f.Reason, dump(h))
		if f.Violated {
			require.Equal(t, f.Ops, got.Witness, "history %d", i)
			require.Equal(t, f.Reason, got.Explanation, "history %d", i)
		}
	}
	t.Logf("%d histories: heed violated on %d, held on %d; %d checked in memory instead", n, violated, held, fallbacks)
	require.Greater(t, violated, n/20, "violations are compared")
	require.Greater(t, held, n/20, "held verdicts are compared")
}
