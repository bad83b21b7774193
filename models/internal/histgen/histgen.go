// Package histgen generates large fenced-register histories for measuring the checker:
// lock clients looping acquire → read → write (read-modify-write) → release against a
// lease lock and a fenced register, observers reading concurrently without the lock,
// pauses past the lease (so stale writes are attempted and the fence rejects them) and
// writes of unknown outcome. Every op takes effect at one instant inside its interval of
// a sequential execution, so without Config.StaleAt the register, updates and tokens
// properties hold by construction; the pauses make mutex violated, as in a real run.
//
// It is internal: the benchmarks and the `genhistory` tool use it; histories are never
// committed.
package histgen

import (
	"bufio"
	"container/heap"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"

	"github.com/fencecheck/fencecheck/harness/history"
)

// Config shapes a generated history.
type Config struct {
	// Ops is about how many ops to generate.
	Ops int
	// Clients take the lock; Observers only read. Defaults 5 and 1.
	Clients, Observers int
	// Keys > 1 spreads critical sections over independent locks and registers.
	Keys int
	// Seed makes the history reproducible.
	Seed uint64
	// Fence is the register's rule (history.FenceStrict when empty).
	Fence string
	// Unknown is the probability a write's outcome is unknown (it takes effect or not,
	// with even odds, and never returns). Pause is the probability a critical section
	// pauses past the lease between its read and its write.
	Unknown, Pause float64
	// StaleAt > 0 makes the register accept exactly one stale write: that of the first
	// critical section, started after StaleAt×Ops ops, which is forced to pause.
	StaleAt float64
	// Realistic gives the history the field mix a real `fencecheck run` or `soak`
	// writes (see realistic.go): acquires that wait for the lock and time out, tokens
	// granted out of call order, error texts with quotes (escaped in JSON), unknown
	// acquires and writes, refused releases after a pause, long tagged values, a fault
	// with a detail sentence for every pause and the run's free-form fields. Zero
	// Clients/Observers then default to 5 and 2.
	Realistic bool
}

// withDefaults fills the zero fields.
func (c Config) withDefaults() Config {
	if c.Clients <= 0 {
		c.Clients = 5
	}
	if c.Observers < 0 {
		c.Observers = 0
	} else if c.Observers == 0 {
		c.Observers = 1
		if c.Realistic {
			c.Observers = 2
		}
	}
	if c.Keys <= 0 {
		c.Keys = 1
	}
	if c.Fence == "" {
		c.Fence = history.FenceStrict
	}
	return c
}

// Timing, in ns.
const (
	ttl     = 50_000_000
	maxDur  = 2_000_000
	think   = 500_000
	backoff = 5_000_000
	pauseNs = 4 * ttl
	// Realistic acquires wait for the lock, re-checking about every pollNs, and give
	// up after acquireTimeout.
	pollNs         = 1_000_000
	acquireTimeout = 10 * ttl
	observerThink  = 5_000_000
)

type keyState struct {
	holder  int
	token   int64
	expiry  int64
	counter int64
	value   string
	stored  int64
}

type client struct {
	id       int
	observer bool
	step     int // lock clients: 0 acquire, 1 read, 2 write, 3 release
	key      int
	token    int64
	readID   int
	pause    bool
	stale    bool // this section's write is the one stale write to accept
	writes   int
}

type event struct {
	at   int64
	seq  int
	kind int // 0 call, 1 effect, 2 return
	cl   int
	op   int // index into ops
}

type queue []event

func (q queue) Len() int { return len(q) }
func (q queue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q queue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *queue) Push(x any)   { *q = append(*q, x.(event)) }
func (q *queue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// Generate returns a history of about c.Ops ops.
func Generate(c Config) *history.History {
	var ops []history.Op
	h := GenerateTo(c, func(o *history.Op) { ops = append(ops, *o) }, nil)
	h.Ops = ops
	if h.Ops == nil {
		h.Ops = []history.Op{}
	}
	return h
}

// GenerateTo generates the history of Generate, handing each op to emit in id order
// as soon as it is complete, so that only the ops in flight are held: a history of
// any length in little memory. begin, if not nil, gets the history's format and run
// before the first op. It returns the history without its ops.
func GenerateTo(c Config, emit func(*history.Op), begin func(*history.History)) *history.History {
	c = c.withDefaults()
	r := rand.New(rand.NewPCG(c.Seed, 0x5eed))
	keys := make([]keyState, c.Keys)
	for i := range keys {
		keys[i].holder = -1
	}
	keyName := func(k int) string {
		if c.Keys == 1 {
			return ""
		}
		return fmt.Sprintf("k%d", k)
	}
	var clients []*client
	for i := range c.Clients + c.Observers {
		clients = append(clients, &client{id: i, observer: i >= c.Clients})
	}
	h := &history.History{
		Format: history.Format,
		Run:    history.Run{Scenario: "generated", Backend: "histgen", Resource: "fenced", Fence: c.Fence, Seed: int64(c.Seed), TTLms: ttl / 1_000_000},
		Faults: []history.Fault{},
	}
	var real *realism
	if c.Realistic {
		real = newRealism(c, r)
		h.Run = real.run(h.Run)
	}
	if begin != nil {
		begin(h)
	}
	// The ops from base on, with the events each still has pending; the complete
	// prefix is emitted and dropped.
	var (
		ops   []history.Op
		keyOf []int // ops[i]'s key index
		pend  []int
		base  int
		n     int // ops made so far
	)
	opAt := func(i int) *history.Op { return &ops[i-base] }
	var q queue
	seq := 0
	push := func(e event) {
		seq++
		e.seq = seq
		if e.kind != 0 {
			pend[e.op-base]++
		}
		heap.Push(&q, e)
	}
	flush := func() {
		k := 0
		for k < len(ops) && pend[k] == 0 {
			emit(&ops[k])
			k++
		}
		if k > 0 {
			ops, keyOf, pend = ops[k:], keyOf[k:], pend[k:]
			base += k
			if cap(ops) > 4*len(ops)+1024 { // let the dropped front go
				ops, keyOf, pend = append([]history.Op(nil), ops...), append([]int(nil), keyOf...), append([]int(nil), pend...)
			}
		}
	}
	for _, cl := range clients {
		push(event{at: r.Int64N(think) + 1, kind: 0, cl: cl.id})
	}
	staleDone := c.StaleAt <= 0
	staleFrom := int(c.StaleAt * float64(c.Ops))
	// Until the stale write has returned, everyone goes on past c.Ops, so that newer
	// writes overtake it during its pause.
	staleWaiting := false
	for q.Len() > 0 {
		e := heap.Pop(&q).(event)
		cl := clients[e.cl]
		if e.kind != 0 {
			pend[e.op-base]--
		}
		switch e.kind {
		case 0: // call
			if n >= c.Ops && !staleWaiting {
				continue // the client stops
			}
			n++
			o := history.Op{ID: n, Client: cl.id, Call: e.at}
			if cl.observer {
				cl.key = r.IntN(c.Keys)
				o.Kind = history.Read
			} else {
				switch cl.step {
				case 0:
					cl.key = r.IntN(c.Keys)
					o.Kind = history.Acquire
				case 1:
					o.Kind = history.Read
				case 2:
					o.Kind, o.Token = history.Write, cl.token
					cl.writes++
					o.Value = fmt.Sprintf("c%d-%d", cl.id, cl.writes)
					if real != nil {
						o.Value = real.value(o.Value)
					}
					rid := cl.readID
					o.ReadID = &rid
				case 3:
					o.Kind, o.Token = history.Release, cl.token
				}
			}
			o.Key = keyName(cl.key)
			unknown := o.Kind == history.Write && !cl.stale && r.Float64() < c.Unknown
			if real != nil && o.Kind == history.Acquire && r.Float64() < c.Unknown/5 {
				unknown = true
			}
			d := r.Int64N(maxDur) + 1
			at := e.at + r.Int64N(d+1)
			idx := n - 1
			ops = append(ops, o)
			keyOf = append(keyOf, cl.key)
			pend = append(pend, 0)
			if unknown {
				opAt(idx).Status = history.Unknown
				if r.IntN(2) == 0 {
					push(event{at: at, kind: 1, cl: cl.id, op: idx})
				}
				// The client gives up waiting and goes on; no return is recorded.
				opAt(idx).Error = "timeout"
				if real != nil {
					opAt(idx).Error = real.timeout(o.Kind, cl.id)
				}
				if o.Kind == history.Acquire {
					cl.step = 0
				} else {
					cl.step = 3
				}
				push(event{at: e.at + d + r.Int64N(think) + 1, kind: 0, cl: cl.id})
				continue
			}
			push(event{at: at, kind: 1, cl: cl.id, op: idx})
			if real != nil && o.Kind == history.Acquire {
				continue // a waiting acquire returns when its effect settles (below)
			}
			push(event{at: e.at + d, kind: 2, cl: cl.id, op: idx})
		case 1: // effect
			o := opAt(e.op)
			k := &keys[keyOf[e.op-base]]
			switch o.Kind {
			case history.Acquire:
				free := k.holder < 0 || k.expiry <= e.at
				switch {
				case free && o.Status != history.Unknown:
					k.counter++
					k.holder, k.token, k.expiry = o.Client, k.counter, e.at+ttl
					o.Status, o.Token = history.OK, k.counter
				case free: // an unknown acquire granted: nobody knows it holds
					k.counter++
					k.holder, k.token, k.expiry = -2, k.counter, e.at+ttl
				case o.Status == history.Unknown:
				case real == nil:
					o.Status, o.Error = history.Fail, "held"
				case e.at-o.Call < acquireTimeout:
					// The server holds the request until the lock frees or it gives up.
					push(event{at: e.at + pollNs/2 + r.Int64N(pollNs), kind: 1, cl: e.cl, op: e.op})
					continue
				default:
					o.Status, o.Error = history.Fail, real.held(k.holder)
				}
				if real != nil && o.Status != history.Unknown {
					push(event{at: e.at + r.Int64N(maxDur/4) + 1, kind: 2, cl: e.cl, op: e.op})
				}
			case history.Read:
				o.Status, o.Value, o.Token = history.OK, k.value, k.stored
			case history.Write:
				pass := history.Passes(c.Fence, o.Token, k.stored)
				if pass || clients[o.Client].stale && o.Status != history.Unknown {
					k.value, k.stored = o.Value, o.Token
					if o.Status != history.Unknown {
						o.Status = history.OK
					}
				} else if o.Status != history.Unknown {
					o.Status = history.Rejected
					if real != nil {
						o.Error = "refused by the fence"
					}
				}
			case history.Release:
				if k.holder == o.Client && k.token == o.Token {
					k.holder = -1
					o.Status = history.OK
				} else {
					o.Status, o.Error = history.Fail, "not the holder"
					if real != nil {
						o.Error = "definitely no effect: lease is no longer held"
					}
				}
			}
		case 2: // return
			o := opAt(e.op)
			ret := e.at
			o.Return = &ret
			next := e.at + r.Int64N(think) + 1
			if cl.observer && real != nil {
				next += observerThink // an observer polls, it does not spin
			}
			if !cl.observer {
				switch o.Kind {
				case history.Acquire:
					if o.Status == history.OK {
						cl.token, cl.step = o.Token, 1
					} else {
						next += backoff
					}
				case history.Read:
					cl.readID, cl.step = o.ID, 2
					cl.pause = r.Float64() < c.Pause
					if !staleDone && n >= staleFrom {
						cl.pause, cl.stale, staleDone, staleWaiting = true, true, true, true
					}
					if cl.pause {
						next += pauseNs
						if real != nil {
							h.Faults = append(h.Faults, real.pause(cl.id, e.at, next))
						}
					}
				case history.Write:
					if cl.stale {
						staleWaiting = false // the others may stop once it is written
					}
					cl.step, cl.stale = 3, false
				case history.Release:
					cl.step = 0
				}
			}
			push(event{at: next, kind: 0, cl: cl.id})
		}
		flush()
	}
	flush()
	return h
}

// Write generates the history of c into w as a v1 file, indented as history.Encode
// writes it, an op at a time: a history of any length in little memory.
func Write(w io.Writer, c Config) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	var err error
	put := func(b ...[]byte) {
		for _, x := range b {
			if err == nil {
				_, err = bw.Write(x)
			}
		}
	}
	marshal := func(v any, prefix string) []byte {
		b, merr := json.MarshalIndent(v, prefix, " ")
		if merr != nil && err == nil {
			err = merr
		}
		return b
	}
	first := true
	h := GenerateTo(c, func(o *history.Op) {
		sep := ",\n  "
		if first {
			sep, first = "\n  ", false
		}
		put([]byte(sep), marshal(o, "  "))
	}, func(h *history.History) {
		put([]byte("{\n \"format\": "), marshal(h.Format, " "), []byte(",\n \"run\": "), marshal(h.Run, " "), []byte(",\n \"ops\": ["))
	})
	end := "\n ]"
	if first {
		end = "]"
	}
	put([]byte(end+",\n \"faults\": "), marshal(h.Faults, " "), []byte("\n}\n"))
	if err != nil {
		return err
	}
	return bw.Flush()
}
