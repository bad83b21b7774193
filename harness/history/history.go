// Package history holds the recorded history of a fencecheck run: the v1 file format,
// its validation, and a concurrency-safe recorder. It is the hand-off between a run and
// the checkers, so it imports nothing heavy: `fencecheck check` works on a saved file
// without any lock service.
package history

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Format is the value of the "format" field of every v1 history file.
const Format = "fencecheck.history/v1"

// Kind is the kind of an operation.
type Kind string

// Operation kinds.
const (
	Acquire Kind = "acquire"
	Release Kind = "release"
	Write   Kind = "write"
	Read    Kind = "read"
)

// Status is the outcome of an operation.
type Status string

// Operation outcomes.
const (
	// OK: the operation took effect.
	OK Status = "ok"
	// Fail: the operation definitely had no effect.
	Fail Status = "fail"
	// Unknown: the operation may or may not have taken effect; it never returned.
	Unknown Status = "unknown"
	// Rejected: a write refused by the fence; definitely no effect.
	Rejected Status = "rejected"
)

// Op is one recorded operation. Times are nanoseconds since the run started, from a
// monotonic clock.
type Op struct {
	ID     int    `json:"id"`
	Client int    `json:"client"`
	Kind   Kind   `json:"kind"`
	Call   int64  `json:"call"`
	Return *int64 `json:"return"`
	Status Status `json:"status"`
	// Token: acquire = token granted; write = token sent; read = token stored;
	// release = token held.
	Token int64 `json:"token"`
	// Value: write = value sent (unique per write); read = value returned.
	Value string `json:"value,omitempty"`
	// ReadID names the read, in the same critical section, this write's value was
	// computed from (read-modify-write workloads).
	ReadID *int `json:"read_id,omitempty"`
	// Error is free text explaining a fail/unknown outcome.
	Error string `json:"error,omitempty"`
	// Key names the independent lock and register the op is about (multi-key runs);
	// "" (absent) is the single default key, so v1 files without it mean one key.
	Key string `json:"key,omitempty"`
	// ValidUntil, optional on an acquire or a write: when the client's own estimate
	// said its lease ends (harness.Expiring), on the ops' clock, read as the acquire
	// returned or right before the write was called; 0 (absent) when the lease keeps no
	// estimate. The overshoot figure reads it (docs/checker.md, "Lock timing").
	ValidUntil int64 `json:"valid_until,omitempty"`
}

// End returns the op's return time, or math.MaxInt64 when it never returned.
func (o Op) End() int64 {
	if o.Return == nil {
		return Infinity
	}
	return *o.Return
}

// Seconds formats a history time or duration (nanoseconds) as seconds, "1.11 s": the
// one format of every time fencecheck prints.
func Seconds(ns int64) string { return fmt.Sprintf("%.2f s", float64(ns)/1e9) }

// Infinity is the return time of an operation that never returned.
const Infinity = int64(^uint64(0) >> 1)

// Fault is one injected fault, with the interval it was active.
type Fault struct {
	Kind   string `json:"kind"`
	Target string `json:"target"`
	Start  int64  `json:"start"`
	// End is when the fault healed; nil if it was still active when the run ended.
	End    *int64 `json:"end"`
	Detail string `json:"detail,omitempty"`
	// Signal and PIDs, when set, say which signal the fault sent to which of the lock
	// service's processes (a node fault on server processes fencecheck started): what a
	// check reads, where Detail says it for people.
	Signal string `json:"signal,omitempty"`
	PIDs   []int  `json:"pids,omitempty"`
}

// The signals a fault records (Fault.Signal).
const (
	SignalStop = "SIGSTOP"
	SignalKill = "SIGKILL"
)

// Run describes the run that produced a history. Fields beyond the named ones are kept
// in Extra and written back unchanged.
type Run struct {
	Scenario string `json:"scenario,omitempty"`
	Backend  string `json:"backend,omitempty"`
	Resource string `json:"resource,omitempty"`
	// Fence is "strict" (accept iff token > stored, the default) or "monotonic"
	// (accept iff token >= stored).
	Fence string `json:"fence,omitempty"`
	Seed  int64  `json:"seed"`
	TTLms int64  `json:"ttl_ms,omitempty"`
	// NoToken, when set, says why the backend hands out no fencing token (Redlock's
	// random value): its grants carry the order in which the harness saw them granted
	// (for the checker to tell stale writes, not a fence a resource could use), and the
	// tokens property is violated by declaration rather than measured.
	NoToken string `json:"no_fencing_token,omitempty"`
	// Faults are the targeted faults the run asked for (fault names), RandomFaults the
	// kinds of its random schedule; a history whose run asked for faults and recorded
	// none in its faults member shows that no fault struck (the checker's verdicts are
	// then inconclusive). Optional: absent in a run without faults and in hand-written
	// files.
	Faults       []string `json:"faults,omitempty"`
	RandomFaults []string `json:"random_faults,omitempty"`
	// GrantedTTLms is the longest TTL the service granted any lease of the run (the
	// leases' TTL(): what the service said where it says, e.g. ZooKeeper's negotiated
	// session timeout or etcd's lease TTL); 0 (absent) when no lease was granted.
	GrantedTTLms int64 `json:"granted_ttl_ms,omitempty"`
	// ServerVersion is the lock service's version as the server itself reported it over
	// its protocol (etcd Status, Redis INFO, SELECT version(), ...), or the descriptor's
	// Version (the binary's --version) when the server would not say; "" when unknown.
	ServerVersion string `json:"server_version,omitempty"`
	// SessionTimeouts are the server settings that end a session holding a session
	// lock (PostgreSQL idle_session_timeout, MariaDB wait_timeout, ...), by name, as
	// the server reported them.
	SessionTimeouts map[string]string `json:"session_timeouts,omitempty"`
	// ClientLibrary is the lock client's library and its version as the clients said
	// (an exec client's "library", e.g. "kazoo 2.10.0") or as fencecheck was built with
	// it (a built-in client's Go module, "go.etcd.io/etcd/client/v3 v3.7.3"); "" when
	// unknown.
	ClientLibrary string         `json:"client_library,omitempty"`
	Extra         map[string]any `json:"-"`
}

// AskedForFaults reports whether the run asked for any fault, targeted or random.
func (r Run) AskedForFaults() bool { return len(r.Faults) > 0 || len(r.RandomFaults) > 0 }

// AskedFaults lists the faults the run asked for, targeted first.
func (r Run) AskedFaults() []string { return append(slices.Clone(r.Faults), r.RandomFaults...) }

// Fence rules.
const (
	FenceStrict    = "strict"
	FenceMonotonic = "monotonic"
	// FenceOwner is a guard rather than a comparison (etcd's txn on the lock key's
	// CreateRevision): an accepted write must carry a newer token than the stored one,
	// as under strict, but a refusal needs no explanation — the guard also refuses a
	// writer whose lock expired while no newer holder has written yet.
	FenceOwner = "owner"
)

// RefusalExplained reports whether a write with token t may be refused over a stored
// token under the fence: always for an owner guard, otherwise iff it does not pass.
func RefusalExplained(fence string, t, stored int64) bool {
	return fence == FenceOwner || !Passes(fence, t, stored)
}

// History is a whole v1 history file.
type History struct {
	Format string  `json:"format"`
	Run    Run     `json:"run"`
	Ops    []Op    `json:"ops"`
	Faults []Fault `json:"faults"`
	// Effects are the side effects delivered outside the resource (optional extension,
	// see Effect); absent when the run had none.
	Effects []Effect `json:"effects,omitempty"`
	// Lost are the moments clients learned they had lost their lease (optional
	// extension, see Lost); absent when none did or the backend does not say.
	Lost []Lost `json:"lost,omitempty"`
}

// FenceRule returns the run's fence rule, defaulting to strict.
func (h *History) FenceRule() string {
	if h.Run.Fence == "" {
		return FenceStrict
	}
	return h.Run.Fence
}

// Passes reports whether a write with token t passes the fence over a stored token.
func Passes(fence string, t, stored int64) bool {
	if fence == FenceMonotonic {
		return t >= stored
	}
	return t > stored
}

// OpError is a validation error naming the op and field at fault.
type OpError struct {
	ID    int
	Field string
	Msg   string
	// Index is the op's place in the history's ops (from 0), when known (Indexed): ids
	// need not be unique or in order in a hand-written file, an index is.
	Index   int
	Indexed bool
}

func (e *OpError) Error() string {
	if e.Indexed {
		return fmt.Sprintf("op %d (ops[%d]): field %q: %s", e.ID, e.Index, e.Field, e.Msg)
	}
	return fmt.Sprintf("op %d: field %q: %s", e.ID, e.Field, e.Msg)
}

// atIndex places an OpError of the i-th op; any other error is returned as it is.
func atIndex(err error, i int) error {
	var oe *OpError
	if errors.As(err, &oe) && !oe.Indexed {
		oe.Index, oe.Indexed = i, true
	}
	return err
}

// Validate checks that the history is internally consistent. The error names the op id
// and field at fault.
func (h *History) Validate() error {
	if h.Format != Format {
		return fmt.Errorf("field \"format\": got %q, want %q", h.Format, Format)
	}
	if err := h.Run.Check(); err != nil {
		return err
	}
	ids, err := newOpIndex(h.Ops)
	if err != nil {
		return err
	}
	values := make(map[string]int) // write value -> op id
	for i := range h.Ops {
		o := &h.Ops[i]
		if err := o.Check(); err != nil {
			return atIndex(err, i)
		}
		if o.Kind == Write {
			if prev, dup := values[o.Value]; dup {
				return atIndex(DuplicateValue(o, prev), i)
			}
			values[o.Value] = o.ID
		}
	}
	for i := range h.Ops {
		o := &h.Ops[i]
		if o.ReadID == nil {
			continue
		}
		var r *Op
		if j, ok := ids.find(*o.ReadID); ok {
			r = &h.Ops[j]
		}
		if err := o.CheckReadID(r); err != nil {
			return atIndex(err, i)
		}
	}
	if err := h.validateEffects(ids); err != nil {
		return err
	}
	if err := h.validateLost(ids); err != nil {
		return err
	}
	return ValidateFaults(h.Faults)
}

// Check validates the run's fence rule.
func (r Run) Check() error {
	// The run is open, but a free-form member a named field's misspelling is likely of
	// ("granted_tll_ms") would silently drop what the named field says.
	for _, k := range slices.Sorted(maps.Keys(r.Extra)) {
		if near := nearest(k, runFields); near != "" {
			return &FieldError{Where: "run", Field: k, Err: ErrUnknownField,
				Msg: fmt.Sprintf("unknown field (did you mean %q?); a free-form member of the run may not be within two edits of a named one (%s)", near, strings.Join(runFields, ", "))}
		}
	}
	if r.TTLms < 0 {
		return fmt.Errorf("field \"run.ttl_ms\": %d is negative", r.TTLms)
	}
	if r.GrantedTTLms < 0 {
		return fmt.Errorf("field \"run.granted_ttl_ms\": %d is negative", r.GrantedTTLms)
	}
	switch r.Fence {
	case "", FenceStrict, FenceMonotonic, FenceOwner:
		return nil
	}
	return fmt.Errorf("field \"run.fence\": got %q, want %q, %q or %q", r.Fence, FenceStrict, FenceMonotonic, FenceOwner)
}

// ValidateFaults checks the faults of a history on their own.
func ValidateFaults(faults []Fault) error {
	for i, f := range faults {
		if f.Kind == "" {
			return fmt.Errorf("faults[%d]: field \"kind\": empty", i)
		}
		if f.Start < 0 {
			return fmt.Errorf("faults[%d]: field \"start\": negative time %d", i, f.Start)
		}
		if f.End != nil && *f.End < f.Start {
			return fmt.Errorf("faults[%d]: field \"end\": %d is before start %d", i, *f.End, f.Start)
		}
	}
	return nil
}

// Check validates what an op says on its own: kind, status, client, times, a write's
// value and an ok acquire's token. The error names the op and the field.
func (o *Op) Check() error {
	switch o.Kind {
	case Acquire, Release, Write, Read:
	default:
		return &OpError{ID: o.ID, Field: "kind", Msg: fmt.Sprintf("unknown kind %q (want acquire, release, write or read)", o.Kind)}
	}
	switch o.Status {
	case OK, Fail, Unknown:
	case Rejected:
		if o.Kind != Write {
			return &OpError{ID: o.ID, Field: "status", Msg: fmt.Sprintf("status %q is for writes only, this op is a %s", o.Status, o.Kind)}
		}
	default:
		return &OpError{ID: o.ID, Field: "status", Msg: fmt.Sprintf("unknown status %q (want ok, fail, unknown or rejected)", o.Status)}
	}
	if o.Client < 0 {
		return &OpError{ID: o.ID, Field: "client", Msg: fmt.Sprintf("negative client %d", o.Client)}
	}
	if o.Call < 0 {
		return &OpError{ID: o.ID, Field: "call", Msg: fmt.Sprintf("negative time %d", o.Call)}
	}
	if o.ValidUntil < 0 {
		return &OpError{ID: o.ID, Field: "valid_until", Msg: fmt.Sprintf("negative time %d", o.ValidUntil)}
	}
	if o.Status == Unknown {
		if o.Return != nil {
			return &OpError{ID: o.ID, Field: "return", Msg: "an unknown op never returned: return must be null"}
		}
	} else {
		if o.Return == nil {
			return &OpError{ID: o.ID, Field: "return", Msg: fmt.Sprintf("missing return time for a %s op", o.Status)}
		}
		if *o.Return < o.Call {
			return &OpError{ID: o.ID, Field: "return", Msg: fmt.Sprintf("return %d is before call %d", *o.Return, o.Call)}
		}
	}
	if o.Kind == Write && o.Value == "" {
		return &OpError{ID: o.ID, Field: "value", Msg: "a write must carry a non-empty value (\"\" is the initial value)"}
	}
	if o.Kind == Acquire && o.Status == OK && o.Token == 0 {
		return &OpError{ID: o.ID, Field: "token", Msg: "an ok acquire must carry the granted token"}
	}
	return nil
}

// DuplicateValue is the error for write o, whose value op prev already wrote.
func DuplicateValue(o *Op, prev int) error {
	return &OpError{ID: o.ID, Field: "value", Msg: fmt.Sprintf("value %q was already written by op %d; write values must be unique", o.Value, prev)}
}

// CheckReadID validates write o's read_id against r, the op it names (nil when no op
// has that id).
func (o *Op) CheckReadID(r *Op) error {
	if o.Kind != Write {
		return &OpError{ID: o.ID, Field: "read_id", Msg: "only writes carry read_id"}
	}
	if r == nil {
		return &OpError{ID: o.ID, Field: "read_id", Msg: fmt.Sprintf("names op %d, which does not exist", *o.ReadID)}
	}
	if r.Kind != Read || r.Client != o.Client {
		return &OpError{ID: o.ID, Field: "read_id", Msg: fmt.Sprintf("names op %d, which is not a read of client %d", r.ID, o.Client)}
	}
	if r.Status != OK {
		return &OpError{ID: o.ID, Field: "read_id", Msg: fmt.Sprintf("names op %d, a read with status %s (want ok)", r.ID, r.Status)}
	}
	if r.Key != o.Key {
		return &OpError{ID: o.ID, Field: "read_id", Msg: fmt.Sprintf("names op %d, a read of key %q, but this write is to key %q", r.ID, r.Key, o.Key)}
	}
	return nil
}

// opIndex finds an op's index by id: by binary search when the ids increase (as every
// recorded history's do), so validating a million ops builds no map; by map otherwise.
type opIndex struct {
	ops  []Op
	byID map[int]int // nil while the ids increase
}

// newOpIndex indexes ops, or names the first duplicate id.
func newOpIndex(ops []Op) (opIndex, error) {
	x := opIndex{ops: ops}
	for i := 1; i < len(ops); i++ {
		if ops[i].ID <= ops[i-1].ID {
			x.byID = make(map[int]int, len(ops))
			break
		}
	}
	if x.byID != nil {
		for i, o := range ops {
			if _, dup := x.byID[o.ID]; dup {
				return x, &OpError{ID: o.ID, Field: "id", Msg: "duplicate id", Index: i, Indexed: true}
			}
			x.byID[o.ID] = i
		}
	}
	return x, nil
}

func (x opIndex) find(id int) (int, bool) {
	if x.byID != nil {
		i, ok := x.byID[id]
		return i, ok
	}
	return slices.BinarySearchFunc(x.ops, id, func(o Op, id int) int { return cmp.Compare(o.ID, id) })
}

// LastTime is the latest time the history records (an op's call or return, a fault's
// start or end): the end of the run as far as it shows.
func (h *History) LastTime() int64 {
	var t int64
	for _, o := range h.Ops {
		t = max(t, o.Call)
		if o.Return != nil {
			t = max(t, *o.Return)
		}
	}
	for _, f := range h.Faults {
		t = max(t, f.Start)
		if f.End != nil {
			t = max(t, *f.End)
		}
	}
	return t
}

// Finder returns a function that finds an op by id (nil if none has it). It builds no
// map when the ids increase, as every recorded history's do: a million-op history is
// searched in place.
func (h *History) Finder() func(id int) *Op {
	index := h.Indexer()
	return func(id int) *Op {
		if i := index(id); i >= 0 {
			return &h.Ops[i]
		}
		return nil
	}
}

// Indexer is Finder for the op's index in h.Ops, -1 if none has the id.
func (h *History) Indexer() func(id int) int {
	x, err := newOpIndex(h.Ops)
	if err != nil { // duplicate ids (an invalid history): the last one's index
		m := make(map[int]int, len(h.Ops))
		for i, o := range h.Ops {
			m[o.ID] = i
		}
		x = opIndex{ops: h.Ops, byID: m}
	}
	return func(id int) int {
		if i, ok := x.find(id); ok {
			return i
		}
		return -1
	}
}

// ByID returns a map from op id to op.
func (h *History) ByID() map[int]*Op {
	m := make(map[int]*Op, len(h.Ops))
	for i := range h.Ops {
		m[h.Ops[i].ID] = &h.Ops[i]
	}
	return m
}
