package models

import (
	"slices"

	"github.com/fencecheck/fencecheck/harness/history"
)

// Lock timing, streamed (timing.go says what is measured). Ops come in call order, and
// every op carries its return, so a hold's supersession is settled at its release: every
// hold that began (returned) before the release's call was called before it, and has
// been seen. A hold's candidate S is the earliest return, later than its own, of any
// hold seen so far — those seen after it, while it is open, and those seen before it
// that had not returned yet when it was called (in flight); the candidate only falls.
// Memory: per key the open holds (one per client), the holds in flight, and per open
// hold its accepted writes still in flight.
type timingKey struct {
	open   map[int]*timingHold // by client
	flight []int64             // returns of holds begun, later than the current call
	free   []*timingHold       // settled holds, for reuse: a long history has millions
}

type timingHold struct {
	acqID    int
	a        int64 // the grant's return
	minS     int64 // the earliest later return of a hold seen so far (history.Infinity: none)
	progress int64 // the latest accepted write's return known to be no later than S (or a)
	valid    int64 // the latest validity estimate on the hold's acquire and writes (0: none)
	pending  []int64
}

// settle folds the accepted writes' returns that surely count (no later than any S the
// hold can still get: the candidate, or a hold called from now on) into progress, and
// drops those that cannot (later than the candidate).
func (h *timingHold) settle(now int64) {
	sure := min(h.minS, now)
	h.pending = slices.DeleteFunc(h.pending, func(r int64) bool {
		if r <= sure {
			h.progress = max(h.progress, r)
		}
		return r <= sure || r > h.minS
	})
}

func (k *timingKey) op(c *streamChecker, s *sop) {
	switch s.kind {
	case history.Acquire:
		if s.status != history.OK || k.open[s.client] != nil {
			return // not a grant, or one the client's hold already covers (holds)
		}
		if k.open == nil {
			k.open = map[int]*timingHold{}
		}
		a := s.ret
		k.flight = slices.DeleteFunc(k.flight, func(r int64) bool { return r <= c.now })
		var h *timingHold
		if n := len(k.free); n > 0 {
			h, k.free = k.free[n-1], k.free[:n-1]
		} else {
			h = &timingHold{}
		}
		*h = timingHold{acqID: s.id, a: a, minS: history.Infinity, progress: a, valid: s.valid, pending: h.pending[:0]}
		for _, r := range k.flight {
			if r > a {
				h.minS = min(h.minS, r)
			}
		}
		for _, o := range k.open {
			if a > o.a {
				o.minS = min(o.minS, a)
			}
		}
		if a > c.now {
			k.flight = append(k.flight, a)
		}
		k.open[s.client] = h
	case history.Write:
		h := k.open[s.client]
		if h != nil {
			h.valid = max(h.valid, s.valid)
		}
		if h == nil || s.status != history.OK || s.ret == history.Infinity {
			return
		}
		h.pending = append(h.pending, s.ret)
		h.settle(c.now)
	case history.Release:
		h := k.open[s.client]
		if h == nil {
			return // a release while holding nothing ends nothing
		}
		delete(k.open, s.client)
		k.end(c, h, s.call)
		k.free = append(k.free, h)
	}
}

// end settles hold h, which lasted until e.
func (k *timingKey) end(c *streamChecker, h *timingHold, e int64) {
	if h.minS >= e {
		return // nobody else was granted the lock while h was held
	}
	s := h.minS
	progress := h.progress
	for _, r := range h.pending {
		if r <= s {
			progress = max(progress, r)
		}
	}
	at, noticed := c.lostAt[h.acqID]
	c.tim.supersession(s, progress, at, noticed, h.valid)
}

// finish settles the holds never released: they lasted to the end of the history.
func (k *timingKey) finish(c *streamChecker) {
	for client, h := range k.open {
		delete(k.open, client)
		k.end(c, h, history.Infinity)
	}
}
