package models

import (
	"cmp"
	"container/heap"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/fencecheck/fencecheck/harness/history"
)

// The simulator produces histories the way a real run does: clients issue operations
// against a lock service and a register, each operation takes effect at one point of
// its interval, in a sequential execution of a possibly broken system. Without bugs the
// register, tokens and mutex histories it records are linearizable by construction
// (up to lease expiry for mutex); each bug breaks one of them. Lease expiry and pauses
// produce stale writes, lost updates and overlapping holds as in the real harness.

type simConfig struct {
	clients int
	// ops is how many operations the clients issue in all (final reads come on top).
	ops        int
	finalReads bool
	fence      string
	// cycles: each client loops acquire → read → write (with read_id) → release.
	// Otherwise each op's kind is drawn from kindWeights (acquire, release, read, write).
	cycles      bool
	kindWeights [4]int
	rmw         float64 // in random mode, how often a write carries read_id

	unit     int64 // ns per time unit
	maxDur   int64 // op durations are 0..maxDur units
	maxThink int64
	ttl      int64   // lease length, units
	pause    float64 // probability of a pause between read and write
	pauseLen int64   // units
	backoff  int64   // extra units to wait after an acquire that did not succeed

	unknown    float64 // probability an op ends unknown
	delay      int64   // an unknown op may take effect up to this many units after its call
	fail       float64 // probability an op fails with no effect
	tokenNoise float64 // probability a write carries a token other than its lease's
	tokenRange int64   // if > 0, every write carries a token drawn from 0..tokenRange
	// rogue: probability a client whose acquire failed goes on with its old token, as
	// a client that trusts its own clock does
	rogue float64

	// bugs: per-op probabilities
	unfenced       float64 // accept a write the fence should refuse
	spuriousReject float64 // refuse a write the fence should accept
	staleRead      float64 // return an older state
	tokenReuse     float64 // grant an old token
	grantWhileHeld float64 // grant a held, unexpired lock

	// keys > 1: independent locks and registers; in cycles mode each client picks a key
	// per critical section, and ops carry it (key "k0".."k<keys-1>").
	keys int
}

// simKeyState is one key's lock service and register (see simulator.useKey).
type simKeyState struct {
	cur     simState
	states  []simState
	holder  int
	expiry  int64
	counter int64
}

type simEvent struct {
	at    int64
	order int // at equal times: effects (0) before returns (1) before calls (2)
	tie   uint64
	op    int // index into ops, or -1 - client for a call
}

type eventQueue []simEvent

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	a, b := q[i], q[j]
	if a.at != b.at {
		return a.at < b.at
	}
	if a.order != b.order {
		return a.order < b.order
	}
	return a.tie < b.tie
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(simEvent)) }
func (q *eventQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

type simClient struct {
	phase    int // cycles: 0 acquire, 1 read, 2 write, 3 release
	token    int64
	lastRead int // id of the client's latest ok read, 0 if none
	writes   int
	pauseNow bool
	done     bool
	key      int // the key of its current critical section (keys > 1)
}

type simState struct {
	value string
	token int64
}

type simulator struct {
	cfg simConfig
	r   *rand.Rand
	q   eventQueue

	ops    []history.Op
	result []history.Status // the status the op gets at its return
	out    []simState       // what a read returned, or the token an acquire was granted

	// the register
	cur    simState
	states []simState
	// the lock service
	holder  int
	expiry  int64
	counter int64

	// the other keys' states, when keys > 1; the fields above hold curKey's
	keyState map[string]*simKeyState
	curKey   string

	clients []simClient
	issued  int
	running int
	final   bool
}

// simulate runs cfg with randomness from r and returns the recorded history.
func simulate(cfg simConfig, r *rand.Rand) *history.History {
	s := &simulator{cfg: cfg, r: r, holder: -1, states: []simState{{}}}
	s.clients = make([]simClient, cfg.clients)
	s.running = cfg.clients
	for c := range cfg.clients {
		s.push(s.units(r.Int64N(cfg.maxThink+1)), 2, -1-c)
	}
	for s.q.Len() > 0 {
		e := heap.Pop(&s.q).(simEvent)
		switch {
		case e.op < 0:
			s.call(-1-e.op, e.at)
		case e.order == 0:
			s.effect(e.op, e.at)
		default:
			s.ret(e.op, e.at)
		}
	}
	h := &history.History{Format: history.Format, Run: history.Run{Fence: cfg.fence, Scenario: "sim"}, Ops: s.ops, Faults: []history.Fault{}}
	return h
}

func (s *simulator) units(n int64) int64 { return n * s.cfg.unit }

func (s *simulator) push(at int64, order, op int) {
	heap.Push(&s.q, simEvent{at: at, order: order, tie: s.r.Uint64(), op: op})
}

func (s *simulator) chance(p float64) bool { return p > 0 && s.r.Float64() < p }

// call issues client c's next op at time now.
func (s *simulator) call(c int, now int64) {
	cl := &s.clients[c]
	if s.final {
		s.begin(c, history.Read, now, 0, "", nil)
		return
	}
	var kind history.Kind
	if s.cfg.cycles {
		kind = []history.Kind{history.Acquire, history.Read, history.Write, history.Release}[cl.phase]
	} else {
		w := s.cfg.kindWeights
		n := s.r.IntN(w[0] + w[1] + w[2] + w[3])
		kind = history.Acquire
		for i, k := range []history.Kind{history.Acquire, history.Release, history.Read, history.Write} {
			if n < w[i] {
				kind = k
				break
			}
			n -= w[i]
		}
	}
	var token int64
	var value string
	var readID *int
	if kind == history.Acquire && s.cfg.keys > 1 {
		cl.key = s.r.IntN(s.cfg.keys)
	}
	switch kind {
	case history.Write:
		cl.writes++
		value = fmt.Sprintf("c%d-%d", c, cl.writes)
		token = cl.token
		switch {
		case s.cfg.tokenRange > 0:
			token = s.r.Int64N(s.cfg.tokenRange + 1)
		case token == 0 || s.chance(s.cfg.tokenNoise):
			token = max(0, cl.token+s.r.Int64N(5)-2)
			if s.r.IntN(3) == 0 {
				token = s.r.Int64N(s.counter + 2)
			}
		}
		if cl.lastRead != 0 && (s.cfg.cycles || s.chance(s.cfg.rmw)) {
			id := cl.lastRead
			readID = &id
		}
	case history.Release:
		token = cl.token
	}
	s.begin(c, kind, now, token, value, readID)
}

func (s *simulator) begin(c int, kind history.Kind, now, token int64, value string, readID *int) {
	idx := len(s.ops)
	s.ops = append(s.ops, history.Op{ID: idx + 1, Client: c, Kind: kind, Call: now, Status: history.Unknown, Token: token, Value: value, ReadID: readID, Key: s.keyName(c)})
	s.result = append(s.result, "")
	s.out = append(s.out, simState{})
	s.issued++
	d := s.units(s.r.Int64N(s.cfg.maxDur + 1))
	end := now + d
	switch {
	case !s.final && s.chance(s.cfg.fail):
		s.result[idx] = history.Fail // no effect: never executed
	case !s.final && s.chance(s.cfg.unknown):
		s.result[idx] = history.Unknown
		if s.r.IntN(2) == 0 { // half the unknown ops take effect, possibly late
			s.push(now+s.units(s.r.Int64N(s.cfg.maxDur+s.cfg.delay+1)), 0, idx)
		}
	default:
		s.push(now+s.units(s.r.Int64N(d/s.cfg.unit+1)), 0, idx)
	}
	s.push(end, 1, idx)
}

// effect executes op idx against the system at time now.
func (s *simulator) effect(idx int, now int64) {
	o := &s.ops[idx]
	s.useKey(o.Key)
	status := history.OK
	switch o.Kind {
	case history.Acquire:
		if s.holder >= 0 && now > s.expiry {
			s.holder = -1
		}
		if s.holder < 0 || s.chance(s.cfg.grantWhileHeld) {
			tok := s.counter + 1
			if s.counter > 0 && s.chance(s.cfg.tokenReuse) {
				tok = max(1, s.counter-s.r.Int64N(2))
			}
			s.counter = max(s.counter, tok)
			s.holder, s.expiry = o.Client, now+s.units(s.cfg.ttl)
			s.out[idx].token = tok
		} else {
			status = history.Fail
		}
	case history.Release:
		if s.holder == o.Client {
			s.holder = -1
		} else {
			status = history.Fail
		}
	case history.Write:
		passes := history.Passes(s.cfg.fence, o.Token, s.cur.token)
		accept := passes
		if !passes && s.chance(s.cfg.unfenced) {
			accept = true
		}
		if passes && s.chance(s.cfg.spuriousReject) {
			accept = false
		}
		if accept {
			s.cur = simState{o.Value, o.Token}
			s.states = append(s.states, s.cur)
		} else {
			status = history.Rejected
		}
	case history.Read:
		st := s.cur
		if s.chance(s.cfg.staleRead) {
			st = s.states[s.r.IntN(len(s.states))]
		}
		s.out[idx] = st
	}
	if s.result[idx] == "" {
		s.result[idx] = status
	}
}

// keyName is the key of client c's current op: "" (the default key) unless keys > 1.
func (s *simulator) keyName(c int) string {
	if s.cfg.keys <= 1 {
		return ""
	}
	return fmt.Sprintf("k%d", s.clients[c].key)
}

// useKey makes key k's lock service and register current.
func (s *simulator) useKey(k string) {
	if k == s.curKey {
		return
	}
	if s.keyState == nil {
		s.keyState = map[string]*simKeyState{}
	}
	s.keyState[s.curKey] = &simKeyState{s.cur, s.states, s.holder, s.expiry, s.counter}
	ks, ok := s.keyState[k]
	if !ok {
		ks = &simKeyState{states: []simState{{}}, holder: -1}
	}
	s.cur, s.states, s.holder, s.expiry, s.counter = ks.cur, ks.states, ks.holder, ks.expiry, ks.counter
	s.curKey = k
}

// ret completes op idx at time now and lets its client go on.
func (s *simulator) ret(idx int, now int64) {
	o := &s.ops[idx]
	o.Status = s.result[idx]
	if o.Status == "" { // not yet in effect at its return: cannot happen by construction
		panic("simulator: op returned before taking effect")
	}
	if o.Status != history.Unknown {
		t := now
		o.Return = &t
	}
	if o.Status == history.OK {
		switch o.Kind {
		case history.Read:
			o.Value, o.Token = s.out[idx].value, s.out[idx].token
		case history.Acquire:
			o.Token = s.out[idx].token
		}
	}
	c := o.Client
	cl := &s.clients[c]
	if s.final {
		return
	}
	ok := o.Status == history.OK
	switch o.Kind {
	case history.Acquire:
		if ok {
			cl.token = o.Token
			cl.phase = 1
		} else if s.chance(s.cfg.rogue) {
			cl.phase = 1
		}
	case history.Read:
		if ok {
			cl.lastRead = o.ID
			cl.phase = 2
			cl.pauseNow = s.chance(s.cfg.pause)
		} else {
			cl.phase = 3
		}
	case history.Write:
		cl.phase = 3
	case history.Release:
		cl.phase = 0
		cl.lastRead = 0
	}
	if s.cfg.cycles && o.Kind == history.Write {
		cl.lastRead = 0
	}
	if s.issued >= s.cfg.ops {
		if !cl.done {
			cl.done = true
			s.running--
		}
		if s.running == 0 && s.cfg.finalReads && !s.final {
			s.final = true
			last := now
			for i := range s.ops {
				last = max(last, s.ops[i].Call)
			}
			for c := range s.clients {
				s.clients[c].key = c % max(s.cfg.keys, 1)
				s.push(last+s.units(1+s.r.Int64N(s.cfg.maxThink+1)), 2, -1-c)
			}
		}
		return
	}
	think := s.units(s.r.Int64N(s.cfg.maxThink + 1))
	if o.Kind == history.Acquire && !ok && cl.phase == 0 {
		think += s.units(s.cfg.backoff)
	}
	if cl.pauseNow && cl.phase == 2 {
		think += s.units(s.cfg.pauseLen)
		cl.pauseNow = false
	}
	s.push(now+think, 2, -1-c)
}

// randomConfig draws a small-history configuration: 3–4 clients, 5–20 ops, a mix of
// statuses, tokens with ties, both fence rules, and bugs in about half the histories.
// Three shapes: lease-lock cycles, random op kinds, and register-only traffic with
// random tokens (which stresses rejections, unknown writes and ties).
func randomConfig(r *rand.Rand) simConfig {
	pick := func(xs ...float64) float64 { return xs[r.IntN(len(xs))] }
	cfg := simConfig{
		clients:    3 + r.IntN(2),
		ops:        8 + r.IntN(9),
		finalReads: r.IntN(2) == 0,
		fence:      []string{history.FenceStrict, history.FenceMonotonic}[r.IntN(2)],
		rmw:        pick(0.5, 0.9, 1),
		unit:       1,
		maxDur:     int64(1 + r.IntN(6)),
		maxThink:   int64(r.IntN(4)),
		ttl:        int64(2 + r.IntN(12)),
		pause:      pick(0, 0.2, 0.5),
		pauseLen:   int64(5 + r.IntN(15)),
		unknown:    pick(0, 0.1, 0.25),
		delay:      int64(r.IntN(15)),
		fail:       pick(0, 0.05, 0.15),
		tokenNoise: pick(0, 0.2, 0.5),
		rogue:      pick(0, 0.3, 0.7),
	}
	if cfg.finalReads {
		cfg.ops -= cfg.clients
	}
	switch r.IntN(3) {
	case 0:
		cfg.cycles = true
	case 1:
		cfg.kindWeights = [4]int{3, 2, 3, 3}
		cfg.ttl = int64(1 + r.IntN(4))
	default:
		cfg.kindWeights = [4]int{0, 0, 2, 3}
		cfg.tokenRange = int64(1 + r.IntN(4))
	}
	if r.IntN(2) == 0 {
		cfg.unfenced = pick(0, 0.2, 0.5)
		cfg.spuriousReject = pick(0, 0.1, 0.3)
		cfg.staleRead = pick(0, 0.1, 0.3)
		cfg.grantWhileHeld = pick(0, 0.2, 0.5)
	}
	if r.IntN(5) < 3 {
		cfg.tokenReuse = pick(0.3, 0.6)
	}
	return cfg
}

// realisticConfig is a run like the harness's: 3 clients looping acquire → read →
// write → release with a lease lock and a fenced register (strict), ops of 0.1–2 ms, a
// 50 ms lease, a 10 ms back-off after a refused acquire, occasional pauses long enough
// for the lease to expire (so stale writes are attempted and rejected), and a few
// unknown and failed ops.
func realisticConfig(ops int) simConfig {
	return simConfig{
		clients:    3,
		ops:        ops,
		finalReads: true,
		fence:      history.FenceStrict,
		cycles:     true,
		unit:       100_000, // 0.1 ms
		maxDur:     20,
		maxThink:   10,
		ttl:        500,
		backoff:    100,
		pause:      0.01,
		pauseLen:   2000,
		unknown:    0.01,
		delay:      50,
		fail:       0.01,
	}
}

// arbitraryHistory draws a tiny history with no system behind it: random kinds,
// intervals, statuses and tokens, reads returning random written values. Most such
// histories are illegal somewhere, but they reach corners no simulated system does
// (a read before its write, a rejection nothing explains, an unknown write tying an
// accepted token), which is what the agreement test needs.
func arbitraryHistory(r *rand.Rand) *history.History {
	type draft struct {
		op   history.Op
		read *draft // the read a write was computed from
	}
	clients := 2 + r.IntN(3)
	cursor := make([]int64, clients)
	lastRead := make([]*draft, clients)
	n := 4 + r.IntN(6)
	fence := []string{history.FenceStrict, history.FenceMonotonic}[r.IntN(2)]
	var ds []*draft
	var writes []*draft
	statuses := func(weights ...int) history.Status {
		all := []history.Status{history.OK, history.Rejected, history.Unknown, history.Fail}
		k := r.IntN(weights[0] + weights[1] + weights[2] + weights[3])
		for i, w := range weights {
			if k < w {
				return all[i]
			}
			k -= w
		}
		return history.OK
	}
	registerOnly := r.IntN(2) == 0 // half the histories stress the register alone
	maxToken := int64(4)
	if registerOnly {
		maxToken = 3
	}
	for i := range n {
		c := r.IntN(clients)
		d := &draft{}
		o := &d.op
		o.Client = c
		o.Call = cursor[c] + r.Int64N(4)
		ret := o.Call + r.Int64N(5)
		k := r.IntN(21)
		if registerOnly {
			k = r.IntN(15)
		}
		switch {
		case k < 8:
			o.Kind, o.Status = history.Write, statuses(9, 5, 4, 2)
			o.Token = r.Int64N(maxToken)
			o.Value = fmt.Sprintf("w%d", i)
			if lastRead[c] != nil && r.IntN(2) == 0 {
				d.read = lastRead[c]
			}
			writes = append(writes, d)
		case k < 15:
			o.Kind, o.Status = history.Read, statuses(17, 0, 1, 2)
			if o.Status == history.OK {
				lastRead[c] = d
			}
		case k < 19:
			o.Kind, o.Status = history.Acquire, statuses(7, 0, 2, 1)
			if o.Status == history.OK {
				o.Token = 1 + r.Int64N(5)
			}
		default:
			o.Kind, o.Status = history.Release, statuses(7, 0, 2, 1)
		}
		if o.Status == history.Unknown {
			cursor[c] = o.Call + r.Int64N(3)
		} else {
			o.Return = &ret
			cursor[c] = ret
		}
		ds = append(ds, d)
	}
	// Reads return a random write's value (mostly with its token) or the initial value.
	for _, d := range ds {
		if d.op.Kind != history.Read || d.op.Status != history.OK {
			continue
		}
		if len(writes) == 0 || r.IntN(4) == 0 {
			continue
		}
		w := writes[r.IntN(len(writes))].op
		d.op.Value, d.op.Token = w.Value, w.Token
		if r.IntN(10) == 0 {
			d.op.Token = r.Int64N(maxToken)
		}
	}
	slices.SortStableFunc(ds, func(a, b *draft) int { return cmp.Compare(a.op.Call, b.op.Call) })
	for i, d := range ds {
		d.op.ID = i + 1
	}
	h := &history.History{Format: history.Format, Run: history.Run{Fence: fence, Scenario: "arbitrary"}, Faults: []history.Fault{}}
	for _, d := range ds {
		if d.read != nil {
			id := d.read.op.ID
			d.op.ReadID = &id
		}
		h.Ops = append(h.Ops, d.op)
	}
	return h
}
