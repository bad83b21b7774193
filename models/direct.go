package models

import (
	"cmp"
	"slices"
	"sync"

	"github.com/fencecheck/fencecheck/harness/history"
)

// Finding is the direct analysis's answer for one property.
type Finding struct {
	Violated bool `json:"violated"`
	// Ops are the op ids of a minimal witness when violated.
	Ops []int `json:"ops,omitempty"`
	// Reason says in a sentence what cannot be explained.
	Reason string `json:"reason,omitempty"`
	// Key is the key whose sub-history the witness ops belong to.
	Key string `json:"key,omitempty"`
}

// DirectResult is the outcome of the direct analysis.
type DirectResult struct {
	// Findings has one entry per property.
	Findings    map[Property]Finding `json:"findings"`
	StaleWrites []StaleWrite         `json:"stale_writes"`
	LostUpdates []LostUpdate         `json:"lost_updates"`
	Evidence    Evidence             `json:"evidence"`
}

// Violated reports whether the direct analysis found p violated.
func (d *DirectResult) Violated(p Property) bool { return d.Findings[p].Violated }

// Direct analyses h without porcupine, in O(n log n): for every property whether it is
// violated (it agrees with porcupine on every history; the property test holds it to
// that), plus the stale writes, lost updates and evidence a report explains things
// with. h should be valid (history.Validate); on an invalid history the answers are
// best effort.
func Direct(h *history.History) *DirectResult {
	return directByKey(h, nil) // keys.go: one analysis per independent key
}

// directSelect is Direct with the opt-in properties sel asked for too.
func directSelect(h *history.History, sel []Property) *DirectResult { return directByKey(h, sel) }

// directSingle is the direct analysis of a single-key history by the plug-ins plugs.
func directSingle(h *history.History, plugs []checker) *DirectResult {
	// The analyses are independent: on a large history, run them side by side (on a
	// small one, or one key of many, goroutines would cost more than they save). Each
	// fills only its own lists of d.
	d := &DirectResult{Findings: make(map[Property]Finding, len(plugs))}
	findings := make([]Finding, len(plugs))
	var wg sync.WaitGroup
	for i, p := range plugs {
		if len(h.Ops) >= 50_000 && i < len(plugs)-1 {
			wg.Go(func() { findings[i] = p.direct(h, d) })
		} else {
			findings[i] = p.direct(h, d)
		}
	}
	wg.Wait()
	for i, p := range plugs {
		d.Findings[p.name()] = findings[i]
	}
	if d.StaleWrites == nil {
		d.StaleWrites = []StaleWrite{}
	}
	if d.LostUpdates == nil {
		d.LostUpdates = []LostUpdate{}
	}
	d.Evidence = evidence(h, d.StaleWrites)
	return d
}

// evidence counts what the report needs to show whether the fault bit and what it cost.
func evidence(h *history.History, stale []StaleWrite) Evidence {
	var ev Evidence
	for _, s := range stale {
		if s.Status == statusRejected {
			ev.StaleRejected++
		} else {
			ev.StaleAccepted++
		}
	}
	ev.StaleAttempted = ev.StaleRejected + ev.StaleAccepted
	ev.FirstAcquireError = firstAcquireError(h)
	for _, o := range h.Ops {
		switch o.Kind {
		case history.Write:
			ev.Writes++
			switch o.Status {
			case history.OK:
				ev.WritesAccepted++
			case history.Rejected:
				ev.WritesRefused++
			case history.Unknown:
				ev.WritesUnknown++
			case history.Fail:
				ev.WritesFailed++
			}
		case history.Acquire:
			if o.Status == history.OK {
				ev.Grants++
			} else {
				ev.AcquireFailed++
			}
		}
	}
	ev.ValidityGapNanos, ev.ValidityGapTotalNanos = validityGap(h)
	ev.LongestNoAcceptedWriteNanos = longestNoAcceptedWrite(h)
	return ev
}

// firstAcquireError is the error of the earliest failed acquire (by call, then id) that
// records one: the streaming analysis meets it first too.
func firstAcquireError(h *history.History) string {
	var first *history.Op
	for i := range h.Ops {
		o := &h.Ops[i]
		if o.Kind != history.Acquire || o.Status == history.OK || o.Error == "" {
			continue
		}
		if first == nil || o.Call < first.Call || o.Call == first.Call && o.ID < first.ID {
			first = o
		}
	}
	if first == nil {
		return ""
	}
	return first.Error
}

// validityGap measures how long two clients both believed they held the lock. A client
// believes from its acquire's return to its release's call (or the end of the history).
// It returns the validity gap — the longest time a client went on believing it held the
// lock after another client's belief began — and the total time during which at least
// two clients believed.
func validityGap(h *history.History) (longest, total int64) {
	type belief struct {
		client     int
		start, end int64
	}
	end := h.LastTime()
	var bs []belief
	for _, hd := range holds(h) {
		b := belief{client: hd.acq.Client, start: hd.acq.End(), end: end}
		if hd.rel != nil {
			b.end = hd.rel.Call
		}
		if b.end > b.start {
			bs = append(bs, b)
		}
	}
	slices.SortFunc(bs, func(a, b belief) int { return cmp.Compare(a.start, b.start) })

	// Longest gap: a client still believes it holds the lock after another client's
	// belief began (its lease was taken over). For belief b that is b.end minus the start
	// of the next belief to begin after it: a client's own beliefs never overlap, so if
	// that one began before b ended, it belongs to another client.
	for i, b := range bs {
		for _, n := range bs[i+1:] {
			if n.start >= b.end {
				break
			}
			if n.client != b.client {
				longest = max(longest, b.end-n.start)
				break
			}
		}
	}

	// Total: sweep the starts and ends, counting clients that currently believe.
	type event struct {
		at     int64
		client int
		delta  int
	}
	var evs []event
	for _, b := range bs {
		evs = append(evs, event{b.start, b.client, +1}, event{b.end, b.client, -1})
	}
	slices.SortFunc(evs, func(a, b event) int { return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.delta, b.delta)) })
	active := map[int]int{}
	believers := 0
	var since int64
	for _, e := range evs {
		if believers >= 2 {
			total += e.at - since
		}
		since = e.at
		before := active[e.client]
		active[e.client] += e.delta
		switch {
		case before == 0 && active[e.client] > 0:
			believers++
		case before > 0 && active[e.client] == 0:
			believers--
		}
	}
	return longest, total
}

// longestNoAcceptedWrite is the longest stretch without an accepted write: from the
// first write's call to the first accepted return, between consecutive accepted returns,
// and from the last accepted return to the last write's call. With no accepted write it
// is the whole span from the first write's call to the end of the history.
func longestNoAcceptedWrite(h *history.History) int64 {
	var accepted []int64
	firstCall, lastCall := int64(-1), int64(-1)
	for _, o := range h.Ops {
		if o.Kind != history.Write {
			continue
		}
		if firstCall < 0 || o.Call < firstCall {
			firstCall = o.Call
		}
		lastCall = max(lastCall, o.Call)
		if o.Status == history.OK && o.Return != nil {
			accepted = append(accepted, *o.Return)
		}
	}
	if firstCall < 0 {
		return 0
	}
	if len(accepted) == 0 {
		return h.LastTime() - firstCall
	}
	slices.Sort(accepted)
	longest := max(0, accepted[0]-firstCall, lastCall-accepted[len(accepted)-1])
	for i := 1; i < len(accepted); i++ {
		longest = max(longest, accepted[i]-accepted[i-1])
	}
	return longest
}
