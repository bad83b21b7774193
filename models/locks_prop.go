package models

import (
	"fmt"

	"github.com/anishathalye/porcupine"

	"github.com/fencecheck/fencecheck/harness/history"
)

// tokensProp is the tokens property (locks.go, stream_locks.go).
type tokensProp struct{ always }

func (tokensProp) name() Property { return Tokens }

func (tokensProp) doc() string {
	return "Grants carry strictly increasing tokens in real-time order. A violation means token reuse or regression."
}

func (tokensProp) model(string, *values) (porcupine.Model, bool) { return tokensModel(), true }

func (tokensProp) usesValues() bool { return false }

func (tokensProp) inModel(o *history.Op) bool {
	return o.Kind == history.Acquire && o.Status == history.OK
}

func (p tokensProp) modelOps(h *history.History, _ *values) []modelOp {
	var sel []modelOp
	for i := range h.Ops {
		if o := &h.Ops[i]; p.inModel(o) {
			sel = append(sel, modelOp{op: o, ret: o.End(), input: tokOp{o.ID, o.Client, o.Token}})
		}
	}
	return sel
}

func (tokensProp) prepareCut(*cutter) {}

func (p tokensProp) relevant(c *cutter, i int) bool { return p.inModel(&c.h.Ops[i]) }

func (tokensProp) closure(*cutter, int) {} // fewer grants never break the order

func (tokensProp) direct(h *history.History, _ *DirectResult) Finding { return analyzeTokens(h) }

func (tokensProp) streamKey(*streamChecker, *keyState) keyStream { return tokStream{} }

type tokStream struct{}

func (tokStream) op(c *streamChecker, ks *keyState, s *sop) error {
	if s.kind == history.Acquire && s.status == history.OK {
		ks.tok.grant(c, ks, s)
	}
	return nil
}

func (tokStream) finish(*streamChecker, *keyState) {}

func (tokensProp) unproven(h *history.History, ops int, ev Evidence) (Reason, string) {
	reason, why := gap(h, ops, ev)
	switch {
	case reason == ReasonNoOps || reason == ReasonNoGrant:
		return reason, why
	case ev.Grants < 2 && (len(h.Faults) > 0 || h.Run.AskedForFaults()):
		return ReasonFewGrants, fmt.Sprintf("only %d grant(s)", ev.Grants)
	}
	return "", ""
}

func (tokensProp) held(ev Evidence) string {
	if ev.Grants < 2 {
		return fmt.Sprintf("Only %d grant(s), so there was no token order to check.", ev.Grants)
	}
	return fmt.Sprintf("All %d grants carry strictly increasing tokens in real-time order.", ev.Grants)
}

func (tokensProp) untested() string { return "there was no token order to check" }

// mutexProp is the mutex property (locks.go, stream_locks.go).
type mutexProp struct{ always }

func (mutexProp) name() Property { return Mutex }

func (mutexProp) doc() string {
	return "At most one client believes it holds the lock at any time. Lease locks violate it under pauses; that is why fencing exists."
}

func (mutexProp) model(string, *values) (porcupine.Model, bool) { return mutexModel(), true }

func (mutexProp) usesValues() bool { return false }

func (mutexProp) inModel(o *history.Op) bool {
	return (o.Kind == history.Acquire && o.Status == history.OK) || o.Kind == history.Release
}

func (mutexProp) modelOps(h *history.History, _ *values) []modelOp {
	var sel []modelOp
	for _, hd := range holds(h) {
		sel = append(sel, modelOp{op: hd.acq, ret: hd.acq.End(), input: mutexOp{hd.acq.ID, hd.acq.Client, false, hd.acq.Status}})
		if hd.rel != nil {
			sel = append(sel, modelOp{op: hd.rel, ret: releaseEnd(hd.rel), input: mutexOp{hd.rel.ID, hd.rel.Client, true, hd.rel.Status}})
		}
	}
	return sel
}

// prepareCut: only the ends of holds may join the cut. A renewal (an ok acquire while
// the client already holds) would start a hold of its own there, which without the
// hold's release would last to the end of the history.
func (mutexProp) prepareCut(c *cutter) {
	c.hold, c.ends = map[int]int{}, map[int]bool{}
	for _, hd := range holds(c.h) {
		a := c.index(hd.acq.ID)
		c.ends[a] = true
		if hd.rel != nil {
			r := c.index(hd.rel.ID)
			c.hold[a], c.hold[r] = r, a
			c.ends[r] = true
		}
	}
}

func (mutexProp) relevant(c *cutter, i int) bool { return c.ends[i] }

func (mutexProp) closure(c *cutter, i int) {
	if j, ok := c.hold[i]; ok {
		c.add(j)
	}
}

func (mutexProp) direct(h *history.History, _ *DirectResult) Finding { return analyzeMutex(h) }

func (mutexProp) streamKey(*streamChecker, *keyState) keyStream { return muxStream{} }

type muxStream struct{}

func (muxStream) op(c *streamChecker, ks *keyState, s *sop) error {
	switch s.kind {
	case history.Acquire:
		ks.mux.acquire(c, ks, s)
	case history.Release:
		ks.mux.release(c, ks, s)
	}
	return nil
}

func (muxStream) finish(c *streamChecker, ks *keyState) { ks.mux.finish(c, ks) }

// unproven: the mutex needs only a grant.
func (mutexProp) unproven(h *history.History, ops int, ev Evidence) (Reason, string) {
	if reason, why := gap(h, ops, ev); reason == ReasonNoOps || reason == ReasonNoGrant {
		return reason, why
	}
	return "", ""
}

func (mutexProp) held(Evidence) string {
	return "No two clients ever both believed they held the lock."
}

func (mutexProp) untested() string { return "no two clients could have believed they held the lock" }
