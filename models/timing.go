package models

import (
	"cmp"
	"math"
	"math/bits"
	"slices"

	"github.com/fencecheck/fencecheck/harness/history"
)

// Lock timing (docs/checker.md, "Lock timing"): how long a superseded holder took to
// notice that it had lost the lock, how long the lock sat with a holder that had stopped
// making progress before someone else took over, and how fast the lock is granted. None
// of it decides a verdict.
//
// A hold is an ok acquire and the release that ends it (holds: the pairing the mutex
// analysis uses); it lasts from the acquire's return A to the release's call E, or to the
// end of the history when there is none (whatever the release's status: by its call the
// client has stopped believing it holds the lock). A hold is superseded when another
// hold of the same key begins — its acquire returns — at S with A < S < E; S is the
// earliest such return. The holder noticed when a lost record names the hold's acquire
// (the earliest one counts): its notice delay is max(0, lost.at - S). Its takeover time is
// S minus its last progress: the latest return, no later than S, of an ok write of the
// holder on the key between its acquire and its release (in call order), or A when there
// is none. Its overshoot, when the holder recorded its own validity estimate (valid_until
// on the hold's acquire or on its writes between its acquire and its release, in call
// order; the latest counts as V), is max(0, V - S).

// maxExact is how many durations a durations keeps exactly; beyond it they are counted
// in a log-linear histogram, and its percentiles are within 1/histSub of the truth.
const maxExact = 1 << 16

// histBits: a histogram bucket spans 1/2^histBits of its power of two.
const (
	histBits = 7
	histSub  = 1 << histBits
)

// durations collects non-negative durations for their percentiles and maximum, in
// memory that does not grow past maxExact values: exactly while there are at most
// maxExact, in a histogram beyond. The percentiles depend only on the values, never on
// the order they came in, so the in-memory and the streaming analyses agree.
type durations struct {
	exact []int64
	hist  []int64 // bucket counts, once over maxExact
	n     int
	max   int64
}

func (d *durations) add(v int64) {
	v = max(v, 0)
	d.n++
	d.max = max(d.max, v)
	if d.hist == nil {
		d.exact = append(d.exact, v)
		if len(d.exact) <= maxExact {
			return
		}
		d.hist = make([]int64, (64-histBits+1)*histSub)
		for _, x := range d.exact {
			d.hist[bucket(x)]++
		}
		d.exact = nil
		return
	}
	d.hist[bucket(v)]++
}

// percentile is the nearest-rank percentile p (0..100): exact while the values are
// kept, otherwise the upper end of the histogram bucket that holds it (no more than the
// maximum). 0 with no values.
func (d *durations) percentile(p float64) int64 {
	if d.n == 0 {
		return 0
	}
	if d.hist == nil {
		s := slices.Clone(d.exact)
		slices.Sort(s)
		return Percentile(s, p)
	}
	rank := min(max(int(p/100*float64(d.n)+0.999999), 1), d.n)
	seen := int64(0)
	for i, c := range d.hist {
		if seen += c; seen >= int64(rank) {
			return min(bucketTop(i), d.max)
		}
	}
	return d.max
}

// bucket is v's histogram bucket: v itself below histSub, then histSub buckets per
// power of two.
func bucket(v int64) int {
	if v < histSub {
		return int(v)
	}
	e := bits.Len64(uint64(v)) - 1 // 2^e <= v < 2^(e+1), e >= histBits
	shift := e - histBits
	return (shift+1)*histSub + int(v>>shift) - histSub
}

// bucketTop is the largest value of bucket i.
func bucketTop(i int) int64 {
	if i < histSub {
		return int64(i)
	}
	shift := i/histSub - 1
	m := uint64(i%histSub + histSub) // the bucket's values are m<<shift .. (m+1)<<shift - 1
	top := (m+1)<<shift - 1          // wraps to the largest uint64 in the last bucket
	if top > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(top)
}

// Percentile is the nearest-rank percentile p (0..100) of sorted samples (0 when
// none): the one percentile function of fencecheck (judge.Percentile is it too).
func Percentile(sorted []int64, p float64) int64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p/100*float64(len(sorted))+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// lockTiming is what the lock-timing figures are made of, before they are read out
// into the evidence (fill).
type lockTiming struct {
	superseded, noticed int
	delays              durations // of noticed supersessions
	takeover            int64
	overshoot           int64
	estimated           int
	acquires            durations // latencies of ok acquires
	grants              int
	firstCall, lastRet  int64
	anyOp, anyRet       bool
}

// op notes what every op adds: the history's span, and an ok acquire's latency.
func (t *lockTiming) op(kind history.Kind, status history.Status, call, ret int64) {
	if !t.anyOp || call < t.firstCall {
		t.firstCall = call
	}
	t.anyOp = true
	if ret != history.Infinity {
		if !t.anyRet || ret > t.lastRet {
			t.lastRet = ret
		}
		t.anyRet = true
	}
	if kind == history.Acquire && status == history.OK && ret != history.Infinity {
		t.grants++
		t.acquires.add(ret - call)
	}
}

// supersession notes a superseded hold: superseded at s, its last progress at progress,
// its earliest lost record at lost (when noticed), its holder's latest validity estimate
// at valid (0: none recorded).
func (t *lockTiming) supersession(s, progress, lost int64, noticed bool, valid int64) {
	t.superseded++
	t.takeover = max(t.takeover, s-progress)
	if valid > 0 {
		t.estimated++
		t.overshoot = max(t.overshoot, valid-s)
	}
	if noticed {
		t.noticed++
		t.delays.add(lost - s)
	}
}

// fill writes the figures into ev.
func (t *lockTiming) fill(ev *Evidence) {
	ev.Superseded, ev.Noticed, ev.NeverNoticed = t.superseded, t.noticed, t.superseded-t.noticed
	ev.NoticeDelayNanos, ev.NoticeDelayP50Nanos = t.delays.max, t.delays.percentile(50)
	ev.TakeoverNanos = t.takeover
	ev.OvershootNanos, ev.Estimated = t.overshoot, t.estimated
	ev.AcquireP50Nanos, ev.AcquireP99Nanos = t.acquires.percentile(50), t.acquires.percentile(99)
	ev.GrantsPerSecond = 0
	if span := t.lastRet - t.firstCall; t.anyRet && span > 0 {
		ev.GrantsPerSecond = float64(t.grants) / (float64(span) / 1e9)
	}
}

// earliestLost maps each acquire id to the earliest lost record naming it.
func earliestLost(lost []history.Lost) map[int]int64 {
	out := make(map[int]int64, len(lost))
	for _, l := range lost {
		if at, ok := out[l.AcquireID]; !ok || l.At < at {
			out[l.AcquireID] = l.At
		}
	}
	return out
}

// timingOf measures the lock timing of h, whose key parts are parts (splitByKey), in
// O(n log n).
func timingOf(h *history.History, parts []keyPart) lockTiming {
	var t lockTiming
	for _, o := range h.Ops {
		t.op(o.Kind, o.Status, o.Call, o.End())
	}
	lost := earliestLost(h.Lost)
	for _, p := range parts {
		partTiming(&t, p.h, lost)
	}
	return t
}

// partTiming adds the supersessions of one key's sub-history.
func partTiming(t *lockTiming, h *history.History, lost map[int]int64) {
	hs := holds(h)
	if len(hs) < 2 {
		return
	}
	// Each client's ok writes in call order, for its progress during a hold.
	before := func(a, b *history.Op) int { return cmp.Or(cmp.Compare(a.Call, b.Call), cmp.Compare(a.ID, b.ID)) }
	writes := map[int][]*history.Op{}
	for i := range h.Ops {
		if o := &h.Ops[i]; o.Kind == history.Write && o.Status == history.OK && o.Return != nil {
			writes[o.Client] = append(writes[o.Client], o)
		}
	}
	for _, ws := range writes {
		slices.SortFunc(ws, before)
	}
	// Each client's writes that carry a validity estimate, in call order.
	estimates := map[int][]*history.Op{}
	for i := range h.Ops {
		if o := &h.Ops[i]; o.Kind == history.Write && o.ValidUntil > 0 {
			estimates[o.Client] = append(estimates[o.Client], o)
		}
	}
	for _, es := range estimates {
		slices.SortFunc(es, before)
	}
	starts := make([]int64, len(hs))
	for i, hd := range hs {
		starts[i] = hd.acq.End()
	}
	slices.Sort(starts)
	for _, hd := range hs {
		a, e := hd.acq.End(), int64(history.Infinity)
		if hd.rel != nil {
			e = hd.rel.Call
		}
		// The earliest hold to begin after this one did. No hold of the same client can
		// begin before this one ends (its next acquire comes after this release), so
		// if it began before E, another client was granted the lock.
		j, _ := slices.BinarySearch(starts, a+1)
		if j == len(starts) || starts[j] >= e {
			continue
		}
		s := starts[j]
		progress := a
		ws := writes[hd.acq.Client]
		k, _ := slices.BinarySearchFunc(ws, hd.acq, before)
		for ; k < len(ws) && (hd.rel == nil || before(ws[k], hd.rel) < 0); k++ {
			if w := ws[k]; *w.Return <= s {
				progress = max(progress, *w.Return)
			}
		}
		valid := hd.acq.ValidUntil
		es := estimates[hd.acq.Client]
		k, _ = slices.BinarySearchFunc(es, hd.acq, before)
		for ; k < len(es) && (hd.rel == nil || before(es[k], hd.rel) < 0); k++ {
			valid = max(valid, es[k].ValidUntil)
		}
		at, noticed := lost[hd.acq.ID]
		t.supersession(s, progress, at, noticed, valid)
	}
}
