package models

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/fencecheck/fencecheck/harness/history"
)

// Certifying a violation. The direct analysis names the few ops it cannot fit (a stale
// write and the write it overtook, a read and the writes around it, two holds of the
// lock). Those ops are cut out of the key's sub-history, with what their meaning
// depends on, and porcupine checks the cut: if it is illegal, so is the history,
// because every linearization of the history restricts to one of the cut (the closure
// rules below keep that true; docs/checker.md has the argument). If porcupine finds the
// first cut legal, the ops overlapping a wider and wider time window around it are
// added, up to maxWitnessOps.
//
// Closure rules, per model:
//   - register: an ok read brings the write of its value (if that write was ok or
//     unknown: a read of a failed write's value is illegal on its own); a rejected
//     write in the cut brings every ok or unknown write called before it returned with
//     a token it fails against (what could have explained the refusal); rejected
//     writes outside the direct analysis's ops are left out (leaving out a no-op never
//     makes a history illegal);
//   - updates: a read-modify-write the analysis names brings its read and the write
//     that read saw; any other read-modify-write whose predecessor is not in the cut
//     is relaxed to a plain write (it applied in the history, and a plain write may
//     apply anywhere); an unknown write brings the read that first saw it;
//   - tokens: none (fewer grants never break the order);
//   - mutex: an acquire or release brings the other end of its hold; only the ends of
//     holds join the cut.
const (
	maxWitnessOps  = 5000
	witnessTimeout = 10 * time.Second
)

// partIndex is what cutting witnesses out of one key's sub-history needs, built once
// for all its properties.
type partIndex struct {
	h     *history.History
	index func(id int) int // op id -> index, -1 if none
	write map[string]int   // write value -> index
	seen  map[string]int   // value -> index of the ok read that returned it first
}

func newPartIndex(h *history.History) *partIndex {
	x := &partIndex{h: h, index: h.Indexer(), write: map[string]int{}, seen: map[string]int{}}
	for i := range h.Ops {
		o := &h.Ops[i]
		switch {
		case o.Kind == history.Write:
			if _, dup := x.write[o.Value]; !dup {
				x.write[o.Value] = i
			}
		case o.Kind == history.Read && o.Status == history.OK && o.Value != "":
			if j, ok := x.seen[o.Value]; !ok || o.End() < h.Ops[j].End() {
				x.seen[o.Value] = i
			}
		}
	}
	return x
}

// certify sets r.Witness, r.Certified and r.CertifyNote for a violated result, from the
// direct analysis's ops core in x's sub-history (the key's).
func certify(ctx context.Context, r *Result, x *partIndex, core []int) {
	if len(core) == 0 {
		r.CertifyNote = "the direct analysis named no ops to cut a witness from"
		return
	}
	cut := cutWitness(ctx, mustPlugin(r.Property), x, core)
	r.Witness = cut.ids
	switch {
	case ctx.Err() != nil:
		r.CertifyNote = "cancelled"
	case cut.res == porcupine.Illegal:
		r.Certified = true
		r.CertifyNote = fmt.Sprintf("porcupine finds the %d-op witness illegal", len(cut.sub.Ops))
	case cut.res == porcupine.Unknown:
		r.CertifyNote = fmt.Sprintf("porcupine timed out on the %d-op witness", len(cut.sub.Ops))
	default:
		r.CertifyNote = fmt.Sprintf("porcupine linearizes the %d-op witness (round %d), so it does not confirm the violation", len(cut.sub.Ops), cut.rounds)
	}
}

// witnessCut is the last sub-history cutWitness tried and what porcupine made of it.
type witnessCut struct {
	sub    *history.History
	ids    []int
	res    porcupine.CheckResult
	rounds int
}

// cutWitness cuts the witness out of x's sub-history around core, widening it until
// porcupine finds it illegal or it cannot grow.
func cutWitness(ctx context.Context, p checker, x *partIndex, core []int) witnessCut {
	c := newCutter(p, x, core)
	for round := 1; ; round++ {
		sub := c.subHistory()
		vals := newValues(sub)
		model := newModel(ctx, p, sub, vals)
		res := porcupine.CheckOperationsTimeout(model, operationsSingle(p, sub, vals), witnessTimeout)
		cut := witnessCut{sub: sub, ids: c.ids(), res: res, rounds: round}
		if ctx.Err() != nil || res != porcupine.Ok || !c.widen() {
			return cut
		}
	}
}

// cutter grows a witness inside one key's sub-history.
type cutter struct {
	*partIndex
	p      checker
	fence  string
	in     []bool // in[i]: h.Ops[i] is in the cut
	list   []int  // the indexes in the cut, in the order they joined
	core   map[int]bool
	hold   map[int]int  // acquire or release index -> the other end of its hold (mutex)
	ends   map[int]bool // the indexes of the ops that start or end a hold (mutex)
	width  int64        // current window half-width, 0 before the first widening
	n      int
	closed int // c.list[:closed] have had the closure rules applied
}

func newCutter(p checker, x *partIndex, core []int) *cutter {
	c := &cutter{partIndex: x, p: p, fence: x.h.FenceRule(), in: make([]bool, len(x.h.Ops)), core: map[int]bool{}}
	p.prepareCut(c)
	for _, id := range core {
		if i := c.index(id); i >= 0 {
			c.core[i] = true
			c.add(i)
		}
	}
	c.close()
	return c
}

func (c *cutter) add(i int) {
	if !c.in[i] {
		c.in[i] = true
		c.list = append(c.list, i)
		c.n++
	}
}

// relevant says whether op i takes part in the property's model at all (fail ops never
// do; rejected writes only through the closure).
func (c *cutter) relevant(i int) bool { return c.p.relevant(c, i) }

// close applies the closure rules to every op that joined the cut since the last call,
// including those it adds. An op's rules depend on the op alone, so once is enough.
func (c *cutter) close() {
	for ; c.closed < len(c.list); c.closed++ {
		c.p.closure(c, c.list[c.closed])
	}
}

// widen adds the relevant ops overlapping a window twice as wide around the cut, and
// reports false when that cannot grow the cut any more.
func (c *cutter) widen() bool {
	if c.n >= maxWitnessOps || c.n >= len(c.h.Ops) {
		return false
	}
	lo, hi := int64(history.Infinity), int64(0)
	for i, in := range c.in {
		if in {
			o := &c.h.Ops[i]
			lo = min(lo, o.Call)
			if e := o.End(); e != history.Infinity {
				hi = max(hi, e)
			}
			hi = max(hi, o.Call)
		}
	}
	c.width = max(2*c.width, hi-lo, 1)
	lo, hi = lo-c.width, hi+c.width
	before := c.n
	for i := range c.h.Ops {
		o := &c.h.Ops[i]
		if c.n >= maxWitnessOps {
			break
		}
		if !c.in[i] && o.Call <= hi && o.End() >= lo && c.relevant(i) {
			c.add(i)
		}
	}
	c.close()
	if c.n == before {
		// Nothing new near the cut: jump to the whole window of the key, once.
		if lo <= 0 && hi >= c.h.LastTime() {
			return false
		}
		c.width = c.h.LastTime()
		return c.widen()
	}
	return true
}

// subHistory is the cut as a history, with the updates relaxation applied.
func (c *cutter) subHistory() *history.History {
	sub := &history.History{Format: c.h.Format, Run: c.h.Run, Ops: make([]history.Op, 0, c.n)}
	for i, in := range c.in {
		if !in {
			continue
		}
		o := c.h.Ops[i]
		if o.ReadID != nil && !c.keepsRead(i) {
			o.ReadID = nil
		}
		sub.Ops = append(sub.Ops, o)
	}
	return sub
}

// keepsRead says whether write i stays a read-modify-write in the cut: its read is in
// it, and so is the write that read saw, unless that value can never be current in the
// history either (the initial value is always there; a failed or rejected write's
// value, or one nobody wrote, never is).
func (c *cutter) keepsRead(i int) bool {
	r := c.index(*c.h.Ops[i].ReadID)
	if r < 0 || !c.in[r] {
		return false
	}
	v := c.h.Ops[r].Value
	if v == "" {
		return true
	}
	w, ok := c.write[v]
	if !ok || c.h.Ops[w].Status == history.Fail || c.h.Ops[w].Status == history.Rejected {
		return true
	}
	return c.in[w]
}

func (c *cutter) ids() []int {
	out := make([]int, 0, c.n)
	for i, in := range c.in {
		if in {
			out = append(out, c.h.Ops[i].ID)
		}
	}
	slices.SortFunc(out, cmp.Compare)
	return out
}
