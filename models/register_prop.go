package models

import (
	"fmt"

	"github.com/anishathalye/porcupine"

	"github.com/fencecheck/fencecheck/harness/history"
)

// registerProp is the register property (register.go, stream_register.go).
type registerProp struct{ always }

func (registerProp) name() Property { return Register }

func (registerProp) doc() string {
	return "The resource behaves as one atomic register that accepts a write iff its token passes the fence. A violation means a stale write got through (the token went backwards) or the fence is not atomic."
}

func (registerProp) model(fence string, vals *values) (porcupine.Model, bool) {
	return registerModel(fence, vals), true
}

func (registerProp) usesValues() bool { return true }

func (registerProp) inModel(o *history.Op) bool {
	return (o.Kind == history.Write && o.Status != history.Fail) || (o.Kind == history.Read && o.Status == history.OK)
}

func (registerProp) modelOps(h *history.History, vals *values) []modelOp {
	var sel []modelOp
	for i := range h.Ops {
		o := &h.Ops[i]
		switch {
		case o.Kind == history.Write && o.Status != history.Fail:
			sel = append(sel, modelOp{op: o, ret: o.End(), input: regOp{o.ID, o.Client, false, o.Status, vals.id(o.Value), o.Token}})
		case o.Kind == history.Read && o.Status == history.OK:
			sel = append(sel, modelOp{op: o, ret: o.End(), input: regOp{o.ID, o.Client, true, o.Status, vals.id(o.Value), o.Token}})
		}
	}
	return sel
}

func (registerProp) prepareCut(*cutter) {}

func (registerProp) relevant(c *cutter, i int) bool { return registerRelevant(c, i) }

// registerRelevant: the register's and the updates' ops that may join a widened cut.
func registerRelevant(c *cutter, i int) bool {
	o := &c.h.Ops[i]
	return (o.Kind == history.Write && (o.Status == history.OK || o.Status == history.Unknown)) ||
		(o.Kind == history.Read && o.Status == history.OK)
}

func (registerProp) closure(c *cutter, i int) {
	o := &c.h.Ops[i]
	if o.Kind == history.Read && o.Value != "" {
		if w, ok := c.write[o.Value]; ok && (c.h.Ops[w].Status == history.OK || c.h.Ops[w].Status == history.Unknown) {
			c.add(w)
		}
	}
	if o.Kind == history.Write && o.Status == history.Rejected && c.fence != history.FenceOwner {
		for j := range c.h.Ops {
			w := &c.h.Ops[j]
			if w.Kind == history.Write && (w.Status == history.OK || w.Status == history.Unknown) &&
				w.Call < o.End() && !history.Passes(c.fence, o.Token, w.Token) {
				c.add(j)
			}
		}
	}
}

func (registerProp) direct(h *history.History, d *DirectResult) Finding {
	reg := analyzeRegister(h)
	d.StaleWrites = reg.stale
	return reg.finding
}

func (registerProp) streamKey(*streamChecker, *keyState) keyStream { return regStream{} }

type regStream struct{}

func (regStream) op(c *streamChecker, ks *keyState, s *sop) error {
	switch {
	case s.kind == history.Read && s.status == history.OK:
		ks.reg.read(c, ks, s)
	case s.kind == history.Write:
		return ks.reg.write(c, ks, s)
	}
	return nil
}

func (regStream) finish(c *streamChecker, ks *keyState) { ks.reg.finish(c, ks) }

func (registerProp) unproven(h *history.History, ops int, ev Evidence) (Reason, string) {
	return writesUnproven(h, ops, ev)
}

// writesUnproven is what the register and the updates need: the history's gap, an
// accepted write, and a stale write under a fault that struck.
func writesUnproven(h *history.History, ops int, ev Evidence) (Reason, string) {
	reason, why := gap(h, ops, ev)
	switch {
	case reason != "":
		return reason, why
	case ev.WritesAccepted == 0:
		return ReasonNoAcceptedWrite, fmt.Sprintf("no write was accepted (%d attempted)", ev.Writes)
	case len(h.Faults) > 0 && ev.StaleAttempted == 0:
		return ReasonNoStaleWrite, "no stale write was attempted"
	}
	return "", ""
}

func (registerProp) held(ev Evidence) string {
	if ev.StaleAttempted == 0 {
		return "Every accepted write and read fits one atomic register that accepts a write only when its token passes the fence, but no stale write was attempted, so the fence was never tested."
	}
	return fmt.Sprintf("Every accepted write and read fits one atomic register that accepts a write only when its token passes the fence; %d stale write(s) were attempted and the fence rejected them.", ev.StaleRejected)
}

func (registerProp) untested() string { return "the fence was never tested" }

// capture: a refusal's candidates — every write with a token it fails against called
// before it returned, which the register still holds (its token is above what it
// forgot) — join its streamed witness.
func (registerProp) capture(c *streamChecker, ks *keyState, cp *capture) {
	for id := range cp.core {
		x, ok := cp.ops[id]
		if !ok || x.kind != history.Write || x.status != history.Rejected || c.fence == history.FenceOwner {
			continue
		}
		for _, v := range ks.reg.byTok {
			if (v.op.status == history.OK || v.op.status == history.Unknown) && v.op.call < x.ret && !history.Passes(c.fence, x.token, v.op.token) {
				if _, ok := cp.ops[v.op.id]; !ok {
					cp.ops[v.op.id] = v.op
				}
			}
		}
	}
}

// annotations draws the stale writes.
func (registerProp) annotations(h *history.History, d *DirectResult) []porcupine.Annotation {
	var out []porcupine.Annotation
	byID := h.ByID()
	for _, s := range d.StaleWrites {
		w := byID[s.Write]
		stop := w.End()
		if stop == history.Infinity {
			stop = w.Call
		}
		out = append(out, porcupine.Annotation{
			Tag:             "stale writes",
			Start:           w.Call,
			End:             stop,
			Description:     fmt.Sprintf("#%d %s", s.Write, s.Status),
			Details:         fmt.Sprintf("write #%d (client %d, token %d) is older than write #%d (client %d, token %d), in effect by %d ns; %s", s.Write, s.Client, s.Token, s.Newer, s.NewerClient, s.NewerToken, s.NewerAt, s.Status),
			BackgroundColor: staleColor(s.Status),
		})
	}
	return out
}
