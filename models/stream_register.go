package models

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/fencecheck/fencecheck/harness/history"
)

// The register, streamed. The direct analysis orders the accepted writes by token and
// checks that the blocks (a write and the reads of its value) follow one another; in
// real time that is: once an op of a block with token T has returned, no op of a block
// with a lower token may be called afterwards, and no write with a token that fails
// against T may be accepted. So the analysis keeps F, the highest token known to be in
// the register by now — from the returns of accepted writes and of reads, and from
// refusals (a write refused at t needs a token it fails against in place by then) —
// and checks every read (token >= F; = F only if it is F's own block, or under a
// monotonic fence one of its class) and every accepted write (token passes F) at its
// call. A refusal needs, when it returns and F does not explain it yet, a write called
// by then with a token it fails against (the candidates); the one with the lowest token
// explains it, provided no accepted write with a token in between is called later (a
// forbidden range). Under a monotonic fence ties are a class whose blocks must follow
// one another in some order (pairwise, as blocks.go explains) and a refusal explained
// by a class waits until the class is complete to see whether one of its candidates can
// go first.
//
// A write whose token is below the highest token in effect (an accepted write or a
// read of one has returned) is forgotten: a read of its value, a write with its token,
// are violations whatever it was.

// regWrite is a write as the streamed register sees it, and for an accepted write its
// block: the write and the reads of its value.
type regWrite struct {
	op       sop
	accepted bool // ok, or unknown and read by someone
	optional bool // unknown and read by no one: it may apply or not
	seen     seenInfo
	// The block: latest call and earliest return among the write and its reads.
	end, due int64
	// Their ops, copied (a pointer into a read would keep it, and through it older
	// writes, alive).
	endOp, dueOp sop
	inEffect     bool // an op of the block has returned
	reads        int
}

// pendRead is an ok read, from its call until its return.
type pendRead struct {
	op     sop
	w      *regWrite // the write whose value it returned, once known
	b1, b2 *regWrite // the two newest writes in effect at its call, for staleWrites
	dead   bool      // its return passed with no write of its value: a violation
	forgot bool      // its value is a forgotten write's
}

// refusal is a refused write waiting for its decision.
type refusal struct {
	op    sop
	th    int64       // a write refused needs a stored token >= th
	cands []*regWrite // the accepted candidates of its class (monotonic), or all (witness)
	first *sop
	hit   *regWrite // racing: the earliest accepted write with a token it fails against
}

// forbidden says no accepted write called from now on may carry a token in [lo, hi):
// refusal x is explained only by a write with a higher token in place by its return.
type forbidden struct {
	lo, hi int64
	x      *refusal
}

type staleRec struct {
	w      sop
	newer  *regWrite
	seenBy int
	direct bool
}

type streamReg struct {
	fSet bool
	f    int64 // the highest token known to be stored by now
	fOp  sop   // the op that showed it
	vals map[string]*regWrite
	// byTok is the live writes sorted by token (for forgetting and candidates).
	byTok []*regWrite
	// acc1 and accN are the live accepted writes by token (ties, classes): acc1 the one
	// of a token, accN every one of a token that has more (class gives either).
	acc1       map[int64]*regWrite
	accN       map[int64][]*regWrite
	one        [1]*regWrite
	unresolved map[string][]*pendRead
	unseen     map[string]bool // unknown writes taken as read by no one
	forbidden  []forbidden
	classWait  map[int64][]*refusal
	best1      *regWrite // the accepted writes in effect with the highest tokens
	best2      *regWrite
	stale      map[int]*staleRec
	raced      []*refusal
	lru        *lru[*regWrite]
}

func (r *streamReg) init(c *streamChecker) {
	r.vals = map[string]*regWrite{}
	r.acc1 = map[int64]*regWrite{}
	r.accN = map[int64][]*regWrite{}
	r.unresolved = map[string][]*pendRead{}
	r.unseen = map[string]bool{}
	r.classWait = map[int64][]*refusal{}
	r.stale = map[int]*staleRec{}
	r.lru = newLRU[*regWrite](lruSize)
}

// lruSize is how many forgotten writes a key remembers at least, for explanations and
// witnesses (a read or a read-modify-write of an older one is a violation all the same,
// worded without its write).
const lruSize = 1 << 12

// earlyText says what set F: "write #n (token t) returned" and the like.
func (r *streamReg) earlyText() string {
	o := &r.fOp
	switch {
	case o.kind == history.Read:
		return fmt.Sprintf("read #%d saw token %d and returned", o.id, o.token)
	case o.status == history.Rejected:
		return fmt.Sprintf("write #%d (token %d) was refused, which needs a token it fails against in place", o.id, o.token)
	}
	return fmt.Sprintf("write #%d (token %d) returned", o.id, o.token)
}

func (r *streamReg) monotonic(c *streamChecker) bool { return c.fence == history.FenceMonotonic }

// read handles an ok read at its call.
func (r *streamReg) read(c *streamChecker, ks *keyState, o *sop) {
	if o.value == "" {
		switch {
		case o.token != 0:
			ks.violate(c, Register, []*sop{o}, "Read #%d returned the initial empty value with token %d, but the initial token is 0.", o.id, o.token)
		case r.fSet:
			ks.violate(c, Register, []*sop{o, &r.fOp}, "Read #%d returned the initial empty value although it was called after %s.", o.id, r.earlyText())
		}
		return
	}
	if c.seenAll == nil && r.unseen[o.value] {
		c.err = errLateSeen
		return
	}
	w := r.vals[o.value]
	if r.fSet && o.token < r.f {
		if w != nil && w.op.token == o.token {
			ks.violate(c, Register, []*sop{&w.op, &r.fOp, o}, "Read #%d still saw write #%d (client %d, token %d) although it was called after %s: the token went backwards, a stale write got through.", o.id, w.op.id, w.op.client, w.op.token, r.earlyText())
		} else {
			ks.violate(c, Register, []*sop{o, &r.fOp}, "Read #%d returned value %q with token %d although it was called after %s: the token went backwards, a stale write got through.", o.id, o.value, o.token, r.earlyText())
		}
	}
	if w != nil {
		// Resolved at once: its return needs only what the event carries.
		pr := pendRead{op: *o, b1: r.best1, b2: r.best2}
		r.resolve(c, ks, &pr, w)
		c.events.push(event{at: o.ret, kind: evReturn, ks: ks, s: *o, w: pr.w})
		return
	}
	// Its write is called later (while it runs), or was forgotten: its return tells.
	pr := &pendRead{op: *o, b1: r.best1, b2: r.best2}
	r.unresolved[o.value] = append(r.unresolved[o.value], pr)
	c.events.push(event{at: o.ret, kind: evReadDeadline, ks: ks, pr: pr})
	c.events.push(event{at: o.ret, kind: evReturn, ks: ks, s: *o, pr: pr})
}

// checkRead checks a read against the write of its value; it reports whether the read
// belongs to the write's block.
func (r *streamReg) checkRead(c *streamChecker, ks *keyState, pr *pendRead, w *regWrite) bool {
	o := &pr.op
	switch {
	case w.op.status == history.Fail || w.op.status == history.Rejected:
		ks.violate(c, Register, []*sop{o, &w.op}, "Read #%d returned value %q of write #%d, which was %s and so never took effect.", o.id, o.value, w.op.id, w.op.status)
		return false
	case w.op.token != o.token:
		ks.violate(c, Register, []*sop{o, &w.op}, "Read #%d returned value %q with token %d, but write #%d wrote it with token %d.", o.id, o.value, o.token, w.op.id, w.op.token)
		return false
	case w.optional:
		c.err = errLateSeen
		return false
	}
	return true
}

// resolve joins read pr to the block of w, the write of its value.
func (r *streamReg) resolve(c *streamChecker, ks *keyState, pr *pendRead, w *regWrite) {
	if !r.checkRead(c, ks, pr, w) {
		return
	}
	pr.w = w
	o := &pr.op
	w.reads++
	defer func() { pr.b1, pr.b2 = nil, nil }() // only the query below needs them
	r.classPairs(c, ks, w, o)
	if o.call > w.end {
		w.end, w.endOp = o.call, *o
	}
	// The earliest return; on a tie the write's own, then the first read in the file,
	// as the direct analysis names it.
	if o.ret < w.due || o.ret == w.due && w.dueOp.kind == history.Read && o.id < w.dueOp.id {
		w.due, w.dueOp = o.ret, *o
	}
	r.staleRead(c, pr, w)
}

// staleRead: read pr saw accepted write w; staleWrites lists w if it was older than a
// write already in effect when the read was called.
func (r *streamReg) staleRead(c *streamChecker, pr *pendRead, w *regWrite) {
	newer := pr.b1
	if newer == w {
		newer = pr.b2
	}
	if newer != nil && !history.Passes(c.fence, w.op.token, newer.op.token) {
		if _, ok := r.stale[w.op.id]; !ok {
			r.stale[w.op.id] = &staleRec{w: w.op, newer: newer, seenBy: pr.op.id}
		}
	}
}

// classPairs checks, under a monotonic fence, that op o (called now) of w's block
// leaves the blocks of w's class an order: a block of the class that was in effect
// before o was called must go before w's, so it must not have an op called after w's
// block was in effect.
func (r *streamReg) classPairs(c *streamChecker, ks *keyState, w *regWrite, o *sop) {
	if !r.monotonic(c) {
		return
	}
	for _, b := range r.class(w.op.token) {
		if b == w {
			continue
		}
		if b.due < o.call && b.end > w.due {
			ks.violate(c, Register, []*sop{&b.op, &w.op, o, &b.endOp}, "Write #%d and write #%d (token %d) fit no order: an op of each was called after the other's had returned (#%d and #%d).", b.op.id, w.op.id, w.op.token, o.id, b.endOp.id)
			return
		}
	}
}

// readDeadline: read pr returned, and no write of its value was called while it ran:
// it returned the value of a write forgotten before it was called (whose token is
// below F, so the read was already found stale at its call, unless it named another
// token), or of a write not called yet, or of none.
func (r *streamReg) readDeadline(c *streamChecker, ks *keyState, pr *pendRead) {
	if pr.w != nil || pr.dead {
		return
	}
	o := &pr.op
	if fw, ok := r.lru.get(o.value); ok {
		pr.forgot = true
		prs := slices.DeleteFunc(r.unresolved[o.value], func(x *pendRead) bool { return x == pr })
		if len(prs) == 0 {
			delete(r.unresolved, o.value)
		} else {
			r.unresolved[o.value] = prs
		}
		if r.checkRead(c, ks, pr, fw) && fw.accepted {
			r.staleRead(c, pr, fw)
		}
		return
	}
	pr.dead = true
	ks.violate(c, Register, []*sop{o}, "Read #%d returned value %q, which no write had written by the time it returned.", o.id, o.value)
}

// readReturned: an ok read's return shows its token stored, if it belongs to the block
// of w (the write of its value), or of the write its pending read pr found.
func (r *streamReg) readReturned(c *streamChecker, ks *keyState, o *sop, w *regWrite, pr *pendRead) {
	if pr != nil {
		w = pr.w
	}
	if w == nil {
		return
	}
	r.raise(c, ks, o.token, o)
	r.inEffect(c, ks, w)
}

// writeReturned: an ok write's return shows its token stored.
func (r *streamReg) writeReturned(c *streamChecker, ks *keyState, w *regWrite) {
	r.raise(c, ks, w.op.token, &w.op)
	r.inEffect(c, ks, w)
}

// raise sets F to t if that is higher, closing the monotonic classes below it.
func (r *streamReg) raise(c *streamChecker, ks *keyState, t int64, by *sop) {
	if r.fSet && t <= r.f {
		return
	}
	r.fSet, r.f, r.fOp = true, t, *by
	if len(r.classWait) > 0 {
		var done []int64
		for m := range r.classWait {
			if m < t {
				done = append(done, m)
			}
		}
		slices.Sort(done)
		for _, m := range done {
			r.closeClass(c, ks, m)
		}
	}
	// A forbidden range below F is enforced by F itself.
	r.forbidden = slices.DeleteFunc(r.forbidden, func(fb forbidden) bool {
		if r.monotonic(c) {
			return fb.hi <= r.f
		}
		return fb.hi <= r.f+1
	})
}

// inEffect notes that w's block has an op that returned: w is in effect, and older
// writes can be forgotten.
func (r *streamReg) inEffect(c *streamChecker, ks *keyState, w *regWrite) {
	if w.inEffect {
		return
	}
	w.inEffect = true
	// The highest token; on a tie the one in effect first, then the first written (the
	// direct analysis's order).
	better := func(a, b *regWrite) bool {
		return b == nil || a.op.token > b.op.token || a.op.token == b.op.token && (a.due < b.due || a.due == b.due && a.op.id < b.op.id)
	}
	switch {
	case better(w, r.best1):
		r.best1, r.best2 = w, r.best1
	case better(w, r.best2):
		r.best2 = w
	}
	r.forget(c, r.best1.op.token)
}

// forget drops the live writes with tokens below t.
func (r *streamReg) forget(c *streamChecker, t int64) {
	n := 0
	for n < len(r.byTok) && r.byTok[n].op.token < t {
		w := r.byTok[n]
		if r.vals[w.op.value] == w {
			delete(r.vals, w.op.value)
		}
		if w.accepted {
			r.unclass(w)
		}
		r.lru.put(w)
		n++
	}
	if n > 0 { // move the live ones down, so that the slice keeps its room
		k := copy(r.byTok, r.byTok[n:])
		clear(r.byTok[k:])
		r.byTok = r.byTok[:k]
	}
}

// write handles a write at its call (every status).
func (r *streamReg) write(c *streamChecker, ks *keyState, o *sop) error {
	if dup := r.vals[o.value]; dup != nil {
		oo := o.op()
		return history.DuplicateValue(&oo, dup.op.id)
	}
	w := &regWrite{op: *o, end: o.call, due: o.ret}
	w.endOp, w.dueOp = *o, *o
	switch o.status {
	case history.OK:
		w.accepted = true
	case history.Unknown:
		w.seen = c.seen(ks, o)
		if w.seen.seen {
			w.accepted = true
		} else {
			w.optional = true
			if c.seenAll == nil {
				r.unseen[o.value] = true
			}
		}
	}
	r.vals[o.value] = w // first: a witness of what accept finds looks it up
	if w.accepted {
		r.accept(c, ks, w)
	}
	if o.status == history.Rejected {
		r.refused(c, ks, w)
	}
	i := sort.Search(len(r.byTok), func(i int) bool { return r.byTok[i].op.token > o.token })
	r.byTok = slices.Insert(r.byTok, i, w)
	// The reads that returned its value before it was called, or while it was.
	if prs := r.unresolved[o.value]; len(prs) > 0 {
		delete(r.unresolved, o.value)
		for _, pr := range prs {
			if !pr.dead {
				r.resolve(c, ks, pr, w)
			}
		}
	}
	if w.accepted && o.status == history.OK {
		c.events.push(event{at: o.ret, kind: evReturn, ks: ks, op: &w.op, w: w})
	}
	return nil
}

// accept checks an accepted write at its call.
func (r *streamReg) accept(c *streamChecker, ks *keyState, w *regWrite) {
	o := &w.op
	t := o.token
	if !history.Passes(c.fence, t, 0) {
		ks.violate(c, Register, []*sop{o}, "Write #%d was accepted with token %d, which does not pass the fence over the initial token 0.", o.id, t)
	}
	if r.fSet && !history.Passes(c.fence, t, r.f) {
		ks.violate(c, Register, []*sop{o, &r.fOp}, "Write #%d (client %d, token %d) was accepted although it was called after %s: a stale write got through.", o.id, o.client, t, r.earlyText())
	}
	if tie := r.acc1[t]; c.fence != history.FenceMonotonic && tie != nil {
		ks.violate(c, Register, []*sop{&tie.op, o}, "Writes #%d and #%d were both accepted with token %d; a strict fence accepts a token only once.", tie.op.id, o.id, t)
	}
	for _, fb := range r.forbidden {
		if fb.lo <= t && t < fb.hi {
			x := &fb.x.op
			ks.violate(c, Register, append([]*sop{x, o}, sops(fb.x.cands)...), "Write #%d (token %d) was refusal, but no write with a token it fails against can have taken effect before it returned (the first, write #%d, could not go before then): the fence refused a write it should have accepted.", x.id, x.token, o.id)
			break
		}
	}
	r.classPairs(c, ks, w, o)
	r.enclass(w)
	// staleWrites: an ok write called after a newer accepted write was in effect.
	if o.status == history.OK {
		newer := r.best1
		if newer != nil && !history.Passes(c.fence, t, newer.op.token) {
			r.stale[o.id] = &staleRec{w: *o, newer: newer, direct: true}
		}
	}
	// A refusal waiting for a racing newer write.
	for _, x := range r.raced {
		if x.op.ret > o.call && !history.Passes(c.fence, x.op.token, t) {
			if x.hit == nil || o.call < x.hit.op.call || o.call == x.hit.op.call && t < x.hit.op.token {
				x.hit = w
			}
		}
	}
}

// refused handles a refusal write at its call.
func (r *streamReg) refused(c *streamChecker, ks *keyState, w *regWrite) {
	o := &w.op
	x := &refusal{op: *o}
	// staleWrites: refused because of a newer write in effect, or racing one.
	if b := r.best1; b != nil && !history.Passes(c.fence, o.token, b.op.token) {
		r.stale[o.id] = &staleRec{w: *o, newer: b, direct: true}
	} else {
		for _, v := range r.byTok {
			if v.accepted && v.op.call < o.ret && !history.Passes(c.fence, o.token, v.op.token) {
				if x.hit == nil || v.op.call < x.hit.op.call || v.op.call == x.hit.op.call && v.op.token < x.hit.op.token {
					x.hit = v
				}
			}
		}
		r.raced = append(r.raced, x)
		c.events.push(event{at: o.ret, kind: evRacedDecision, ks: ks, x: x})
	}
	if c.fence == history.FenceOwner || !history.Passes(c.fence, o.token, 0) {
		return // an owner guard's refusal needs no reason; one over the initial 0 has it
	}
	x.th = o.token
	if c.fence == history.FenceMonotonic {
		x.th = o.token + 1
	}
	c.events.push(event{at: o.ret, kind: evRejectDecision, ks: ks, x: x})
}

// racedDone: refusal x returned; a newer accepted write called before then raced it.
func (r *streamReg) racedDone(x *refusal) {
	r.raced = slices.DeleteFunc(r.raced, func(y *refusal) bool { return y == x })
	if x.hit != nil {
		if _, ok := r.stale[x.op.id]; !ok {
			r.stale[x.op.id] = &staleRec{w: x.op, newer: x.hit, direct: true}
		}
	}
}

// decide: refusal x returned; every op called by then has been seen.
func (r *streamReg) decide(c *streamChecker, ks *keyState, x *refusal) {
	if r.fSet && r.f >= x.th {
		return // F shows a token it fails against in place by now
	}
	// The candidates: writes called by its return with a token it fails against.
	i := sort.Search(len(r.byTok), func(i int) bool { return r.byTok[i].op.token >= x.th })
	var m int64 = math.MinInt64
	var acc, opt []*regWrite
	for _, w := range r.byTok[i:] {
		if !w.accepted && !w.optional || w.op.call > x.op.ret {
			continue
		}
		if m == math.MinInt64 {
			m = w.op.token
		}
		if w.op.token != m {
			break
		}
		if w.accepted {
			acc = append(acc, w)
		} else {
			opt = append(opt, w)
		}
	}
	if m == math.MinInt64 {
		ks.violate(c, Register, []*sop{&x.op}, "Write #%d (token %d) was refusal, but no write with a token it fails against ever took effect before it returned: the fence refused a write it should have accepted.", x.op.id, x.op.token)
		return
	}
	x.cands = append(append([]*regWrite(nil), acc...), opt...)
	mono := c.fence == history.FenceMonotonic
	switch {
	case !mono && len(acc) > 0: // the lowest accepted token explains it
		x.first = &acc[0].op
		r.forbid(x, x.th, m)
	case !mono: // an unknown write read by no one, which an accepted tie would void
		x.first = &opt[0].op
		r.forbid(x, x.th, m+1)
	case len(opt) > 0: // monotonic: an unknown write, applied before its class
		x.first = &opt[0].op
		r.forbid(x, x.th, m)
	default: // monotonic: one of its class must be able to go first
		x.first = &acc[0].op
		r.forbid(x, x.th, m)
		r.classWait[m] = append(r.classWait[m], x)
	}
	r.raise(c, ks, x.th, &x.op)
}

func (r *streamReg) forbid(x *refusal, lo, hi int64) {
	if lo < hi {
		r.forbidden = append(r.forbidden, forbidden{lo: lo, hi: hi, x: x})
	}
}

// closeClass: no more writes can join class m, so the refusals it was to explain are
// decided: one of their candidates must be able to go first in it.
func (r *streamReg) closeClass(c *streamChecker, ks *keyState, m int64) {
	xs := r.classWait[m]
	delete(r.classWait, m)
	class := slices.Clone(r.class(m))
	for _, x := range xs {
		ok := false
		for _, y := range x.cands {
			first := true
			for _, b := range class {
				if b != y && y.end > b.due {
					first = false
					break
				}
			}
			if first {
				ok = true
				break
			}
		}
		if !ok {
			ks.violate(c, Register, append([]*sop{&x.op}, sops(x.cands)...), "Write #%d (token %d) was refusal, but no write with a token it fails against can have taken effect before it returned (the first, write #%d, could not go before then): the fence refused a write it should have accepted.", x.op.id, x.op.token, x.first.id)
		}
	}
}

func (r *streamReg) finish(c *streamChecker, ks *keyState) {
	var ms []int64
	for m := range r.classWait {
		ms = append(ms, m)
	}
	slices.Sort(ms)
	for _, m := range ms {
		r.closeClass(c, ks, m)
	}
	for _, x := range r.raced {
		r.racedDone(x)
	}
}

func (r *streamReg) staleCounts() (refusal, accepted int) {
	for _, s := range r.stale {
		if s.w.status == history.Rejected {
			refusal++
		} else {
			accepted++
		}
	}
	return refusal, accepted
}

func (r *streamReg) staleList() []StaleWrite {
	out := make([]StaleWrite, 0, len(r.stale))
	for _, s := range r.stale {
		n := s.newer
		sw := StaleWrite{
			Write: s.w.id, Client: s.w.client, Token: s.w.token, At: s.w.call, Status: statusAccepted,
			Newer: n.op.id, NewerClient: n.op.client, NewerToken: n.op.token, NewerAt: n.due,
		}
		if n.dueOp.id != n.op.id {
			sw.NewerSeenBy = n.dueOp.id
		}
		if s.w.status == history.Rejected {
			sw.Status = statusRejected
		}
		if !s.direct {
			sw.SeenBy = s.seenBy
		}
		out = append(out, sw)
	}
	slices.SortFunc(out, func(a, b StaleWrite) int { return cmp.Or(cmp.Compare(a.At, b.At), cmp.Compare(a.Write, b.Write)) })
	return out
}

func sops(ws []*regWrite) []*sop {
	out := make([]*sop, len(ws))
	for i, w := range ws {
		out[i] = &w.op
	}
	return out
}

// class is the live accepted writes with token t (valid until the next change).
func (r *streamReg) class(t int64) []*regWrite {
	if ws, ok := r.accN[t]; ok {
		return ws
	}
	if w := r.acc1[t]; w != nil {
		r.one[0] = w
		return r.one[:]
	}
	return nil
}

func (r *streamReg) enclass(w *regWrite) {
	t := w.op.token
	switch first := r.acc1[t]; {
	case first == nil:
		r.acc1[t] = w
	case r.accN[t] == nil:
		r.accN[t] = []*regWrite{first, w}
	default:
		r.accN[t] = append(r.accN[t], w)
	}
}

func (r *streamReg) unclass(w *regWrite) {
	t := w.op.token
	if ws, ok := r.accN[t]; ok {
		ws = slices.DeleteFunc(ws, func(x *regWrite) bool { return x == w })
		r.acc1[t] = ws[0]
		if len(ws) == 1 {
			delete(r.accN, t)
		} else {
			r.accN[t] = ws
		}
		return
	}
	if r.acc1[t] == w {
		delete(r.acc1, t)
	}
}

// writer is the write of value v the register knows of (live or forgotten), or nil.
func (r *streamReg) writer(v string) *sop {
	if w := r.vals[v]; w != nil {
		return &w.op
	}
	if w, ok := r.lru.get(v); ok {
		return &w.op
	}
	return nil
}

// lru remembers the last lruSize forgotten writes, newest last; a lookup by value scans
// it (lookups are rare: a read or a read-modify-write of a value no live write wrote).
type lru[W interface{ val() string }] struct {
	ring []W
	next int
	n    int
}

func newLRU[W interface{ val() string }](n int) *lru[W] { return &lru[W]{n: n} }

func (l *lru[W]) put(w W) {
	if len(l.ring) < l.n {
		l.ring = append(l.ring, w)
		return
	}
	l.ring[l.next] = w
	l.next = (l.next + 1) % l.n
}

func (l *lru[W]) get(v string) (W, bool) {
	for i := len(l.ring) - 1; i >= 0; i-- {
		if w := l.ring[(l.next+i)%len(l.ring)]; w.val() == v {
			return w, true
		}
	}
	var zero W
	return zero, false
}

func (w *regWrite) val() string { return w.op.value }
