package history

import (
	"slices"
	"sync"
	"time"
)

// Recorder records operations and faults from many goroutines, with times taken from
// one monotonic clock started at NewRecorder. With SpillTo, a long history goes to disk
// as a segmented history (segments.go) and only the ops still open and the recent ones
// stay in memory.
type Recorder struct {
	start time.Time

	mu      sync.Mutex
	nextID  int
	ops     []Op
	done    []bool // done[i]: ops[i] has completed
	base    int    // ops dropped from the front of ops (written to disk)
	faults  []Fault
	effects []Effect
	lost    []Lost
	// watchers are told about every op that completes.
	watchers []func(Op)
	spill    *spiller
	// granted is the longest TTL a lease of the run was granted (Granted).
	granted time.Duration
}

// Granted notes the TTL a lease was granted; the history's run says the longest
// (Run.GrantedTTLms).
func (r *Recorder) Granted(ttl time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.granted = max(r.granted, ttl)
}

// withGranted is run with the granted TTL noted, unless the run already says one.
func (r *Recorder) withGranted(run Run) Run {
	if run.GrantedTTLms == 0 && r.granted > 0 {
		run.GrantedTTLms = max(r.granted.Milliseconds(), 1)
	}
	return run
}

// NewRecorder starts the run's clock.
func NewRecorder() *Recorder {
	return &Recorder{start: time.Now(), nextID: 1}
}

// Now returns nanoseconds since the run started.
func (r *Recorder) Now() int64 { return int64(time.Since(r.start)) }

// Start returns the wall time the run started (for display only).
func (r *Recorder) Start() time.Time { return r.start }

// Pending is an operation that has been called and not yet completed.
type Pending struct {
	r   *Recorder
	idx int // in all ops recorded (ops[idx-base] while in memory)
	id  int
}

// Begin records the call of an operation and returns its handle. The op's ID is
// assigned here, so ids follow call order.
func (r *Recorder) Begin(client int, kind Kind, token int64, value string, readID *int) *Pending {
	return r.BeginKey("", client, kind, token, value, readID)
}

// BeginKey is Begin for an op on key (Op.Key; "" is the default key).
func (r *Recorder) BeginKey(key string, client int, kind Kind, token int64, value string, readID *int) *Pending {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.Now() // under the lock: times follow the order ops are recorded in
	op := Op{ID: r.nextID, Client: client, Kind: kind, Call: now, Status: Unknown, Token: token, Value: value, ReadID: readID, Key: key}
	r.nextID++
	r.ops = append(r.ops, op)
	r.done = append(r.done, false)
	return &Pending{r: r, idx: r.base + len(r.ops) - 1, id: op.ID}
}

// ID is the op's id.
func (p *Pending) ID() int { return p.id }

// ValidUntil records on the op the client's own estimate of when its lease ends (the
// op's ValidUntil), converted to the run's clock.
func (p *Pending) ValidUntil(t time.Time) {
	p.r.mu.Lock()
	defer p.r.mu.Unlock()
	p.r.ops[p.idx-p.r.base].ValidUntil = max(int64(t.Sub(p.r.start)), 1)
}

// Done completes the operation with status s. For reads, token and value are what was
// read; for acquires, token is the granted token; otherwise pass the values given to
// Begin. Status Unknown leaves the op open forever.
func (p *Pending) Done(s Status, token int64, value string, errText string) {
	p.r.mu.Lock()
	// Under the lock, so an op that returned before a fault's end is already recorded
	// when FaultEndNote reads the ops.
	now := p.r.Now()
	op := &p.r.ops[p.idx-p.r.base]
	op.Status = s
	op.Token = token
	op.Value = value
	op.Error = errText
	if s != Unknown {
		op.Return = &now
	}
	p.r.done[p.idx-p.r.base] = true
	done := *op
	watchers := p.r.watchers
	if p.r.spill != nil {
		p.r.spill.maybeFlush(p.r)
	}
	p.r.mu.Unlock()
	for _, w := range watchers {
		w(done)
	}
}

// Watch registers f to be called after every completed op. Call it before the run starts.
func (r *Recorder) Watch(f func(Op)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.watchers = append(r.watchers, f)
}

// FaultStart records the start of a fault and returns its index for FaultEnd.
func (r *Recorder) FaultStart(kind, target, detail string) int {
	return r.FaultStartAt(r.Now(), kind, target, detail)
}

// FaultStartAt is FaultStart for a fault that began at at (ns since the run started,
// Now's clock): one whose action takes a while, a SIGKILL and a restart, and is
// recorded only once it has said what it did.
func (r *Recorder) FaultStartAt(at int64, kind, target, detail string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faults = append(r.faults, Fault{Kind: kind, Target: target, Start: at, Detail: detail})
	return len(r.faults) - 1
}

// FaultDetail appends extra to fault i's detail: what its action found out once it ran
// (the process it stopped, say), after the fault's start was recorded.
func (r *Recorder) FaultDetail(i int, extra string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f := &r.faults[i]
	if f.Detail != "" {
		f.Detail += "; "
	}
	f.Detail += extra
}

// FaultSignal records that fault i sent signal to the service's processes pids.
func (r *Recorder) FaultSignal(i int, signal string, pids []int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faults[i].Signal, r.faults[i].PIDs = signal, slices.Clone(pids)
}

// FaultEnd records that fault i healed, appending to its detail if extra is not empty.
// Called again, it only appends (the fault keeps its first end).
func (r *Recorder) FaultEnd(i int, extra string) {
	r.FaultEndNote(i, func(Fault, []Op) string { return extra })
}

// FaultEndNote is FaultEnd with the extra text written from what was recorded up to the
// fault's end: note gets the fault, its End set, and every op recorded so far, which
// includes every op that returned by End (return times are taken under the same lock).
// note runs under the recorder's lock: it must not call the recorder or keep ops.
func (r *Recorder) FaultEndNote(i int, note func(f Fault, ops []Op) string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.Now()
	f := &r.faults[i]
	if f.End == nil {
		f.End = &now
	}
	if extra := note(*f, r.ops); extra != "" {
		if f.Detail != "" {
			f.Detail += "; "
		}
		f.Detail += extra
	}
}

// Fault returns a copy of fault i as recorded so far.
func (r *Recorder) Fault(i int) Fault {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.faults[i]
}

// History returns a copy of everything recorded so far as a v1 history.
func (r *Recorder) History(run Run) *History {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.historyLocked(run)
}

func (r *Recorder) historyLocked(run Run) *History {
	h := &History{Format: Format, Run: r.withGranted(run)}
	h.Ops = append([]Op(nil), r.ops...)
	h.Faults = append([]Fault{}, r.faults...)
	for i := range h.Ops {
		if h.Ops[i].ReadID != nil {
			id := *h.Ops[i].ReadID
			h.Ops[i].ReadID = &id
		}
	}
	if h.Ops == nil {
		h.Ops = []Op{}
	}
	h.Effects = r.effectsLocked(h.Ops)
	if len(r.lost) > 0 {
		h.Lost = append([]Lost(nil), r.lost...)
	}
	return h
}
