package models

import (
	"fmt"

	"github.com/anishathalye/porcupine"

	"github.com/fencecheck/fencecheck/harness/history"
)

// updatesProp is the updates property (updates.go, stream_updates.go).
type updatesProp struct{ always }

func (updatesProp) name() Property { return Updates }

func (updatesProp) doc() string {
	return "Every read-modify-write critical section is atomic. A violation means the protected data lost an update, even where tokens look fine."
}

func (updatesProp) model(_ string, vals *values) (porcupine.Model, bool) {
	return updatesModel(vals), true
}

func (updatesProp) usesValues() bool { return true }

func (updatesProp) inModel(o *history.Op) bool {
	return o.Kind == history.Write && o.Status != history.Fail
}

func (updatesProp) modelOps(h *history.History, vals *values) []modelOp {
	var sel []modelOp
	byID := h.ByID()
	seen := firstSeen(h)
	for i := range h.Ops {
		o := &h.Ops[i]
		if o.Kind != history.Write || o.Status == history.Fail {
			continue
		}
		u := updOp{id: o.ID, client: o.Client, status: o.Status, value: vals.id(o.Value)}
		if r := readOf(o, byID); r != nil {
			u.rmw, u.readValue, u.readID = true, vals.id(r.Value), r.ID
		}
		ret := o.End()
		if r := seen[o.Value]; o.Status == history.Unknown && r != nil {
			u.status, u.seenBy, ret = history.OK, r.ID, seenEnd(o, r)
		}
		sel = append(sel, modelOp{op: o, ret: ret, input: u})
	}
	return sel
}

func (updatesProp) prepareCut(*cutter) {}

func (updatesProp) relevant(c *cutter, i int) bool { return registerRelevant(c, i) }

func (updatesProp) closure(c *cutter, i int) {
	o := &c.h.Ops[i]
	if o.Kind == history.Write && o.ReadID != nil && c.core[i] {
		if r := c.index(*o.ReadID); r >= 0 {
			c.add(r)
			if v := c.h.Ops[r].Value; v != "" {
				if w, ok := c.write[v]; ok && c.h.Ops[w].Status != history.Fail && c.h.Ops[w].Status != history.Rejected {
					c.add(w)
				}
			}
		}
	}
	if o.Kind == history.Write && o.Status == history.Unknown {
		if r, ok := c.seen[o.Value]; ok {
			c.add(r)
		}
	}
}

func (updatesProp) direct(h *history.History, d *DirectResult) Finding {
	upd := analyzeUpdates(h)
	d.LostUpdates = upd.lost
	return upd.finding
}

func (updatesProp) streamKey(*streamChecker, *keyState) keyStream { return updStream{} }

type updStream struct{}

func (updStream) op(c *streamChecker, ks *keyState, s *sop) error {
	if s.kind == history.Write {
		ks.upd.write(c, ks, s)
	}
	return nil
}

func (updStream) finish(c *streamChecker, ks *keyState) { ks.upd.finish(c, ks) }

func (updatesProp) unproven(h *history.History, ops int, ev Evidence) (Reason, string) {
	return writesUnproven(h, ops, ev)
}

func (updatesProp) held(ev Evidence) string {
	if ev.StaleAttempted == 0 {
		return "Every accepted read-modify-write read the value accepted just before it, but no stale write was attempted, so the run did not put that to the test."
	}
	return "Every accepted read-modify-write read the value accepted just before it: no update was lost."
}

func (updatesProp) untested() string { return "no read-modify-write was put to the test" }

// annotations draws the lost updates.
func (updatesProp) annotations(h *history.History, d *DirectResult) []porcupine.Annotation {
	var out []porcupine.Annotation
	byID := h.ByID()
	for _, l := range d.LostUpdates {
		w := byID[l.Write]
		stop := w.End()
		if stop == history.Infinity {
			stop = w.Call
		}
		out = append(out, porcupine.Annotation{
			Tag:             "lost updates",
			Start:           w.Call,
			End:             stop,
			Description:     fmt.Sprintf("#%d", l.Write),
			Details:         fmt.Sprintf("write #%d (client %d): %s", l.Write, l.Client, l.Explanation),
			BackgroundColor: "#f6d5d5",
		})
	}
	return out
}
