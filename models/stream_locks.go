package models

import (
	"slices"

	"github.com/fencecheck/fencecheck/harness/history"
)

// Tokens, streamed: sorted by token the grants must be placeable in that order, which
// in real time is: no grant may carry a token at or below one already granted to an
// acquire that returned before it was called, nor the token of a grant in flight.
type tokState struct {
	maxSet bool
	max    int64
	maxOp  sop
	open   []sop
}

func (t *tokState) grant(c *streamChecker, ks *keyState, s *sop) {
	if c.noToken != "" {
		return // violated by the backend's declaration (result)
	}
	a := s
	if a.token <= 0 {
		ks.violate(c, Tokens, []*sop{a}, "Acquire #%d was granted token %d; tokens must be positive (above the initial 0).", a.id, a.token)
	}
	for i := range t.open {
		if g := &t.open[i]; g.token == a.token {
			ks.violate(c, Tokens, []*sop{g, a}, "Acquires #%d (client %d) and #%d (client %d) were both granted token %d: a token was reused.", g.id, g.client, a.id, a.client, a.token)
		}
	}
	if t.maxSet && t.max >= a.token {
		m := &t.maxOp
		if t.max == a.token {
			ks.violate(c, Tokens, []*sop{m, a}, "Acquires #%d (client %d) and #%d (client %d) were both granted token %d: a token was reused.", m.id, m.client, a.id, a.client, a.token)
		} else {
			ks.violate(c, Tokens, []*sop{a, m}, "Acquire #%d (client %d) was granted token %d after acquire #%d (client %d) had already been granted the higher token %d: tokens went backwards.",
				a.id, a.client, a.token, m.id, m.client, m.token)
		}
	}
	t.open = append(t.open, *a)
	c.events.push(event{at: a.ret, kind: evReturn, ks: ks, s: *a})
}

func (t *tokState) returned(a *sop) {
	t.open = slices.DeleteFunc(t.open, func(g sop) bool { return g.id == a.id })
	if !t.maxSet || a.token > t.max {
		t.maxSet, t.max, t.maxOp = true, a.token, *a
	}
}

// Mutex, streamed: two holds conflict when each has an op called after the other's
// earliest return (blocks.go), which in real time is: when a hold's earliest return
// passes, no other hold whose earliest return has passed may still be unreleased (or
// released after this one's earliest return). The validity gap and its total come from
// the same holds, as beliefs from the acquire's return to the release's call.
type streamHold struct {
	acq      sop
	rel      sop
	released bool
	end      int64 // the release's call
	due      int64 // the earliest return among its ends
	passed   bool  // due has passed
	started  bool  // the belief began
	next     int64 // when the first other client's belief began during it
	hasNext  bool
}

type muxState struct {
	holding    map[int]*streamHold
	active     []*streamHold // due passed, not released
	beliefs    []*streamHold // believing now
	believers  map[int]int
	nBelievers int
	since      int64
	total      int64
	longest    int64
}

func (m *muxState) init() {
	m.holding = map[int]*streamHold{}
	m.believers = map[int]int{}
}

func (m *muxState) acquire(c *streamChecker, ks *keyState, s *sop) {
	if s.status != history.OK || m.holding[s.client] != nil {
		return // not a grant, or a renewal of the streamHold the client already has
	}
	h := &streamHold{acq: *s, due: s.ret}
	m.holding[s.client] = h
	c.events.push(event{at: h.due, kind: evHoldDue, ks: ks, h: h})
	c.events.push(event{at: s.ret, kind: evBeliefStart, tie: s.client, ks: ks, h: h})
}

func (m *muxState) release(c *streamChecker, ks *keyState, s *sop) {
	h := m.holding[s.client]
	if h == nil {
		return // a release while holding nothing ends nothing
	}
	delete(m.holding, s.client)
	h.rel, h.released, h.end = *s, true, s.call
	if e := releaseEndOf(s); e < h.due {
		h.due = e
		if !h.passed {
			c.events.push(event{at: e, kind: evHoldDue, ks: ks, h: h})
		}
	}
	m.active = slices.DeleteFunc(m.active, func(x *streamHold) bool { return x == h })
	if h.started {
		m.endBelief(h, s.call)
	}
}

func releaseEndOf(s *sop) int64 {
	if s.status == history.Unknown {
		return s.call
	}
	return s.ret
}

// holdDue: h's earliest return has passed.
func (m *muxState) holdDue(c *streamChecker, ks *keyState, h *streamHold) {
	if h.passed {
		return
	}
	h.passed = true
	for _, i := range m.active {
		if !h.released || h.end > i.due {
			ks.violate(c, Mutex, []*sop{&i.acq, &h.acq}, "Client %d (acquire #%d) and client %d (acquire #%d) both believed they held the lock at the same time.",
				i.acq.client, i.acq.id, h.acq.client, h.acq.id)
			break
		}
	}
	if !h.released {
		m.active = append(m.active, h)
	}
}

// beliefStart: h's acquire returned; its client believes it holds the lock.
func (m *muxState) beliefStart(c *streamChecker, ks *keyState, h *streamHold) {
	start := h.acq.ret
	if h.released && h.end <= start {
		return // released before it was granted: no belief
	}
	for _, x := range m.beliefs {
		if !x.hasNext && x.acq.client != h.acq.client {
			x.next, x.hasNext = start, true
		}
	}
	m.sweep(start)
	m.believers[h.acq.client]++
	if m.believers[h.acq.client] == 1 {
		m.nBelievers++
	}
	m.beliefs = append(m.beliefs, h)
	h.started = true
}

func (m *muxState) endBelief(h *streamHold, t int64) {
	m.sweep(t)
	m.believers[h.acq.client]--
	if m.believers[h.acq.client] == 0 {
		m.nBelievers--
	}
	if h.hasNext {
		m.longest = max(m.longest, t-h.next)
	}
	m.beliefs = slices.DeleteFunc(m.beliefs, func(x *streamHold) bool { return x == h })
}

// sweep adds the time since the last event to the total if two clients believed.
func (m *muxState) sweep(t int64) {
	if m.nBelievers >= 2 {
		m.total += t - m.since
	}
	m.since = t
}

// finish ends the beliefs that were never released, at the end of the history.
func (m *muxState) finish(c *streamChecker, ks *keyState) {
	end := max(ks.lastTime, c.faultsEnd) // the key's sub-history's end
	for len(m.beliefs) > 0 {
		m.endBelief(m.beliefs[0], end)
	}
}
