package models

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/fencecheck/fencecheck/harness/history"
)

// The streaming analysis decides what the direct analysis decides, reading the history
// once, in call order, in memory that grows with the ops in flight and the unknown ops
// rather than with the history (docs/checker.md, "Streaming"). Each property's
// condition is restated in real time: a sweep over calls in order, with the returns
// that precede each call applied first (an op returning at t precedes a call at t' > t
// only: equal times are concurrent, as for porcupine and the direct analysis). What a
// later op can no longer legitimately refer to is forgotten; an op that refers to it
// anyway is a violation either way, so forgetting never changes a verdict.
//
// It needs the ops in call order (up to the reordering its look-ahead window allows),
// ids increasing in the file, and each write's read_id naming a recent read; it reports
// errNeedsMemory otherwise, and CheckFile then checks the history in memory.

// sop is an op as the streaming analysis keeps it, sharing no memory with the decoder.
type sop struct {
	id      int
	client  int
	kind    history.Kind
	status  history.Status
	call    int64
	ret     int64 // history.Infinity when it never returned
	token   int64
	value   string
	readID  int
	hasRead bool
	key     string
	valid   int64 // the op's valid_until (0: none)
}

func toSop(o *history.Op) sop {
	s := sop{id: o.ID, client: o.Client, kind: o.Kind, status: o.Status, call: o.Call, ret: o.End(), token: o.Token, value: o.Value, key: o.Key, valid: o.ValidUntil}
	if o.ReadID != nil {
		s.readID, s.hasRead = *o.ReadID, true
	}
	return s
}

// op turns s back into a history op.
func (s *sop) op() history.Op {
	o := history.Op{ID: s.id, Client: s.client, Kind: s.kind, Call: s.call, Status: s.status, Token: s.token, Value: s.value, Key: s.key, ValidUntil: s.valid}
	if s.ret != history.Infinity {
		r := s.ret
		o.Return = &r
	}
	if s.hasRead {
		r := s.readID
		o.ReadID = &r
	}
	return o
}

// seenInfo is what the analysis knows, when it reaches an unknown write, about the ok
// reads that returned its value: the one that returned first.
type seenInfo struct {
	seen bool
	ret  int64
	read int
}

func (s *seenInfo) add(ret int64, read int) {
	if !s.seen || ret < s.ret {
		s.seen, s.ret, s.read = true, ret, read
	}
}

var (
	// errNeedsMemory: the history is not in the shape the streaming analysis needs;
	// check it in memory.
	errNeedsMemory = errors.New("the streaming check needs this history in memory")
	// errLateSeen: an unknown write's value was read after the look-ahead window had
	// passed it; the streaming analysis is run again with every unknown write's readers
	// collected first.
	errLateSeen = errors.New("an unknown write's value was read beyond the look-ahead window")
)

// Event kinds, in the order events at the same time are handled: returns first (they
// establish what every later decision sees), then the decisions.
const (
	evReturn = iota
	evHoldDue
	evBeliefStart
	evChainDue
	evRejectDecision
	evRacedDecision
	evReadDeadline
	evRMWDeadline
)

type event struct {
	at   int64
	kind int
	tie  int // beliefs starting together: by client, as the direct analysis orders them
	seq  uint64
	ks   *keyState
	op   *sop
	s    sop // the op, when the event carries it (a read resolved at its call, a grant)
	pr   *pendRead
	w    *regWrite
	x    *refusal
	h    *streamHold
	ch   *chain
	rmw  *pendRMW
	uw   *streamUpdWrite
}

func (a *event) less(b *event) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	if a.kind != b.kind {
		return a.kind < b.kind
	}
	if a.tie != b.tie {
		return a.tie < b.tie
	}
	return a.seq < b.seq
}

// eventHeap is a binary min-heap of events. The events stay put in a slab (reused
// through a free list); the heap orders their indexes, so that sifting moves no
// pointers (and no write barriers run while the collector marks).
type eventHeap struct {
	idx  []int32
	slab []event
	free []int32
	seq  uint64
}

func (h *eventHeap) len() int { return len(h.idx) }

// top is the earliest event's time.
func (h *eventHeap) top() int64 { return h.slab[h.idx[0]].at }

func (h *eventHeap) less(i, j int) bool { return h.slab[h.idx[i]].less(&h.slab[h.idx[j]]) }

func (h *eventHeap) push(e event) {
	h.seq++
	e.seq = h.seq
	var k int32
	if n := len(h.free); n > 0 {
		k = h.free[n-1]
		h.free = h.free[:n-1]
		h.slab[k] = e
	} else {
		k = int32(len(h.slab))
		h.slab = append(h.slab, e)
	}
	h.idx = append(h.idx, k)
	i := len(h.idx) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		h.idx[i], h.idx[p] = h.idx[p], h.idx[i]
		i = p
	}
}

// pop removes the earliest event into e.
func (h *eventHeap) pop(e *event) {
	k := h.idx[0]
	*e = h.slab[k]
	h.slab[k] = event{}
	h.free = append(h.free, k)
	last := len(h.idx) - 1
	h.idx[0] = h.idx[last]
	h.idx = h.idx[:last]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < last && h.less(l, m) {
			m = l
		}
		if r < last && h.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		h.idx[i], h.idx[m] = h.idx[m], h.idx[i]
		i = m
	}
}

// keyState is the analysis of one key (independent lock and register).
type keyState struct {
	key      string
	lastTime int64 // the latest time its ops record
	reg      streamReg
	upd      updState
	tok      tokState
	mux      muxState
	tim      timingKey
	wit      witnessState
	findings map[Property]*streamFinding
	streams  []keyStream // the plug-ins' streaming forms on the key (nil: none)
}

// streamFinding is a property's first violation on a key.
type streamFinding struct {
	ops    []int
	reason string
	at     int64 // when it was found, for the witness window
}

// violate records p's first violation on the key: the ops refs name (the finding's
// ops, and what its witness needs) and the reason.
func (ks *keyState) violate(c *streamChecker, p Property, refs []*sop, format string, args ...any) {
	if ks.findings[p] != nil {
		return
	}
	var ops []int
	for _, r := range refs {
		if r != nil && !slices.Contains(ops, r.id) {
			ops = append(ops, r.id)
		}
	}
	f := &streamFinding{ops: ops, reason: fmt.Sprintf(format, args...), at: c.now}
	ks.findings[p] = f
	if p.HasModel() { // a witness for porcupine to certify
		ks.wit.begin(c, ks, p, f, refs)
	}
}

// recentOp is what validating a read_id needs to know of an op.
type recentOp struct {
	id     int
	client int
	kind   history.Kind
	status history.Status
	key    string
	value  string
}

// streamChecker is one streaming analysis.
type streamChecker struct {
	// plugins are the properties decided per key that apply to the history, as far as
	// its header says (a rerun knows its effects and lost records); hdr is that header.
	plugins []checker
	hdr     *history.History
	sel     []Property // the opt-in properties asked for
	// common is the state each plug-in keeps for the whole stream, rather than per key
	// (shared).
	common  map[Property]any
	fence   string
	noToken string
	keys    map[string]*keyState
	order   []*keyState
	lastKey *keyState
	// lastRead is the read the current op's read_id names; lastReadOf each client's
	// last read decoded.
	lastRead   recentOp
	lastReadOf map[int]recentOp
	events     eventHeap
	now        int64
	// seenAll, in a second run, maps every unknown write (key, value) to its first
	// reader; nil in a first run, which looks ahead instead (ahead).
	seenAll map[keyValue]seenInfo
	ahead   func(key, value string) seenInfo

	ev             Evidence
	lastTime       int64
	ops            int
	lastID         int
	firstWriteCall int64
	lastWriteCall  int64
	prevAccepted   int64
	firstAccepted  int64
	longestNoAcc   int64
	anyAccepted    bool
	recent         []recentOp // the last ops, for read_id
	recentNext     int
	lastOp         int
	faultsEnd      int64 // the latest time the faults record
	decodedAny     bool
	effects        *effectIndex
	lost           *lostIndex
	tim            lockTiming
	lostAt         map[int]int64 // each acquire's earliest lost record (earliestLost)
	err            error
}

type keyValue struct{ key, value string }

// recentOps is how many ops the stream keeps for read_ids: the look-ahead window and
// as many again, so a write's read_id may name a read that far back.
const recentOps = 2 * lookAhead

func newStreamChecker(hdr *history.History, sel []Property) *streamChecker {
	run := hdr.Run
	fence := run.Fence
	if fence == "" {
		fence = history.FenceStrict
	}
	return &streamChecker{
		plugins: keyedPlugins(hdr, sel), hdr: hdr, sel: sel,
		fence: fence, noToken: run.NoToken, keys: map[string]*keyState{},
		firstWriteCall: -1, lastWriteCall: -1, lastOp: -1,
		recent: make([]recentOp, 0, 1024),
	}
}

func (c *streamChecker) key(k string) *keyState {
	if c.lastKey != nil && c.lastKey.key == k {
		return c.lastKey
	}
	ks := c.keys[k]
	if ks == nil {
		ks = &keyState{key: k, findings: map[Property]*streamFinding{}}
		ks.reg.init(c)
		ks.upd.init()
		ks.mux.init()
		ks.wit.init()
		ks.streams = make([]keyStream, len(c.plugins))
		for i, p := range c.plugins {
			ks.streams[i] = p.streamKey(c, ks)
		}
		c.keys[k] = ks
		c.order = append(c.order, ks)
	}
	c.lastKey = ks
	return ks
}

// shared is the state plug-in p keeps for the whole stream (an index of the header's
// records, say), made by mk the first time a key asks for it.
func (c *streamChecker) shared(p Property, mk func() any) any {
	if v, ok := c.common[p]; ok {
		return v
	}
	if c.common == nil {
		c.common = map[Property]any{}
	}
	v := mk()
	c.common[p] = v
	return v
}

// advance handles every event before time t.
func (c *streamChecker) advance(t int64) {
	var e event
	for c.events.len() > 0 && c.events.top() < t {
		c.events.pop(&e)
		c.handle(&e)
	}
}

func (c *streamChecker) handle(e *event) {
	ks := e.ks
	switch e.kind {
	case evReturn:
		c.returned(ks, e)
	case evHoldDue:
		ks.mux.holdDue(c, ks, e.h)
	case evBeliefStart:
		ks.mux.beliefStart(c, ks, e.h)
	case evChainDue:
		ks.upd.chainDue(e.ch)
	case evRejectDecision:
		ks.reg.decide(c, ks, e.x)
	case evRacedDecision:
		ks.reg.racedDone(e.x)
	case evReadDeadline:
		ks.reg.readDeadline(c, ks, e.pr)
	case evRMWDeadline:
		ks.upd.rmwDeadline(c, ks, e.rmw)
	}
}

// returned handles an op's return.
func (c *streamChecker) returned(ks *keyState, e *event) {
	o := e.op
	if o == nil {
		o = &e.s
	}
	switch o.kind {
	case history.Read:
		ks.reg.readReturned(c, ks, &e.s, e.w, e.pr)
	case history.Write:
		if e.uw != nil {
			ks.upd.writeEnded(e.uw)
			return
		}
		if o.status == history.OK {
			c.acceptedReturn(o.ret)
		}
		ks.reg.writeReturned(c, ks, e.w)
	case history.Acquire:
		ks.tok.returned(o)
	}
}

// acceptedReturn tracks the longest stretch without an accepted write (returns come
// in time order).
func (c *streamChecker) acceptedReturn(t int64) {
	if !c.anyAccepted {
		c.anyAccepted, c.firstAccepted = true, t
	} else {
		c.longestNoAcc = max(c.longestNoAcc, t-c.prevAccepted)
	}
	c.prevAccepted = t
}

// add analyses the next op in call order. o may be reused after it returns.
func (c *streamChecker) add(o *history.Op) error {
	if c.err != nil {
		return c.err
	}
	if c.ops > 0 && (o.Call < c.now || o.Call == c.now && o.ID < c.lastOp) {
		return fmt.Errorf("%w: op %d is called before op %d, which the look-ahead window had already passed", errNeedsMemory, o.ID, c.lastOp)
	}
	c.advance(o.Call)
	c.now, c.lastOp = o.Call, o.ID
	c.ops++
	s := toSop(o)
	last := s.call
	if s.ret != history.Infinity {
		last = max(last, s.ret)
	}
	c.lastTime = max(c.lastTime, last)
	if err := c.checkRefs(&s); err != nil {
		c.err = err
		return err
	}
	if s.kind == history.Read {
		// The read a write names is almost always its client's last one.
		if c.lastReadOf == nil {
			c.lastReadOf = map[int]recentOp{}
		}
		c.lastReadOf[s.client] = recentOp{id: s.id, client: s.client, kind: s.kind, status: s.status, key: s.key, value: s.value}
	}
	ks := c.key(s.key)
	ks.lastTime = max(ks.lastTime, last)
	ks.wit.record(&s)
	switch s.kind { // the evidence
	case history.Write:
		c.countWrite(&s)
	case history.Acquire:
		if s.status == history.OK {
			c.ev.Grants++
		} else {
			c.ev.AcquireFailed++
			if c.ev.FirstAcquireError == "" && o.Error != "" {
				c.ev.FirstAcquireError = o.Error // ops come in (call, id) order
			}
		}
	}
	for _, st := range ks.streams { // the properties, in the list's order
		if st == nil {
			continue
		}
		if err := st.op(c, ks, &s); err != nil {
			c.err = err
			return err
		}
	}
	if s.kind == history.Write && c.effects != nil {
		c.effects.write(c, &s)
	}
	c.tim.op(s.kind, s.status, s.call, s.ret)
	ks.tim.op(c, &s)
	if c.lost != nil {
		c.lost.op(&s)
	}
	if c.effects != nil {
		c.effects.op(&s)
	}
	return c.err
}

func (c *streamChecker) countWrite(s *sop) {
	c.ev.Writes++
	switch s.status {
	case history.OK:
		c.ev.WritesAccepted++
	case history.Rejected:
		c.ev.WritesRefused++
	case history.Unknown:
		c.ev.WritesUnknown++
	case history.Fail:
		c.ev.WritesFailed++
	}
	if c.firstWriteCall < 0 || s.call < c.firstWriteCall {
		c.firstWriteCall = s.call
	}
	c.lastWriteCall = max(c.lastWriteCall, s.call)
}

// decoded notes op o as the decoder hands it over, in file order: ids must increase
// there (that is how the stream knows they are unique), and the last recentOps ops are
// kept for the read_ids that name them.
func (c *streamChecker) decoded(o *history.Op) error {
	if c.decodedAny && o.ID <= c.lastID {
		return fmt.Errorf("%w: op ids do not increase (op %d after op %d)", errNeedsMemory, o.ID, c.lastID)
	}
	c.decodedAny, c.lastID = true, o.ID
	ro := recentOp{id: o.ID, client: o.Client, kind: o.Kind, status: o.Status, key: o.Key}
	if o.Kind == history.Read {
		ro.value = o.Value
	}
	if len(c.recent) < recentOps {
		c.recent = append(c.recent, ro)
	} else {
		c.recent[c.recentNext] = ro
		c.recentNext = (c.recentNext + 1) % recentOps
	}
	return nil
}

// checkRefs validates a write's read_id as Validate does, within what the stream
// keeps: a read_id naming an op later in the file, or further back than recentOps,
// needs the history in memory.
func (c *streamChecker) checkRefs(s *sop) error {
	if !s.hasRead {
		return nil
	}
	r, ok := c.lastReadOf[s.client], true
	if r.id != s.readID || r.kind != history.Read {
		r, ok = c.findRecent(s.readID)
	}
	c.lastRead = r
	if ok && r.kind == history.Read && r.client == s.client && r.status == history.OK && r.key == s.key {
		return nil // the usual case, without building the ops CheckReadID words errors with
	}
	o := s.op()
	if !ok {
		if s.readID > c.lastID {
			return fmt.Errorf("%w: op %d's read_id names op %d, which comes later in the file", errNeedsMemory, s.id, s.readID)
		}
		if len(c.recent) == recentOps && s.readID < c.recent[c.recentNext].id {
			return fmt.Errorf("%w: op %d's read_id names op %d, further back than the streaming check holds", errNeedsMemory, s.id, s.readID)
		}
		return o.CheckReadID(nil)
	}
	ro := history.Op{ID: r.id, Client: r.client, Kind: r.kind, Status: r.status, Key: r.key, Value: r.value}
	return o.CheckReadID(&ro)
}

// findRecent finds a recent op by id (ids increase, so the ring is sorted from
// recentNext on).
func (c *streamChecker) findRecent(id int) (recentOp, bool) {
	n := len(c.recent)
	at := func(i int) recentOp { return c.recent[(c.recentNext+i)%n] }
	lo, hi := 0, n
	for lo < hi {
		m := (lo + hi) / 2
		if at(m).id < id {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < n && at(lo).id == id {
		return at(lo), true
	}
	return recentOp{}, false
}

// recentRead returns the read the current write's read_id names (checkRefs found it).
func (c *streamChecker) recentRead(int) (recentOp, bool) { return c.lastRead, true }

// seen is what the analysis knows about the readers of unknown write s when it reaches
// it: the readers before it (the reads no live write explained) and, ahead, the ones
// the look-ahead window holds (or, in a second run, every one).
func (c *streamChecker) seen(ks *keyState, s *sop) seenInfo {
	var si seenInfo
	if c.seenAll != nil {
		return c.seenAll[keyValue{s.key, s.value}]
	}
	for _, r := range ks.reg.unresolved[s.value] {
		si.add(r.op.ret, r.op.id)
	}
	if c.ahead != nil {
		if a := c.ahead(s.key, s.value); a.seen {
			si.add(a.ret, a.read)
		}
	}
	return si
}

// finish handles every remaining event; the history ends at lastTime, and a key's
// sub-history at its own last time or the faults' (the caller has set faultsEnd).
func (c *streamChecker) finish() {
	c.advance(math.MaxInt64)
	var e event
	for c.events.len() > 0 {
		c.events.pop(&e)
		c.handle(&e)
	}
	for _, ks := range c.order {
		for _, st := range ks.streams {
			if st != nil {
				st.finish(c, ks)
			}
		}
		ks.tim.finish(c)
	}
}

// result assembles the direct analysis's result.
func (c *streamChecker) result() *DirectResult {
	slices.SortFunc(c.order, func(a, b *keyState) int { return cmp.Compare(a.key, b.key) })
	multi := len(c.order) > 1
	d := &DirectResult{Findings: map[Property]Finding{}, StaleWrites: []StaleWrite{}, LostUpdates: []LostUpdate{}}
	ev := c.ev
	var lost []lostRec
	for _, ks := range c.order {
		for _, pl := range c.plugins {
			p := pl.name()
			f := ks.findings[p]
			if f == nil || d.Findings[p].Violated {
				continue
			}
			fd := Finding{Violated: true, Ops: f.ops, Reason: f.reason}
			if multi {
				fd.Reason = fmt.Sprintf("Key %q: %s", ks.key, f.reason)
				fd.Key = ks.key
			}
			d.Findings[p] = fd
		}
		sr, sa := ks.reg.staleCounts()
		ev.StaleRejected += sr
		ev.StaleAccepted += sa
		d.StaleWrites = append(d.StaleWrites, ks.reg.staleList()...)
		lost = append(lost, ks.upd.lostList()...)
		ev.ValidityGapNanos = max(ev.ValidityGapNanos, ks.mux.longest)
		ev.ValidityGapTotalNanos += ks.mux.total
	}
	if p := Tokens; c.noToken != "" {
		d.Findings[p] = analyzeTokens(&history.History{Run: history.Run{NoToken: c.noToken}})
	}
	for _, p := range c.plugins {
		if _, ok := d.Findings[p.name()]; !ok {
			d.Findings[p.name()] = Finding{}
		}
	}
	ev.StaleAttempted = ev.StaleRejected + ev.StaleAccepted
	switch {
	case c.firstWriteCall < 0:
	case !c.anyAccepted:
		ev.LongestNoAcceptedWriteNanos = c.lastTime - c.firstWriteCall
	default:
		ev.LongestNoAcceptedWriteNanos = max(c.longestNoAcc, c.firstAccepted-c.firstWriteCall, c.lastWriteCall-c.prevAccepted, 0)
	}
	c.tim.fill(&ev)
	d.Evidence = ev
	slices.SortFunc(d.StaleWrites, func(a, b StaleWrite) int { return cmp.Or(cmp.Compare(a.At, b.At), cmp.Compare(a.Write, b.Write)) })
	if len(d.StaleWrites) > maxListed {
		d.StaleWrites = d.StaleWrites[:maxListed]
	}
	slices.SortStableFunc(lost, func(a, b lostRec) int {
		return cmp.Or(cmp.Compare(a.call, b.call), cmp.Compare(a.lu.Write, b.lu.Write))
	})
	for i, l := range lost {
		if i == maxListed {
			break
		}
		d.LostUpdates = append(d.LostUpdates, l.lu)
	}
	return d
}

// maxListed is how many stale writes and lost updates a streamed report lists (the
// evidence counts every one).
const maxListed = 1000
