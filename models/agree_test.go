package models

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anishathalye/porcupine"

	"github.com/fencecheck/fencecheck/harness/history"
)

// TestDirectAgreesWithPorcupine holds the direct analysis, the judge, to porcupine: on
// 100,000 small generated histories (simulated runs, legal and buggy, with the strict,
// monotonic and owner fences, unknown and rejected writes and tied tokens; arbitrary ones; and mutated
// simulated ones), Direct must call a property violated exactly when porcupine does, and
// porcupine must confirm the witness of every violation: 10,000 with -short or under the
// race detector (raceDetector). FENCECHECK_AGREE_N sets the number of histories
// (docs/checker.md has a run of 1,000,000).
func TestDirectAgreesWithPorcupine(t *testing.T) {
	n := 100_000
	if testing.Short() || raceDetector {
		n = 10_000
	}
	if s := os.Getenv("FENCECHECK_AGREE_N"); s != "" {
		v, err := strconv.Atoi(s)
		require.NoError(t, err, "FENCECHECK_AGREE_N")
		n = v
	}
	type tally struct{ held, violated atomic.Int64 }
	counts := map[Property]*tally{}
	for _, p := range modelProperties() {
		counts[p] = &tally{}
	}
	var ties, unknownWrites, rejected, monotonic, owner, mutated atomic.Int64
	var failMu sync.Mutex
	var failures []string
	fail := func(format string, args ...any) {
		failMu.Lock()
		defer failMu.Unlock()
		if len(failures) < 3 {
			failures = append(failures, fmt.Sprintf(format, args...))
		}
	}
	failed := func() bool { failMu.Lock(); defer failMu.Unlock(); return len(failures) > 0 }

	one := func(i int) {
		// Each history's seed depends only on its index, so a failure is reproducible.
		seed := uint64(20240601)*1_000_003 + uint64(i)
		r := rand.New(rand.NewPCG(seed, 1))
		var h *history.History
		switch i % 4 {
		case 2:
			h = arbitraryHistory(r)
		case 3:
			h = mutate(simulate(randomConfig(r), r), r)
			mutated.Add(1)
		default:
			h = simulate(randomConfig(r), r)
		}
		if h.FenceRule() == history.FenceStrict && r.IntN(3) == 0 {
			// The owner guard: accepted writes as under strict, refusals need no reason.
			h.Run.Fence = history.FenceOwner
			owner.Add(1)
		}
		if err := h.Validate(); err != nil {
			fail("history %d: the generator made an invalid history: %v\n%s", i, err, dump(h))
			return
		}
		d := Direct(h)
		for _, p := range modelProperties() {
			res := porcupine.CheckOperationsTimeout(Model(p, h), Operations(p, h), 10*time.Second)
			if res == porcupine.Unknown {
				fail("history %d: porcupine timed out on %s", i, p)
				return
			}
			if (res == porcupine.Illegal) != d.Violated(p) {
				fail("history %d: %s: porcupine says %s, direct says violated=%v (%s)\n%s",
					i, p, res, d.Violated(p), d.Findings[p].Reason, dump(h))
				return
			}
			if !d.Violated(p) {
				counts[p].held.Add(1)
				continue
			}
			counts[p].violated.Add(1)
			cr := Result{Property: p, Verdict: Violated}
			certify(context.Background(), &cr, newPartIndex(h), d.Findings[p].Ops)
			if !cr.Certified {
				fail("history %d: %s: the witness %v of %v was not confirmed: %s (%s)\n%s", i, p, cr.Witness, d.Findings[p].Ops, cr.CertifyNote, d.Findings[p].Reason, dump(h))
				return
			}
		}
		// The explanations must match the verdicts: a stale write that got through is
		// a register violation, and a violated updates property names a lost update.
		if d.Evidence.StaleAccepted > 0 && !d.Violated(Register) {
			fail("history %d: a stale write got through but the register holds: %+v\n%s", i, d.StaleWrites, dump(h))
		}
		if (len(d.LostUpdates) > 0) != d.Violated(Updates) {
			fail("history %d: lost updates %+v but updates violated=%v\n%s", i, d.LostUpdates, d.Violated(Updates), dump(h))
		}
		if f := d.Findings[Register]; f.Violated && len(f.Ops) == 0 {
			fail("history %d: register violated without a counterexample", i)
		}
		stats := shape(h)
		ties.Add(int64(stats.ties))
		unknownWrites.Add(int64(stats.unknownWrites))
		rejected.Add(int64(stats.rejected))
		if h.FenceRule() == history.FenceMonotonic {
			monotonic.Add(1)
		}
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for !failed() {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				one(i)
			}
		})
	}
	wg.Wait()
	for _, f := range failures {
		t.Error(f)
	}
	if t.Failed() {
		return
	}
	for _, p := range modelProperties() {
		c := counts[p]
		held, violated := int(c.held.Load()), int(c.violated.Load())
		t.Logf("%-8s held %6d  violated %6d", p, held, violated)
		if held < n/10 || violated < n/10 {
			t.Errorf("%s: too few of one kind (held %d, violated %d of %d): the generator does not exercise both outcomes", p, held, violated, n)
		}
	}
	t.Logf("%d histories (%d mutated); with tied write tokens %d, unknown writes %d, rejected writes %d, monotonic fence %d, owner fence %d",
		n, mutated.Load(), ties.Load(), unknownWrites.Load(), rejected.Load(), monotonic.Load(), owner.Load())
	if int(ties.Load()) < n/10 || int(unknownWrites.Load()) < n/10 || int(rejected.Load()) < n/10 || int(monotonic.Load()) < n/4 || int(owner.Load()) < n/10 {
		t.Errorf("the generator does not exercise ties, unknown writes, rejections and the three fences enough")
	}
}

// mutate changes one thing in a (mostly legal) simulated history — a read's value, a
// write's status or token, an interval, an acquire's token — so that the history lands
// near the border between legal and illegal, where a checker is most likely wrong.
func mutate(h *history.History, r *rand.Rand) *history.History {
	if len(h.Ops) == 0 {
		return h
	}
	m := &history.History{Format: h.Format, Run: h.Run, Faults: h.Faults, Ops: slices.Clone(h.Ops)}
	var writes []history.Op
	for _, o := range m.Ops {
		if o.Kind == history.Write {
			writes = append(writes, o)
		}
	}
	for range 10 { // try a few times to find an op the mutation applies to
		o := &m.Ops[r.IntN(len(m.Ops))]
		switch r.IntN(5) {
		case 0: // a read returns another write's value
			if o.Kind != history.Read || o.Status != history.OK || len(writes) == 0 {
				continue
			}
			w := writes[r.IntN(len(writes))]
			o.Value, o.Token = w.Value, w.Token
		case 1: // a write's outcome flips
			if o.Kind != history.Write || o.Status == history.Unknown {
				continue
			}
			if o.Status == history.OK {
				o.Status = history.Rejected
			} else {
				o.Status = history.OK
			}
		case 2: // a write or acquire carries a neighbouring token
			if (o.Kind != history.Write && o.Kind != history.Acquire) || o.Token == 0 {
				continue
			}
			o.Token += []int64{-1, 1}[r.IntN(2)]
			if o.Token == 0 && o.Kind == history.Acquire {
				o.Token = 2
			}
		case 3: // an interval moves
			if o.Return == nil {
				continue
			}
			d := *o.Return - o.Call
			o.Call = max(0, o.Call+r.Int64N(7)-3)
			ret := o.Call + d
			o.Return = &ret
		default: // an op never returns
			if o.Return == nil || o.Kind == history.Read && r.IntN(2) == 0 {
				continue
			}
			o.Return, o.Status = nil, history.Unknown
		}
		if m.Validate() == nil {
			return m
		}
		m.Ops = slices.Clone(h.Ops)
	}
	return h
}

type histShape struct{ ties, unknownWrites, rejected int }

// shape notes which features a history exercises (each counted once per history).
func shape(h *history.History) histShape {
	var s histShape
	seen := map[int64]bool{}
	for _, o := range h.Ops {
		if o.Kind != history.Write {
			continue
		}
		if o.Status == history.OK || o.Status == history.Unknown {
			if seen[o.Token] {
				s.ties = 1
			}
			seen[o.Token] = true
		}
		if o.Status == history.Unknown {
			s.unknownWrites = 1
		}
		if o.Status == history.Rejected {
			s.rejected = 1
		}
	}
	return s
}

func dump(h *history.History) string {
	var b bytes.Buffer
	_ = history.Encode(&b, h)
	return b.String()
}
