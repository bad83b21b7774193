package models

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/fencecheck/fencecheck/harness/history"
)

// Updates, streamed. The applied writes (ok ones, and unknown ones some ok read saw,
// which then end when that read returned) form chains: each read-modify-write follows
// the write whose value its read returned. The direct analysis checks each chain in
// its order and then that the chains fit one order (pairwise, as blocks.go explains),
// the initial value's chain first; and it names a lost update where an applied write
// returned, after the predecessor of a read-modify-write returned, before that
// read-modify-write was called. In real time, at each applied write's call:
//
//   - a read-modify-write joins its predecessor's chain, which must not already have
//     a successor, must not have been called after it returned, and must not have
//     been replaced: L, the latest call among the applied writes that returned before
//     now, must not come after the predecessor's end;
//   - the chain it joins must not conflict with a chain in effect before now (its
//     earliest end has passed) that has a write called after this chain's earliest
//     end: the chains in effect with the latest calls, two of them, tell;
//   - the initial value's chain must not grow once another chain is in effect.
//
// An applied write that ended before L can no longer be a predecessor (a
// read-modify-write computed from it is a lost update), so it is forgotten. A
// read-modify-write whose predecessor has not been called yet waits for it until it
// ends.

type streamUpdWrite struct {
	op      sop
	end     int64 // ok: its return; unknown and seen: when the first read of it returned
	ch      *chain
	hasSucc bool
	succ    int
}

// chain is a chain of applied writes as one block: the latest call and earliest end
// among its writes. A chain merged into another points to it.
type chain struct {
	end, due     int64
	endOp, dueOp *sop
	initial      bool
	duePassed    bool
	parent       *chain
}

func (ch *chain) root() *chain {
	for ch.parent != nil {
		ch = ch.parent
	}
	return ch
}

// pendRMW is a read-modify-write whose predecessor has not been called yet.
type pendRMW struct {
	w     *streamUpdWrite
	read  recentOp
	lSet  bool
	l     int64
	lOp   *sop
	done  bool
	value string
}

type lostRec struct {
	lu   LostUpdate
	call int64
}

type updState struct {
	vals    map[string]*streamUpdWrite
	byEnd   []*streamUpdWrite // live applied writes, a min-heap by end
	initial *chain
	initSet bool // a read-modify-write was computed from the initial value
	initSuc *sop
	lSet    bool
	l       int64
	lOp     *sop
	pending map[string][]*pendRMW
	best1   *chain // the chains in effect with the latest calls
	best2   *chain
	lost    []lostRec
	lostFor map[int]bool
	lru     *lru[*streamUpdWrite]
	// first is the earliest-called write a violation names, for the finding's ops.
}

func (u *updState) init() {
	u.vals = map[string]*streamUpdWrite{}
	u.pending = map[string][]*pendRMW{}
	u.lostFor = map[int]bool{}
	u.lru = newLRU[*streamUpdWrite](lruSize)
}

func (u *updState) addLost(w *sop, r recentOp, hasRead bool, lost int, format string, args ...any) {
	if u.lostFor[w.id] {
		return
	}
	u.lostFor[w.id] = true
	lu := LostUpdate{Write: w.id, Client: w.client, Lost: lost, Explanation: fmt.Sprintf(format, args...)}
	if hasRead {
		lu.ReadID, lu.ReadValue = r.id, r.value
	}
	u.lost = append(u.lost, lostRec{lu: lu, call: w.call})
	if len(u.lost) > 2*maxListed {
		slices.SortStableFunc(u.lost, func(a, b lostRec) int {
			return cmp.Or(cmp.Compare(a.call, b.call), cmp.Compare(a.lu.Write, b.lu.Write))
		})
		u.lost = u.lost[:maxListed]
	}
}

// write handles a write at its call; only applied writes take part.
func (u *updState) write(c *streamChecker, ks *keyState, s *sop) {
	w := &streamUpdWrite{op: *s, end: s.ret}
	switch s.status {
	case history.OK:
	case history.Unknown:
		rw := ks.reg.vals[s.value]
		if rw == nil || !rw.accepted {
			return
		}
		w.end = max(s.call, rw.seen.ret)
	default:
		return
	}
	o := &w.op
	lSet, l, lOp := u.lSet, u.l, u.lOp
	c.events.push(event{at: w.end, kind: evReturn, ks: ks, op: o, uw: w})
	switch {
	case !o.hasRead:
		w.ch = &chain{end: o.call, due: w.end, endOp: o, dueOp: o}
		c.events.push(event{at: w.end, kind: evChainDue, ks: ks, ch: w.ch})
	default:
		r, _ := c.recentRead(o.readID)
		if r.value == "" {
			u.fromInitial(c, ks, w, r, lSet, lOp)
			break
		}
		if p := u.vals[r.value]; p != nil {
			u.follow(c, ks, w, p, r, lSet, l, lOp)
			break
		}
		if fww, ok := u.lru.get(r.value); ok {
			fw := fww.op
			// Its predecessor was replaced before now: L is past its end.
			ks.violate(c, Updates, []*sop{o, lOp, &fw}, "Write #%d was computed from write #%d's value, but write #%d replaced that value before #%d was called: #%d's update was lost.", o.id, fw.id, lOp.id, o.id, lOp.id)
			u.addLost(o, r, true, lOp.id, "It was computed from write #%d's value, but write #%d replaced that value before #%d was called: #%d's update was lost.", fw.id, lOp.id, o.id, lOp.id)
			w.ch = &chain{end: o.call, due: w.end, endOp: o, dueOp: o}
			break
		}
		if p := ks.reg.writer(r.value); p != nil && (p.status == history.Fail || p.status == history.Rejected) {
			ks.violate(c, Updates, []*sop{o, p}, "Write #%d was computed from value %q of write #%d, which was %s and so never took effect.", o.id, r.value, p.id, p.status)
			u.addLost(o, r, true, 0, "It was computed from value %q of write #%d, which was %s and never took effect.", r.value, p.id, p.status)
			w.ch = &chain{end: o.call, due: w.end, endOp: o, dueOp: o}
			break
		}
		// Its predecessor is yet to be called: wait for it until it ends. It heads a
		// chain of its own meanwhile, which its successors join.
		w.ch = &chain{end: o.call, due: w.end, endOp: o, dueOp: o}
		c.events.push(event{at: w.end, kind: evChainDue, ks: ks, ch: w.ch})
		pr := &pendRMW{w: w, read: r, lSet: lSet, l: l, lOp: lOp, value: r.value}
		u.pending[r.value] = append(u.pending[r.value], pr)
		c.events.push(event{at: w.end, kind: evRMWDeadline, ks: ks, rmw: pr})
	}
	u.vals[o.value] = w
	u.pushEnd(w)
	if prs := u.pending[o.value]; len(prs) > 0 {
		delete(u.pending, o.value)
		for _, pr := range prs {
			if !pr.done {
				pr.done = true
				u.adopt(c, ks, w, pr)
			}
		}
	}
}

// fromInitial: w was computed from the initial value.
func (u *updState) fromInitial(c *streamChecker, ks *keyState, w *streamUpdWrite, r recentOp, lSet bool, lOp *sop) {
	o := &w.op
	if u.initSet {
		ks.violate(c, Updates, []*sop{o, u.initSuc}, "Writes #%d and #%d were both computed from the initial value \"\"; only one of them can have read the latest value, so the other's update was lost.", u.initSuc.id, o.id)
		u.addLost(o, r, true, u.initSuc.id, "It was computed from the initial value \"\", which write #%d had also read and already replaced: #%d's update was lost.", u.initSuc.id, u.initSuc.id)
		w.ch = &chain{end: o.call, due: w.end, endOp: o, dueOp: o}
		return
	}
	u.initSet, u.initSuc = true, o
	if lSet {
		ks.violate(c, Updates, []*sop{o, lOp}, "Write #%d was computed from the initial value \"\", but write #%d replaced that value before #%d was called: #%d's update was lost.", o.id, lOp.id, o.id, lOp.id)
		u.addLost(o, r, true, lOp.id, "It was computed from the initial value \"\", but write #%d replaced that value before #%d was called: #%d's update was lost.", lOp.id, o.id, lOp.id)
	}
	if u.initial == nil {
		u.initial = &chain{end: math.MinInt64, due: math.MaxInt64, initial: true}
	}
	u.join(c, ks, u.initial, w)
}

// follow: w was computed from p's value, p applied and called before it.
func (u *updState) follow(c *streamChecker, ks *keyState, w, p *streamUpdWrite, r recentOp, lSet bool, l int64, lOp *sop) {
	o := &w.op
	if p.hasSucc {
		ks.violate(c, Updates, []*sop{o, &p.op}, "Writes #%d and #%d were both computed from write #%d's value %q; only one of them can have read the latest value, so the other's update was lost.", p.succ, o.id, p.op.id, p.op.value)
		u.addLost(o, r, true, p.succ, "It was computed from write #%d's value %q, which write #%d had also read and already replaced: #%d's update was lost.", p.op.id, p.op.value, p.succ, p.succ)
		w.ch = &chain{end: o.call, due: w.end, endOp: o, dueOp: o}
		return
	}
	p.hasSucc, p.succ = true, o.id
	if lSet && l > p.end {
		ks.violate(c, Updates, []*sop{o, lOp, &p.op}, "Write #%d was computed from write #%d's value, but write #%d replaced that value before #%d was called: #%d's update was lost.", o.id, p.op.id, lOp.id, o.id, lOp.id)
		u.addLost(o, r, true, lOp.id, "It was computed from write #%d's value, but write #%d replaced that value before #%d was called: #%d's update was lost.", p.op.id, lOp.id, o.id, lOp.id)
	}
	u.join(c, ks, p.ch.root(), w)
}

// join adds w, called now, to the end of chain a.
func (u *updState) join(c *streamChecker, ks *keyState, a *chain, w *streamUpdWrite) {
	o := &w.op
	if a.endOp != nil && a.end > w.end {
		ks.violate(c, Updates, []*sop{o, a.endOp}, "Write #%d must follow write #%d (its value was computed, through a chain of reads, from #%d's), but it returned before #%d was called.", o.id, a.endOp.id, a.endOp.id, a.endOp.id)
	}
	if b := u.other(a); b != nil && (a.initial || b.end > a.dueOrEnd(w)) {
		ks.violate(c, Updates, []*sop{o, b.dueOp}, "The accepted writes fit no order in which every read-modify-write directly follows the write it read: write #%d must come after write #%d's chain, but it was called after #%d returned.", b.dueOp.id, o.id, b.dueOp.id)
	}
	if o.call > a.end {
		a.end, a.endOp = o.call, o
	}
	if w.end < a.due {
		a.due, a.dueOp = w.end, o
	}
	w.ch = a
	if a.duePassed {
		u.top(a)
	} else {
		c.events.push(event{at: w.end, kind: evChainDue, ks: ks, ch: a})
	}
}

// dueOrEnd is a's earliest end counting w, which is joining it.
func (a *chain) dueOrEnd(w *streamUpdWrite) int64 { return min(a.due, w.end) }

// other is the chain in effect with the latest call, other than a.
func (u *updState) other(a *chain) *chain {
	for _, b := range []*chain{u.best1, u.best2} {
		if b != nil && b.root() != a {
			return b.root()
		}
	}
	return nil
}

// adopt: pr's predecessor p has just been called (now, by pr's end).
func (u *updState) adopt(c *streamChecker, ks *keyState, p *streamUpdWrite, pr *pendRMW) {
	w := pr.w
	o := &w.op
	if p.hasSucc {
		ks.violate(c, Updates, []*sop{o, &p.op}, "Writes #%d and #%d were both computed from write #%d's value %q; only one of them can have read the latest value, so the other's update was lost.", p.succ, o.id, p.op.id, p.op.value)
		u.addLost(o, pr.read, true, p.succ, "It was computed from write #%d's value %q, which write #%d had also read and already replaced: #%d's update was lost.", p.op.id, p.op.value, p.succ, p.succ)
		return
	}
	p.hasSucc, p.succ = true, o.id
	if pr.lSet && pr.l > p.end {
		ks.violate(c, Updates, []*sop{o, pr.lOp, &p.op}, "Write #%d was computed from write #%d's value, but write #%d replaced that value before #%d was called: #%d's update was lost.", o.id, p.op.id, pr.lOp.id, o.id, pr.lOp.id)
		u.addLost(o, pr.read, true, pr.lOp.id, "It was computed from write #%d's value, but write #%d replaced that value before #%d was called: #%d's update was lost.", p.op.id, pr.lOp.id, o.id, pr.lOp.id)
	}
	// w's chain (w and what followed it) goes after p's, which p, called now, ends.
	a, b := p.ch.root(), w.ch.root()
	if a == b {
		ks.violate(c, Updates, []*sop{o, &p.op}, "Write #%d cannot follow the initial value or any plain write: the values it was computed from lead round in a cycle, so none of them can have been first.", o.id)
		return
	}
	if a.end > b.due {
		ks.violate(c, Updates, []*sop{b.dueOp, a.endOp}, "Write #%d must follow write #%d (its value was computed, through a chain of reads, from #%d's), but it returned before #%d was called.", b.dueOp.id, a.endOp.id, a.endOp.id, a.endOp.id)
	}
	b.parent = a
	if b.end > a.end {
		a.end, a.endOp = b.end, b.endOp
	}
	if b.due < a.due {
		a.due, a.dueOp = b.due, b.dueOp
	}
	if b.duePassed && !a.duePassed {
		a.duePassed = true
	}
	if a.duePassed {
		u.top(a)
	}
	if a.duePassed || a.initial {
		if x := u.other(a); x != nil && (a.initial || x.end > a.due) {
			ks.violate(c, Updates, []*sop{o, x.dueOp}, "The accepted writes fit no order in which every read-modify-write directly follows the write it read: write #%d must come after write #%d's chain, but it was called after #%d returned.", x.dueOp.id, o.id, x.dueOp.id)
		}
	}
}

// top keeps best1 and best2, the chains in effect with the latest calls, after chain
// a (in effect) grew or came into effect.
func (u *updState) top(a *chain) {
	var cs []*chain
	for _, x := range []*chain{a, u.best1, u.best2} {
		if x == nil {
			continue
		}
		if x = x.root(); !slices.Contains(cs, x) {
			cs = append(cs, x)
		}
	}
	slices.SortStableFunc(cs, func(x, y *chain) int { return cmp.Compare(y.end, x.end) })
	u.best1, u.best2 = cs[0], nil
	if len(cs) > 1 {
		u.best2 = cs[1]
	}
}

// chainDue: a chain's earliest end has passed; it is in effect.
func (u *updState) chainDue(ch *chain) {
	a := ch.root()
	if a.duePassed {
		return
	}
	a.duePassed = true
	u.top(a)
}

// writeEnded: applied write w has ended; L may move on, and writes that ended before
// it are forgotten.
func (u *updState) writeEnded(w *streamUpdWrite) {
	if !u.lSet || w.op.call > u.l {
		u.lSet, u.l, u.lOp = true, w.op.call, &w.op
	}
	for len(u.byEnd) > 0 && u.byEnd[0].end < u.l {
		x := u.popEnd()
		if u.vals[x.op.value] == x {
			delete(u.vals, x.op.value)
			u.lru.put(x)
		}
	}
}

// rmwDeadline: pr ended and its predecessor never came.
func (u *updState) rmwDeadline(c *streamChecker, ks *keyState, pr *pendRMW) {
	if pr.done {
		return
	}
	pr.done = true
	o := &pr.w.op
	ks.violate(c, Updates, []*sop{o}, "Write #%d was computed from value %q (read #%d), which no write wrote.", o.id, pr.read.value, pr.read.id)
	u.addLost(o, pr.read, true, 0, "It was computed from value %q, which no write ever wrote.", pr.read.value)
}

func (u *updState) finish(c *streamChecker, ks *keyState) {
	f := ks.findings[Updates]
	if f == nil {
		return
	}
	if len(u.lost) == 0 && len(f.ops) > 0 {
		// Name the write at least, so every violation lists a lost update.
		u.lost = append(u.lost, lostRec{lu: LostUpdate{Write: f.ops[0], Explanation: f.reason}, call: f.at})
	}
	first := slices.MinFunc(u.lost, func(a, b lostRec) int {
		return cmp.Or(cmp.Compare(a.call, b.call), cmp.Compare(a.lu.Write, b.lu.Write))
	})
	f.ops = lostOps(first.lu)
}

func (u *updState) lostList() []lostRec { return u.lost }

func (w *streamUpdWrite) val() string { return w.op.value }

// writer is the applied write of value v the key knows of (live or forgotten), or nil.
func (u *updState) writer(v string) *sop {
	if w := u.vals[v]; w != nil {
		return &w.op
	}
	if w, ok := u.lru.get(v); ok {
		return &w.op
	}
	return nil
}

func (u *updState) pushEnd(w *streamUpdWrite) {
	u.byEnd = append(u.byEnd, w)
	i := len(u.byEnd) - 1
	for i > 0 {
		p := (i - 1) / 2
		if u.byEnd[p].end <= u.byEnd[i].end {
			break
		}
		u.byEnd[i], u.byEnd[p] = u.byEnd[p], u.byEnd[i]
		i = p
	}
}

func (u *updState) popEnd() *streamUpdWrite {
	h := u.byEnd
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h[last] = nil
	h = h[:last]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < last && h[l].end < h[m].end {
			m = l
		}
		if r < last && h[r].end < h[m].end {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	u.byEnd = h
	return top
}
