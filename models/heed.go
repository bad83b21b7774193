package models

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/fencecheck/fencecheck/harness/history"
)

// Heed is the optional property that a client heeds the loss of its lease: once its
// lock client told it that the lease was lost (the history's lost record for that
// client's acquire), the client performs no write under that lease, unless the lock was
// granted to it again in between. A violation is the demoted-leader bug: a holder that
// was told it lost the lock and kept acting as if it held it.
//
// Precisely, a write W violates heed by lost record L (client c, acquire A, token t, at
// T) when W is c's, carries token t, is on A's key, A comes before W (by call, then id),
// and W was called after T (W.call > T), and no ok acquire G of c on that key other than
// A returned between them (T <= G.return < W.call). W's status does not matter: the
// client acted, whatever the resource made of it. A write called at or before T — in
// flight when the loss arrived — does not violate it. The first violating write (by
// call, then id) is reported, with the lost record that makes it one (the earliest, then
// the first in the file).
//
// It is opt-in: checked only when asked for (Options.Select; --fail-on heed for check
// and run), and then only on histories that record lost records. A client that trusts
// its lease by design (the naive lease's unfenced runs, which pause a holder that then
// writes on) ignores the loss, and that is the point those runs make, not a finding
// about them; and lost records, the history format says, decide no verdict unasked. So
// every report, and every expected verdict of the catalogue, stays as it was without
// it. It has no porcupine model: the witness is the write and the acquire, and the
// explanation names the lost record and the times.
const Heed Property = "heed"

type heedProp struct{ noModel }

func (heedProp) name() Property { return Heed }

func (heedProp) doc() string {
	return "A client told that its lease was lost (the history's lost record for its acquire: client, acquire id, token, time) acts no more under that lease: a write of that client with that token on that key, called after the record's time with no ok acquire of that client returning from that time up to the write's call, is a violation, whatever the write's outcome; a write in flight when the loss arrived (called at or before it) is not. A violation is the demoted-leader bug: a holder that kept acting after losing the lock; its witness is the write and the acquire, its explanation names the lost record and the times. Opt-in (a client that trusts its lease by design ignores the loss, so the unfenced pause runs would all violate it): checked only when asked for (--fail-on heed, Options.Select) on a history with lost records; no porcupine model."
}

func (heedProp) core() bool { return false }

func (heedProp) optIn() bool { return true }

func (heedProp) applies(h *history.History) bool { return len(h.Lost) > 0 }

// heedKey is a client and a token: the lease a write is under (the time of a history is ns since the run began; times print as durations).
type heedKey struct {
	client int
	token  int64
}

// heedCase is a violation: write w after lost record lost[idx] of acquire acq.
type heedCase struct {
	w, acq history.Op
	idx    int
	lost   history.Lost
}

// heedReason words a violation; the direct and the streamed analysis share it.
func heedReason(v heedCase) string {
	why := ""
	if v.lost.Reason != "" {
		why = fmt.Sprintf(": %q", Shorten(v.lost.Reason, 120))
	}
	return fmt.Sprintf("Client %d called write #%d (token %d) at %s, after it had been told at %s that its lease from acquire #%d (token %d) was lost (lost[%d]%s), and no new lock was granted to it in between: a demoted holder went on acting.",
		v.w.Client, v.w.ID, v.w.Token, time.Duration(v.w.Call), time.Duration(v.lost.At), v.acq.ID, v.lost.Token, v.idx, why)
}

func heedFinding(v heedCase) Finding {
	return Finding{Violated: true, Ops: []int{v.w.ID, v.acq.ID}, Reason: heedReason(v)}
}

// heedBefore orders ops by call, then id: the order the stream sees them in.
func heedBefore(a, b *history.Op) bool { return a.Call < b.Call || a.Call == b.Call && a.ID < b.ID }

// direct decides heed on one key's sub-history h (h.Lost is the whole history's).
func (heedProp) direct(h *history.History, _ *DirectResult) Finding {
	acq := map[int]*history.Op{}
	grants := map[int][]*history.Op{} // client -> its ok acquires, by return
	for i := range h.Ops {
		o := &h.Ops[i]
		if o.Kind != history.Acquire {
			continue
		}
		acq[o.ID] = o
		if o.Status == history.OK {
			grants[o.Client] = append(grants[o.Client], o)
		}
	}
	for _, gs := range grants {
		slices.SortFunc(gs, func(a, b *history.Op) int { return cmp.Compare(a.End(), b.End()) })
	}
	byLease := map[heedKey][]int{}
	for i, l := range h.Lost {
		if a := acq[l.AcquireID]; a != nil && a.Client == l.Client {
			k := heedKey{l.Client, l.Token}
			byLease[k] = append(byLease[k], i)
		}
	}
	if len(byLease) == 0 {
		return Finding{}
	}
	// grantedBetween: an ok acquire of client c other than a returned in [from, to).
	grantedBetween := func(c int, a *history.Op, from, to int64) bool {
		gs := grants[c]
		i, _ := slices.BinarySearchFunc(gs, from, func(g *history.Op, t int64) int { return cmp.Compare(g.End(), t) })
		for ; i < len(gs) && gs[i].End() < to; i++ {
			if gs[i].ID != a.ID {
				return true
			}
		}
		return false
	}
	var first *heedCase
	for i := range h.Ops {
		w := &h.Ops[i]
		if w.Kind != history.Write || (first != nil && !heedBefore(w, &first.w)) {
			continue
		}
		var best *heedCase
		for _, li := range byLease[heedKey{w.Client, w.Token}] {
			l, a := h.Lost[li], acq[h.Lost[li].AcquireID]
			if !heedBefore(a, w) || l.At >= w.Call || grantedBetween(w.Client, a, l.At, w.Call) {
				continue
			}
			if best == nil || l.At < best.lost.At || l.At == best.lost.At && li < best.idx {
				best = &heedCase{w: *w, acq: *a, idx: li, lost: l}
			}
		}
		if best != nil {
			first = best
		}
	}
	if first == nil {
		return Finding{}
	}
	return heedFinding(*first)
}

// heedIndex is what a stream's keys share: the lost records by acquire, and the
// clients that have any.
type heedIndex struct {
	lost    []history.Lost
	byAcq   map[int][]int
	clients map[int]bool
}

// heedLease is a lost record whose acquire the key has seen: from then on its
// client's writes under its token are checked against it.
type heedLease struct {
	idx      int
	acq      sop
	minGrant int64 // the earliest return, at or after the loss, of another grant to the client
}

// heedStream is heed on one key of a streamed history.
type heedStream struct {
	x       *heedIndex
	leases  map[heedKey][]*heedLease
	held    map[int][]*heedLease // by client
	grants  map[int][]sop        // the ok acquires of the clients with lost records
	decided bool
}

func (heedProp) streamKey(c *streamChecker, _ *keyState) keyStream {
	x := c.shared(Heed, func() any {
		x := &heedIndex{lost: c.hdr.Lost, byAcq: map[int][]int{}, clients: map[int]bool{}}
		for i, l := range c.hdr.Lost {
			x.byAcq[l.AcquireID] = append(x.byAcq[l.AcquireID], i)
			x.clients[l.Client] = true
		}
		return x
	}).(*heedIndex)
	return &heedStream{x: x, leases: map[heedKey][]*heedLease{}, held: map[int][]*heedLease{}, grants: map[int][]sop{}}
}

func (hs *heedStream) op(c *streamChecker, ks *keyState, s *sop) error {
	if hs.decided {
		return nil
	}
	switch s.kind {
	case history.Acquire:
		if s.status == history.OK && hs.x.clients[s.client] {
			for _, l := range hs.held[s.client] {
				if s.id != l.acq.id && s.ret >= hs.x.lost[l.idx].At {
					l.minGrant = min(l.minGrant, s.ret)
				}
			}
			hs.grants[s.client] = append(hs.grants[s.client], *s)
		}
		for _, i := range hs.x.byAcq[s.id] {
			lost := hs.x.lost[i]
			if lost.Client != s.client {
				continue
			}
			l := &heedLease{idx: i, acq: *s, minGrant: history.Infinity}
			for _, g := range hs.grants[s.client] {
				if g.id != s.id && g.ret >= lost.At {
					l.minGrant = min(l.minGrant, g.ret)
				}
			}
			k := heedKey{s.client, lost.Token}
			hs.leases[k] = append(hs.leases[k], l)
			hs.held[s.client] = append(hs.held[s.client], l)
		}
	case history.Write:
		var best *heedLease
		for _, l := range hs.leases[heedKey{s.client, s.token}] {
			at := hs.x.lost[l.idx].At
			if at >= s.call || l.minGrant < s.call {
				continue // in flight when the loss came, or granted again since
			}
			if best == nil || at < hs.x.lost[best.idx].At || at == hs.x.lost[best.idx].At && l.idx < best.idx {
				best = l
			}
		}
		if best != nil {
			hs.decided = true
			w, a := s.op(), best.acq.op()
			ks.violate(c, Heed, []*sop{s, &best.acq}, "%s", heedReason(heedCase{w: w, acq: a, idx: best.idx, lost: hs.x.lost[best.idx]}))
		}
	}
	return nil
}

func (*heedStream) finish(*streamChecker, *keyState) {}

// unproven: heed needs a grant, as the mutex does (a history with lost records has
// acquires).
func (heedProp) unproven(h *history.History, ops int, ev Evidence) (Reason, string) {
	if reason, why := gap(h, ops, ev); reason == ReasonNoOps || reason == ReasonNoGrant {
		return reason, why
	}
	return "", ""
}

func (heedProp) held(Evidence) string {
	return "No client wrote under a lease after it had been told that lease was lost, without being granted the lock again first."
}

func (heedProp) untested() string { return "no client could have gone on after losing its lease" }
