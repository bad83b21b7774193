package models

import "time"

// Property names one thing a history is checked for.
type Property string

// The four properties, in the order reports show them.
const (
	// Register: the resource behaves as one atomic register that accepts a write iff its
	// token passes the fence. A violation means a stale write got through (the token
	// went backwards) or the fence is not atomic.
	Register Property = "register"
	// Updates: every read-modify-write critical section is atomic. A violation means the
	// protected data lost an update, even where tokens look fine.
	Updates Property = "updates"
	// Tokens: grants carry strictly increasing tokens in real-time order. A violation
	// means token reuse or regression.
	Tokens Property = "tokens"
	// Mutex: at most one client believes it holds the lock at any time. Lease locks
	// violate it under pauses; that is why fencing exists.
	Mutex Property = "mutex"
)

// Properties lists every property in report order. Treat it as read-only.
var Properties = []Property{Register, Updates, Tokens, Mutex}

// Valid reports whether p is one of Properties.
func (p Property) Valid() bool {
	switch p {
	case Register, Updates, Tokens, Mutex:
		return true
	}
	return false
}

// Verdict is the outcome of checking one property.
type Verdict string

// Verdicts.
const (
	// Violated: the history cannot be explained by the property's model.
	Violated Verdict = "violated"
	// Held: the history is explained by the model, and the fault was seen to bite.
	Held Verdict = "held"
	// Inconclusive: held, but the run's faults never produced the situation the
	// property is about (no stale write was attempted, fewer than two grants), so it
	// proves nothing. A history without faults is simply held.
	Inconclusive Verdict = "inconclusive"
	// Unknown: the checker timed out.
	Unknown Verdict = "unknown"
)

// Result is the verdict on one property with its evidence.
type Result struct {
	Property Property `json:"property"`
	Verdict  Verdict  `json:"verdict"`
	// Counterexample holds the op ids of a minimal counterexample when violated, e.g.
	// the stale write and the newer write it overtook.
	Counterexample []int `json:"counterexample,omitempty"`
	// Explanation is one or two sentences a newcomer understands.
	Explanation string `json:"explanation"`
	// CheckNanos is the time porcupine took.
	CheckNanos int64 `json:"check_ns"`
	// DirectViolated is the direct analysis's answer; it differs from the verdict only
	// when the two checkers disagree (see Report.Agree).
	DirectViolated bool `json:"direct_violated"`
}

// StaleWrite is a write carrying a token older, by the fence rule, than that of a write
// already accepted: the write a fence exists to stop.
type StaleWrite struct {
	// Write is the stale write's op id.
	Write  int   `json:"write"`
	Client int   `json:"client"`
	Token  int64 `json:"token"`
	// At is the stale write's call time.
	At int64 `json:"at"`
	// Status is "accepted" (it got through) or "rejected" (the fence stopped it).
	Status string `json:"status"`
	// Newer is the accepted write it overtook, or was refused because of.
	Newer       int   `json:"newer"`
	NewerClient int   `json:"newer_client"`
	NewerToken  int64 `json:"newer_token"`
	// NewerAt is when the newer write was known to be in effect: its return, or the
	// earlier return of a read that saw its value.
	NewerAt int64 `json:"newer_at"`
	// SeenBy is a read that observed the stale value, when that read is the evidence
	// that the stale write was accepted.
	SeenBy int `json:"seen_by,omitempty"`
}

// StaleWrite.Status values.
const (
	statusAccepted = "accepted"
	statusRejected = "rejected"
)

// LostUpdate is an accepted write whose critical section did not read the value that
// was accepted just before it, so that value's update was overwritten unseen.
type LostUpdate struct {
	// Write is the accepted read-modify-write.
	Write  int `json:"write"`
	Client int `json:"client"`
	// ReadID and ReadValue are the read its value was computed from.
	ReadID    int    `json:"read_id"`
	ReadValue string `json:"read_value"`
	// Lost is the accepted write whose value was overwritten without being read; 0 if
	// none can be named.
	Lost        int    `json:"lost"`
	Explanation string `json:"explanation"`
}

// Evidence is what shows whether the fault bit, and what it cost.
type Evidence struct {
	// Stale writes attempted (accepted + rejected), rejected by the fence, and
	// accepted (got through).
	StaleAttempted int `json:"stale_attempted"`
	StaleRejected  int `json:"stale_rejected"`
	StaleAccepted  int `json:"stale_accepted"`
	// Writes by status.
	Writes         int `json:"writes"`
	WritesAccepted int `json:"writes_accepted"`
	WritesRefused  int `json:"writes_refused"`
	WritesUnknown  int `json:"writes_unknown"`
	WritesFailed   int `json:"writes_failed"`
	// Grants are ok acquires; AcquireFailed counts fail and unknown acquires.
	Grants        int `json:"grants"`
	AcquireFailed int `json:"acquire_failed"`
	// ValidityGapNanos is the lock validity gap: the longest time a client went on
	// believing it held the lock (from its acquire's return to its release's call) after
	// another client's belief began. ValidityGapTotalNanos is the total time during which
	// at least two clients believed so.
	ValidityGapNanos      int64 `json:"validity_gap_ns"`
	ValidityGapTotalNanos int64 `json:"validity_gap_total_ns"`
	// LongestNoAcceptedWriteNanos measures availability: the longest stretch from the
	// first write's call to the first accepted write's return, between two consecutive
	// accepted writes' returns, or from the last accepted return to a later write's call.
	LongestNoAcceptedWriteNanos int64 `json:"longest_no_accepted_write_ns"`
}

// Report is the outcome of Check.
type Report struct {
	// Verdicts maps each property to its verdict: {"register": "held", ...}.
	Verdicts map[Property]Verdict `json:"verdicts"`
	// Results holds one Result per property, in Properties order.
	Results     []Result     `json:"results"`
	StaleWrites []StaleWrite `json:"stale_writes"`
	LostUpdates []LostUpdate `json:"lost_updates"`
	Evidence    Evidence     `json:"evidence"`
	// Agree is true when porcupine and the direct analysis agree on every property
	// porcupine decided (a timed-out property cannot disagree).
	Agree bool `json:"direct_agrees"`
	// Effects is the evidence of the optional effects property (effects.go); nil, and
	// absent from Verdicts and Results, when the history records no side effects.
	Effects *EffectsReport `json:"effects,omitempty"`
}

// Result returns the result for p.
func (r *Report) Result(p Property) (Result, bool) {
	for _, res := range r.Results {
		if res.Property == p {
			return res, true
		}
	}
	return Result{}, false
}

// Options tunes Check.
type Options struct {
	// Timeout bounds porcupine per property; 0 means DefaultTimeout. A deadline on the
	// context passed to Check also bounds it.
	Timeout time.Duration
}

// DefaultTimeout is the per-property porcupine timeout when Options.Timeout is 0.
const DefaultTimeout = 30 * time.Second
