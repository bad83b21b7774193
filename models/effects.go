package models

import (
	"fmt"

	"github.com/fencecheck/fencecheck/harness/history"
)

// Effects is the optional fifth property, checked only on histories that record side
// effects (history.Effect): every side effect delivered outside the resource — a
// webhook, an e-mail — belongs to a write that took effect. A violation means a side
// effect escaped the fence: the resource refused a stale write (or it never happened),
// but the world was told about it anyway.
//
// It is not part of Properties (the four core properties every history gets) and has
// no porcupine model: it is a membership check, not an ordering one, so the direct
// analysis is its judge and it takes no part in Report.Agree.
const Effects Property = "effects"

// effectsProp is the effects property: judged on the whole history, after the direct
// analysis whose stale writes it uses.
type effectsProp struct{ noModel }

func (effectsProp) name() Property { return Effects }

func (effectsProp) doc() string {
	return "Every side effect delivered outside the resource (a webhook, an e-mail) belongs to a write that took effect. A violation means a side effect escaped the fence. Checked only on histories that record side effects; it has no porcupine model."
}

func (effectsProp) core() bool { return false }

func (effectsProp) optIn() bool { return false }

func (effectsProp) applies(h *history.History) bool { return HasEffects(h) }

func (effectsProp) direct(*history.History, *DirectResult) Finding { return Finding{} }

func (effectsProp) streamKey(*streamChecker, *keyState) keyStream { return nil }

func (effectsProp) unproven(h *history.History, ops int, ev Evidence) (Reason, string) {
	return gap(h, ops, ev)
}

func (effectsProp) held(Evidence) string { return "" }

func (effectsProp) untested() string { return "no side effect was put to the test" }

func (effectsProp) judge(h *history.History, d *DirectResult, rep *Report) Result {
	r, er := checkEffects(h, d)
	rep.Effects = er
	return r
}

func (effectsProp) judgeStream(c *streamChecker, h *history.History, d *DirectResult, rep *Report) Result {
	newer := map[int]int{}
	for _, ks := range c.order {
		for id, s := range ks.reg.stale {
			newer[id] = s.newer.op.id
		}
	}
	r, er := c.effects.judge(h, c.ops, d, newer)
	rep.Effects = er
	return r
}

// StaleEffect is a delivered side effect whose write never took effect.
type StaleEffect struct {
	// Effect is the effect's id in the history; At, Via, Value and Token are its fields.
	Effect int    `json:"effect"`
	At     int64  `json:"at"`
	Via    string `json:"via,omitempty"`
	Value  string `json:"value"`
	Token  int64  `json:"token"`
	// Write is the op id of the write the effect announces, 0 if no write carries its
	// value; WriteStatus is that write's status (rejected or fail).
	Write       int            `json:"write,omitempty"`
	Client      int            `json:"client"`
	WriteStatus history.Status `json:"write_status,omitempty"`
	// Newer is the accepted write the stale write lost to (from the stale-write
	// analysis), 0 when none is known.
	Newer       int    `json:"newer,omitempty"`
	Explanation string `json:"explanation"`
}

// EffectsReport is the evidence of the effects property.
type EffectsReport struct {
	// Delivered counts the effects in the history; OfAccepted those of writes that took
	// effect (ok, or unknown and seen by a read); OfUnknown those of writes that may or
	// may not have taken effect; Stale those of writes that definitely did not.
	Delivered  int `json:"delivered"`
	OfAccepted int `json:"of_accepted"`
	OfUnknown  int `json:"of_unknown"`
	Stale      int `json:"stale"`
	// Duplicates counts deliveries of a value already delivered (at-least-once relays
	// may repeat one; that is not a violation).
	Duplicates int `json:"duplicates"`
	// AcceptedWithoutEffect counts ok writes with no delivered effect (a relay that had
	// not caught up when the history was taken, or an effect lost): informational.
	AcceptedWithoutEffect int `json:"accepted_without_effect"`
	// StaleEffects lists every stale effect, in delivery order.
	StaleEffects []StaleEffect `json:"stale_effects"`
}

// HasEffects reports whether h records side effects, so its report has the effects
// property.
func HasEffects(h *history.History) bool { return len(h.Effects) > 0 }

// checkEffects judges the effects property of h, using the direct analysis d for the
// stale writes the fence stopped and for whether the fault bit.
func checkEffects(h *history.History, d *DirectResult) (Result, *EffectsReport) {
	seenByRead := map[string]bool{}
	for _, o := range h.Ops {
		if o.Kind == history.Read && o.Status == history.OK && o.Value != "" {
			seenByRead[o.Value] = true
		}
	}
	newer := map[int]int{}
	for _, s := range d.StaleWrites {
		newer[s.Write] = s.Newer
	}
	// history.WriteFor scans the ops per effect; index them once instead.
	find := h.Finder()
	writeOf := map[string]*history.Op{}
	for i := range h.Ops {
		if o := &h.Ops[i]; o.Kind == history.Write && writeOf[o.Value] == nil {
			writeOf[o.Value] = o
		}
	}
	delivered := map[string]bool{}
	for _, e := range h.Effects {
		delivered[e.Value] = true
	}
	without := 0
	for _, o := range h.Ops {
		if o.Kind == history.Write && o.Status == history.OK && !delivered[o.Value] {
			without++
		}
	}
	lookup := func(e history.Effect) *history.Op {
		if e.WriteID != nil {
			return find(*e.WriteID) // Validate made sure it is the write of that value
		}
		return writeOf[e.Value]
	}
	return judgeEffects(h.Effects, h, len(h.Ops), d, lookup, func(v string) bool { return seenByRead[v] }, newer, without)
}

// judgeEffects judges the effects property: lookup finds an effect's write (nil if
// none carries its value), seen says whether an ok read returned a value, newer maps
// a stale write to the newer write it lost to, without counts the ok writes no effect
// announces.
func judgeEffects(effects []history.Effect, h *history.History, ops int, d *DirectResult, lookup func(history.Effect) *history.Op,
	seen func(string) bool, newer map[int]int, without int) (Result, *EffectsReport) {
	rep := &EffectsReport{Delivered: len(effects), StaleEffects: []StaleEffect{}, AcceptedWithoutEffect: without}
	delivered := map[string]bool{}
	for _, e := range effects {
		if delivered[e.Value] {
			rep.Duplicates++
		}
		delivered[e.Value] = true
		w := lookup(e)
		what := ""
		switch {
		case w == nil:
			what = "no write in the history carries its value: it announces a write that never happened"
		case w.Status == history.OK:
			rep.OfAccepted++
		case w.Status == history.Unknown && seen(w.Value):
			rep.OfAccepted++ // a read saw the value, so the write took effect
		case w.Status == history.Unknown:
			rep.OfUnknown++
		case w.Status == history.Rejected:
			what = fmt.Sprintf("write op %d (client %d, token %d) was rejected by the fence", w.ID, w.Client, w.Token)
		default:
			what = fmt.Sprintf("write op %d (client %d, token %d) failed and definitely had no effect", w.ID, w.Client, w.Token)
		}
		if what == "" {
			continue
		}
		se := StaleEffect{Effect: e.ID, At: e.At, Via: e.Via, Value: e.Value, Token: e.Token}
		if w != nil {
			se.Write, se.Client, se.WriteStatus, se.Newer = w.ID, w.Client, w.Status, newer[w.ID]
			if se.Newer != 0 {
				what += fmt.Sprintf(" because op %d with a newer token was already accepted", se.Newer)
			}
		}
		via := ""
		if e.Via != "" {
			via = " via " + e.Via
		}
		se.Explanation = fmt.Sprintf("side effect %d (value %q, token %d) was delivered at %.2f s%s, but %s: the side effect escaped the fence.",
			e.ID, e.Value, e.Token, float64(e.At)/1e9, via, what)
		rep.StaleEffects = append(rep.StaleEffects, se)
	}
	rep.Stale = len(rep.StaleEffects)

	r := Result{Property: Effects, DirectViolated: rep.Stale > 0}
	switch {
	case rep.Stale > 0:
		first := rep.StaleEffects[0]
		r.Verdict = Violated
		if first.Write != 0 {
			r.Counterexample = append(r.Counterexample, first.Write)
		}
		if first.Newer != 0 {
			r.Counterexample = append(r.Counterexample, first.Newer)
		}
		r.Explanation = fmt.Sprintf("%d of %d delivered side effects belong to writes that never took effect. First: %s",
			rep.Stale, rep.Delivered, first.Explanation)
	case gapped(h, ops, d.Evidence):
		r.Verdict = Inconclusive
		r.Reason, r.Why = gap(h, ops, d.Evidence)
		r.Explanation = inconclusiveExplanation(Effects, r.Reason, r.Why, d.Evidence)
	case len(h.Faults) > 0 && d.Evidence.StaleAttempted == 0:
		r.Verdict, r.Reason, r.Why = Inconclusive, ReasonNoStaleWrite, "no stale write was attempted"
		r.Explanation = fmt.Sprintf("All %d delivered side effects belong to writes that took effect, but no stale write was attempted, so no stale side effect could have been sent.", rep.Delivered)
	default:
		r.Verdict = Held
		r.Explanation = fmt.Sprintf("All %d delivered side effects belong to writes that took effect", rep.Delivered)
		if d.Evidence.StaleAttempted > 0 {
			r.Explanation += fmt.Sprintf("; %d stale write(s) were attempted and none of their side effects was delivered", d.Evidence.StaleAttempted)
		}
		r.Explanation += "."
	}
	if rep.OfUnknown > 0 {
		r.Explanation += fmt.Sprintf(" (%d belong to writes of unknown outcome, which may have taken effect.)", rep.OfUnknown)
	}
	return r, rep
}

// gapped reports whether the history lacks the evidence any verdict needs (gap).
func gapped(h *history.History, ops int, ev Evidence) bool {
	reason, _ := gap(h, ops, ev)
	return reason != ""
}
