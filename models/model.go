package models

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/anishathalye/porcupine"

	"github.com/fencecheck/fencecheck/harness/history"
)

// Every model's Input is one of the op types below and carries the whole recorded op,
// call and outcome; Output is unused. Keeping the outcome in the input keeps each Step a
// plain switch on one value.

// regOp is a register operation: a write (ok, rejected or unknown) or an ok read.
type regOp struct {
	id, client int
	read       bool
	status     history.Status
	value      int32 // interned; 0 is the initial ""
	token      int64
}

// regState is the register: the stored value (interned) and token. It is a small
// comparable struct so porcupine's cache can compare and hash it cheaply.
type regState struct {
	value int32
	token int64
}

// updOp is a write seen by the updates model.
type updOp struct {
	id, client int
	status     history.Status
	value      int32
	rmw        bool  // it carries read_id
	readValue  int32 // the value its read returned, when rmw
	readID     int
	seenBy     int // an unknown write a read saw: that read's id (status is then ok)
}

// tokOp is an ok acquire seen by the tokens model.
type tokOp struct {
	id, client int
	token      int64
}

// mutexOp is an acquire that starts a hold, or the release that ends it.
type mutexOp struct {
	id, client int
	release    bool
	status     history.Status
}

// opMeta is every porcupine operation's Metadata: the history op it stands for, and the
// key (independent lock and register) it touches, which Partition splits on.
type opMeta struct {
	ID  int
	Key string
}

// values interns the history's values so model states stay small and comparable.
type values struct {
	ids   map[string]int32
	names []string
}

// newValues numbers "" as 0, then every written and read value in op order, so that
// the numbering depends only on the history and Model and Operations agree.
func newValues(h *history.History) *values {
	v := &values{ids: map[string]int32{"": 0}, names: []string{""}}
	for _, o := range h.Ops {
		if o.Kind == history.Write || o.Kind == history.Read {
			v.id(o.Value)
		}
	}
	return v
}

func (v *values) id(s string) int32 {
	if i, ok := v.ids[s]; ok {
		return i
	}
	i := int32(len(v.names))
	v.ids[s] = i
	v.names = append(v.names, s)
	return i
}

func (v *values) name(i int32) string {
	if i >= 0 && int(i) < len(v.names) {
		return v.names[i]
	}
	return fmt.Sprintf("?%d", i)
}

// Model returns the porcupine model of property p for history h (h supplies the fence
// rule and the value names). It panics on a property outside Properties.
func Model(p Property, h *history.History) porcupine.Model {
	return newModel(context.Background(), modelled(p), h, newValues(h))
}

// modelled is p's plug-in; it panics on a property without a porcupine model.
func modelled(p Property) checker {
	if c := pluginOf(p); c != nil && p.HasModel() {
		return c
	}
	panic(fmt.Sprintf("models: no porcupine model for property %q", p))
}

// newModel builds p's model. Its StepContext also stops on ctx, the caller's context,
// because porcupine's own context only carries its timeout.
func newModel(ctx context.Context, p checker, h *history.History, vals *values) porcupine.Model {
	m, ok := p.model(h.FenceRule(), vals)
	if !ok {
		panic(fmt.Sprintf("models: no porcupine model for property %q", p.name()))
	}
	step := m.Step
	m.StepContext = func(pctx context.Context, s, in, out any) (bool, any) {
		if pctx.Err() != nil || ctx.Err() != nil {
			return false, s
		}
		return step(s, in, out)
	}
	m.Partition = partitionByKey
	m.DescribeOperationMetadata = func(meta any) string {
		if mm, ok := meta.(opMeta); ok {
			return fmt.Sprintf("op %d", mm.ID)
		}
		return ""
	}
	return m
}

// partitionByKey splits a history per key (history.Op.Key): a history is linearizable
// iff each key's sub-history is, and porcupine checks the partitions in parallel.
func partitionByKey(ops []porcupine.Operation) [][]porcupine.Operation {
	var keys []string
	byKey := map[string][]porcupine.Operation{}
	for _, o := range ops {
		k := o.Metadata.(opMeta).Key
		if _, ok := byKey[k]; !ok {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], o)
	}
	out := make([][]porcupine.Operation, 0, len(keys))
	for _, k := range keys {
		out = append(out, byKey[k])
	}
	return out
}

// mix is a 64-bit finalizer (splitmix64), so nearby tokens land in different buckets.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

func registerModel(fence string, vals *values) porcupine.Model {
	return porcupine.Model{
		Init: func() any { return regState{} },
		Step: func(s, in, _ any) (bool, any) {
			st, op := s.(regState), in.(regOp)
			if op.read {
				return st == regState{op.value, op.token}, st
			}
			passes := history.Passes(fence, op.token, st.token)
			switch op.status {
			case history.OK:
				if !passes {
					return false, st
				}
				return true, regState{op.value, op.token}
			case history.Rejected:
				return history.RefusalExplained(fence, op.token, st.token), st
			default: // unknown: it takes effect iff it passes where it is placed
				if passes {
					return true, regState{op.value, op.token}
				}
				return true, st
			}
		},
		Equal: func(a, b any) bool { return a.(regState) == b.(regState) },
		Hash: func(s any) uint64 {
			st := s.(regState)
			return mix(uint64(st.token)) ^ mix(uint64(st.value)<<1|1)
		},
		DescribeOperation: func(in, _ any) string {
			op := in.(regOp)
			if op.read {
				return fmt.Sprintf("#%d c%d read() → (%s, token %d)", op.id, op.client, vals.name(op.value), op.token)
			}
			return fmt.Sprintf("#%d c%d write(v=%s, token %d) → %s", op.id, op.client, vals.name(op.value), op.token, op.status)
		},
		DescribeState: func(s any) string {
			st := s.(regState)
			return fmt.Sprintf("(%q, token %d)", vals.name(st.value), st.token)
		},
	}
}

func updatesModel(vals *values) porcupine.Model {
	return porcupine.Model{
		Init: func() any { return int32(0) },
		Step: func(s, in, _ any) (bool, any) {
			cur, op := s.(int32), in.(updOp)
			switch op.status {
			case history.Rejected:
				return true, cur
			case history.OK:
				if op.rmw && cur != op.readValue {
					return false, cur
				}
				return true, op.value
			default: // unknown: it takes effect iff its read value is current
				if op.rmw && cur != op.readValue {
					return true, cur
				}
				return true, op.value
			}
		},
		Equal: func(a, b any) bool { return a.(int32) == b.(int32) },
		Hash:  func(s any) uint64 { return mix(uint64(s.(int32))) },
		DescribeOperation: func(in, _ any) string {
			op := in.(updOp)
			status := string(op.status)
			if op.seenBy != 0 {
				status = fmt.Sprintf("unknown, seen by read #%d", op.seenBy)
			}
			if op.rmw {
				return fmt.Sprintf("#%d c%d write(%s computed from %q read by #%d) → %s",
					op.id, op.client, vals.name(op.value), vals.name(op.readValue), op.readID, status)
			}
			return fmt.Sprintf("#%d c%d write(%s) → %s", op.id, op.client, vals.name(op.value), status)
		},
		DescribeState: func(s any) string { return fmt.Sprintf("%q", vals.name(s.(int32))) },
	}
}

func tokensModel() porcupine.Model {
	return porcupine.Model{
		Init: func() any { return int64(0) },
		Step: func(s, in, _ any) (bool, any) {
			last, op := s.(int64), in.(tokOp)
			if op.token > last {
				return true, op.token
			}
			return false, last
		},
		Equal: func(a, b any) bool { return a.(int64) == b.(int64) },
		Hash:  func(s any) uint64 { return mix(uint64(s.(int64))) },
		DescribeOperation: func(in, _ any) string {
			op := in.(tokOp)
			return fmt.Sprintf("#%d c%d acquire → token %d", op.id, op.client, op.token)
		},
		DescribeState: func(s any) string { return fmt.Sprintf("last token %d", s.(int64)) },
	}
}

func mutexModel() porcupine.Model {
	return porcupine.Model{
		Init: func() any { return -1 },
		Step: func(s, in, _ any) (bool, any) {
			holder, op := s.(int), in.(mutexOp)
			if op.release {
				if holder == op.client {
					return true, -1
				}
				return false, holder
			}
			if holder == -1 {
				return true, op.client
			}
			return false, holder
		},
		Equal: func(a, b any) bool { return a.(int) == b.(int) },
		Hash:  func(s any) uint64 { return mix(uint64(s.(int) + 1)) },
		DescribeOperation: func(in, _ any) string {
			op := in.(mutexOp)
			if op.release {
				return fmt.Sprintf("#%d c%d release → %s", op.id, op.client, op.status)
			}
			return fmt.Sprintf("#%d c%d acquire → ok", op.id, op.client)
		},
		DescribeState: func(s any) string {
			if s.(int) < 0 {
				return "free"
			}
			return fmt.Sprintf("held by c%d", s.(int))
		},
	}
}

// Operations converts h into the porcupine operations of property p's model: the ops
// that property is about, with unknown ops returning at history.Infinity (except, for
// updates, unknown writes a read saw: see firstSeen) and each client's ops after an
// unknown one moved to a fresh client id. Each operation's Metadata names its history
// op. It panics on a property outside Properties.
func Operations(p Property, h *history.History) []porcupine.Operation {
	return operations(modelled(p), h, newValues(h))
}

// modelOp is one history op chosen for a model, with the return time the model gives it.
type modelOp struct {
	op    *history.Op
	ret   int64
	input any
}

// firstSeen maps each value to the ok read that returned it first (earliest return).
//
// The updates model uses it for evidence an unknown write took effect: a read saw its
// value, so it was applied before that read returned. The model then treats the write
// as ok, returning at that read's return, as etcd's robustness tests patch histories.
// Without this, the updates model (which has no reads) would linearise such a write
// last, as a no-op, and miss the update it overwrote, e.g. a delayed write that landed
// after newer ones and was seen by the final reads. The register model needs no patch:
// a read of the value already forces the write to take effect before it.
func firstSeen(h *history.History) map[string]*history.Op {
	m := map[string]*history.Op{}
	for i := range h.Ops {
		r := &h.Ops[i]
		if r.Kind != history.Read || r.Status != history.OK || r.Value == "" {
			continue
		}
		if cur := m[r.Value]; r.Return != nil && (cur == nil || *r.Return < *cur.Return) {
			m[r.Value] = r
		}
	}
	return m
}

// seenEnd is when unknown write w, seen by read r, must have taken effect by. A read
// that returned before the write was even called is the register's violation to
// report; here it only must not make the interval end before it starts.
func seenEnd(w, r *history.Op) int64 { return max(w.Call, *r.Return) }

func operations(p checker, h *history.History, vals *values) []porcupine.Operation {
	return operationsParts(p, splitByKey(h), vals) // keys.go
}

// operationsSingle is operations for a single-key history.
func operationsSingle(p checker, h *history.History, vals *values) []porcupine.Operation {
	return toPorcupine(p.modelOps(h, vals))
}

// readOf returns the read a write's value was computed from, or nil for a plain write.
func readOf(w *history.Op, byID map[int]*history.Op) *history.Op {
	if w.ReadID == nil {
		return nil
	}
	r := byID[*w.ReadID]
	if r == nil || r.Kind != history.Read || r.Status != history.OK {
		return nil // Validate rejects this; treat it as a plain write rather than panic
	}
	return r
}

// releaseEnd is when a release ends its client's belief: a client stops believing it
// holds the lock when it calls release, whatever the outcome, so an unknown release
// "returns" at its call rather than never.
func releaseEnd(r *history.Op) int64 {
	if r.Status == history.Unknown {
		return r.Call
	}
	return r.End()
}

// toPorcupine sorts the chosen ops by call and assigns client ids: client c's ops use id
// c until one of them never returned; the ones after it use a fresh id, so that each
// porcupine row stays sequential.
func toPorcupine(sel []modelOp) []porcupine.Operation {
	slices.SortStableFunc(sel, func(a, b modelOp) int {
		if c := cmp.Compare(a.op.Call, b.op.Call); c != 0 {
			return c
		}
		return cmp.Compare(a.op.ID, b.op.ID)
	})
	maxClient := -1
	for _, s := range sel {
		maxClient = max(maxClient, s.op.Client)
	}
	next := maxClient + 1
	stream := map[int]int{}   // client -> current stream id
	retired := map[int]bool{} // client -> its current stream has an op that never returns
	out := make([]porcupine.Operation, 0, len(sel))
	for _, s := range sel {
		c := s.op.Client
		id, ok := stream[c]
		if !ok {
			id = c
		}
		if retired[c] {
			id, retired[c] = next, false
			next++
		}
		stream[c] = id
		if s.op.Return == nil { // it never returned, whatever the model makes of it
			retired[c] = true
		}
		out = append(out, porcupine.Operation{
			ClientId: id,
			Input:    s.input,
			Call:     s.op.Call,
			Return:   s.ret,
			Metadata: opMeta{ID: s.op.ID, Key: s.op.Key},
		})
	}
	return out
}

// hold is one client's belief that it holds the lock: from an ok acquire to that
// client's next release (any status), or to the end of the history.
type hold struct {
	acq *history.Op
	rel *history.Op // nil when never released
}

// holds pairs each client's ok acquires with its releases, walking the client's ops in
// call order. An ok acquire while the client already believes it holds is part of the
// same hold (a renewal, as far as belief goes); a release while it holds nothing (after
// a failed or unknown acquire) ends nothing. The mutex model and the direct analysis
// both use exactly these holds.
func holds(h *history.History) []hold {
	byClient := map[int][]*history.Op{}
	var clients []int
	for i := range h.Ops {
		o := &h.Ops[i]
		if o.Kind != history.Acquire && o.Kind != history.Release {
			continue
		}
		if _, ok := byClient[o.Client]; !ok {
			clients = append(clients, o.Client)
		}
		byClient[o.Client] = append(byClient[o.Client], o)
	}
	slices.Sort(clients)
	var out []hold
	for _, c := range clients {
		ops := byClient[c]
		slices.SortStableFunc(ops, func(a, b *history.Op) int {
			if x := cmp.Compare(a.Call, b.Call); x != 0 {
				return x
			}
			return cmp.Compare(a.ID, b.ID)
		})
		open := -1
		for _, o := range ops {
			switch {
			case o.Kind == history.Acquire && o.Status == history.OK && open < 0:
				out = append(out, hold{acq: o})
				open = len(out) - 1
			case o.Kind == history.Release && open >= 0:
				out[open].rel = o
				open = -1
			}
		}
	}
	return out
}
