package models

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/fencecheck/fencecheck/harness/history"
)

// TestDirectAgreesWithPorcupine is the judge of the direct analysis: on thousands of
// small simulated histories, legal and illegal, with both fence rules, unknown and
// rejected writes and tied tokens, Direct must call a property violated exactly when
// porcupine does.
func TestDirectAgreesWithPorcupine(t *testing.T) {
	n := 9000
	if testing.Short() {
		n = 1500
	}
	seeds := rand.New(rand.NewPCG(20240601, 7))
	type tally struct{ held, violated int }
	counts := map[Property]*tally{}
	for _, p := range Properties {
		counts[p] = &tally{}
	}
	var ties, unknownWrites, rejected, monotonic int
	for i := range n {
		seed := seeds.Uint64()
		r := rand.New(rand.NewPCG(seed, 1))
		var h *history.History
		if i%3 == 2 {
			h = arbitraryHistory(r)
		} else {
			h = simulate(randomConfig(r), r)
		}
		if err := h.Validate(); err != nil {
			t.Fatalf("seed %d: the simulator made an invalid history: %v\n%s", seed, err, dump(h))
		}
		d := Direct(h)
		for _, p := range Properties {
			res := porcupine.CheckOperationsTimeout(Model(p, h), Operations(p, h), 10*time.Second)
			if res == porcupine.Unknown {
				t.Fatalf("history %d (seed %d): porcupine timed out on %s", i, seed, p)
			}
			if (res == porcupine.Illegal) != d.Violated(p) {
				t.Fatalf("history %d (seed %d): %s: porcupine says %s, direct says violated=%v (%s)\n%s",
					i, seed, p, res, d.Violated(p), d.Findings[p].Reason, dump(h))
			}
			if d.Violated(p) {
				counts[p].violated++
			} else {
				counts[p].held++
			}
		}
		// The explanations must match the verdicts: a stale write that got through is
		// a register violation, and a violated updates property names a lost update.
		if d.Evidence.StaleAccepted > 0 && !d.Violated(Register) {
			t.Fatalf("history %d (seed %d): a stale write got through but the register holds: %+v\n%s", i, seed, d.StaleWrites, dump(h))
		}
		if (len(d.LostUpdates) > 0) != d.Violated(Updates) {
			t.Fatalf("history %d (seed %d): lost updates %+v but updates violated=%v\n%s", i, seed, d.LostUpdates, d.Violated(Updates), dump(h))
		}
		if f := d.Findings[Register]; f.Violated && len(f.Ops) == 0 {
			t.Fatalf("history %d (seed %d): register violated without a counterexample", i, seed)
		}
		stats := shape(h)
		ties += stats.ties
		unknownWrites += stats.unknownWrites
		rejected += stats.rejected
		if h.FenceRule() == history.FenceMonotonic {
			monotonic++
		}
	}
	for _, p := range Properties {
		c := counts[p]
		t.Logf("%-8s held %5d  violated %5d", p, c.held, c.violated)
		if c.held < n/10 || c.violated < n/10 {
			t.Errorf("%s: too few of one kind (held %d, violated %d of %d): the generator does not exercise both outcomes", p, c.held, c.violated, n)
		}
	}
	t.Logf("histories with tied write tokens %d, unknown writes %d, rejected writes %d, monotonic fence %d", ties, unknownWrites, rejected, monotonic)
	if ties < n/10 || unknownWrites < n/10 || rejected < n/10 || monotonic < n/4 {
		t.Errorf("the generator does not exercise ties, unknown writes, rejections and both fences enough")
	}
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
