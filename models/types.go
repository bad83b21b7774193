package models

import "time"

// Property names one thing a history is checked for.
type Property string

// The four core properties. Each is a plug-in (property.go): its definition is its
// doc (Property.Doc), its file register_prop.go, updates_prop.go or locks_prop.go.
const (
	Register Property = "register"
	Updates  Property = "updates"
	Tokens   Property = "tokens"
	Mutex    Property = "mutex"
)

// Verdict is the outcome of checking one property.
type Verdict string

// Verdicts.
const (
	// Violated: the history cannot be explained by the property's model.
	Violated Verdict = "violated"
	// Held: the history is explained by the model, and the fault was seen to bite.
	Held Verdict = "held"
	// Inconclusive: nothing contradicts the property, but the history lacks the
	// evidence that would make that mean something (Result.Reason says which: no op, no
	// grant, no accepted write, a fault asked for that never struck, or a fault that
	// struck but produced no stale write or fewer than two grants), so it proves nothing.
	// A history without faults, with grants and accepted writes, is simply held.
	Inconclusive Verdict = "inconclusive"
	// Unknown: no checker could decide. The direct analysis decides every property, so
	// Check no longer gives it; it stays for reports written by older versions.
	Unknown Verdict = "unknown"
)

// Reason says why a verdict is inconclusive: the evidence the history lacks.
type Reason string

// Reasons, in the order the checker looks for them (the first that applies is given).
const (
	// ReasonNoOps: the history has no operations at all.
	ReasonNoOps Reason = "no-ops"
	// ReasonNoGrant: acquires were made and none was granted.
	ReasonNoGrant Reason = "no-grant"
	// ReasonFaultNeverStruck: the run asked for faults (history.Run.Faults,
	// RandomFaults) and none struck (the history records no fault).
	ReasonFaultNeverStruck Reason = "fault-never-struck"
	// ReasonNoAcceptedWrite: no write was accepted (register and updates).
	ReasonNoAcceptedWrite Reason = "no-accepted-write"
	// ReasonNoStaleWrite: a fault struck but no stale write was attempted (register,
	// updates, effects).
	ReasonNoStaleWrite Reason = "no-stale-write"
	// ReasonFewGrants: under faults, fewer than two grants (tokens).
	ReasonFewGrants Reason = "few-grants"
)

// Untested reports whether the reason means the run exercised nothing — no op, no
// grant, no accepted write, or the fault never struck — as opposed to a fault that
// struck and did not produce the situation the property is about (no stale write
// attempted, fewer than two grants): the first is a run that went wrong, the second a
// finding about the backend under that fault.
func (r Reason) Untested() bool {
	switch r {
	case ReasonNoOps, ReasonNoGrant, ReasonFaultNeverStruck, ReasonNoAcceptedWrite:
		return true
	}
	return false
}

// Result is the verdict on one property with its evidence.
type Result struct {
	Property Property `json:"property"`
	Verdict  Verdict  `json:"verdict"`
	// Reason and Why, on an inconclusive verdict only: the evidence the history lacks,
	// as data (Reason) and in a short phrase for a line or a table cell (Why, e.g. "no
	// lock was granted: all 15 acquires failed, the first with \"…\""); Explanation
	// says it in a sentence.
	Reason Reason `json:"reason,omitempty"`
	Why    string `json:"why,omitempty"`
	// Counterexample holds the op ids of a minimal counterexample when violated, e.g.
	// the stale write and the newer write it overtook.
	Counterexample []int `json:"counterexample,omitempty"`
	// Explanation is one or two sentences a newcomer understands.
	Explanation string `json:"explanation"`
	// CheckNanos is the time porcupine took on the whole history, when it answered.
	CheckNanos int64 `json:"check_ns"`
	// DirectViolated is the direct analysis's answer, which is the verdict.
	DirectViolated bool `json:"direct_violated"`
	// Certified: the verdict is violated and porcupine found the witness illegal too.
	// Witness holds the op ids of that sub-history (docs/checker.md says how it is cut);
	// CertifyNote says what porcupine made of it.
	Certified   bool   `json:"certified"`
	Witness     []int  `json:"witness,omitempty"`
	CertifyNote string `json:"certify_note,omitempty"`
	// Porcupine is porcupine's second opinion on the whole history: agreed, disagreed,
	// timed out (the budget ran out) or skipped; PorcupineNote says more.
	Porcupine     Opinion `json:"porcupine,omitempty"`
	PorcupineNote string  `json:"porcupine_note,omitempty"`
}

// Opinion is porcupine's second opinion on a property.
type Opinion string

// Opinions.
const (
	OpinionAgreed    Opinion = "agreed"
	OpinionDisagreed Opinion = "disagreed"
	OpinionTimedOut  Opinion = "timed out"
	OpinionSkipped   Opinion = "skipped"
)

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
	// earlier return of a read that saw its value (NewerSeenBy, then).
	NewerAt     int64 `json:"newer_at"`
	NewerSeenBy int   `json:"newer_seen_by,omitempty"`
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
	// FirstAcquireError is the error text of the first failed acquire (by call time)
	// that has one, as the history records it; absent when none does.
	FirstAcquireError string `json:"first_acquire_error,omitempty"`
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

	// Lock timing (docs/checker.md, "Lock timing"); no verdict depends on it. A hold is an
	// ok acquire and the release that ends it, as the mutex analysis pairs them; it lasts
	// from the acquire's return to the release's call (whatever the release's status: by
	// then the client no longer believes it holds the lock), or to the end of the history.
	//
	// Superseded counts grants whose holder was superseded: another client was granted
	// the lock while this holder had not released it (another hold of the same key began —
	// its acquire returned — after this grant's return and before this release's call).
	// Noticed counts those whose holder recorded a Lost for that grant (a lost record
	// naming its acquire); NeverNoticed = Superseded - Noticed.
	Superseded   int `json:"superseded"`
	Noticed      int `json:"noticed"`
	NeverNoticed int `json:"never_noticed"`
	// NoticeDelayNanos is the longest delay, over noticed supersessions, from the moment
	// another client was granted the lock (the next grant's return) to the holder's Lost
	// record (its earliest for that grant); 0 when the Lost came first (the holder knew
	// before anyone else was granted). NoticeDelayP50Nanos is the median (nearest rank) of
	// the same delays.
	NoticeDelayNanos    int64 `json:"notice_delay_ns"`
	NoticeDelayP50Nanos int64 `json:"notice_delay_p50_ns"`
	// TakeoverNanos is the longest time from a holder's last successful op (its last
	// accepted write's return, or its grant's return if it wrote nothing) before it was
	// superseded, to the next grant to another client's return: how long the lock sat with
	// a holder that had stopped making progress before someone else could take over. The
	// holder's writes are its ok writes on the key between its acquire and its release
	// in call order that returned no later than the next grant.
	TakeoverNanos int64 `json:"takeover_ns"`
	// OvershootNanos is the longest overshoot over the superseded holds whose holder
	// recorded its own validity estimate (an op's valid_until): how long after the next
	// grant's return that estimate — the latest valid_until on the hold's acquire and
	// writes — still said the lock was held, max(0, valid_until − S). Estimated counts
	// those holds; 0 when the lease keeps no estimate (the figure is then unknown, not 0).
	OvershootNanos int64 `json:"overshoot_ns"`
	Estimated      int   `json:"estimated"`
	// AcquireP50Nanos / AcquireP99Nanos: latency (call to return) of ok acquires (nearest
	// rank; exact up to 65,536 acquires, beyond within 1% from a log-linear histogram);
	// GrantsPerSecond: ok acquires over the history's span (its ops' first call to their
	// last return), 0 when the span is empty.
	AcquireP50Nanos int64   `json:"acquire_p50_ns"`
	AcquireP99Nanos int64   `json:"acquire_p99_ns"`
	GrantsPerSecond float64 `json:"grants_per_second"`
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
	// Agree is true when porcupine did not disagree with the direct analysis on any
	// property (a skipped or timed-out second opinion cannot disagree).
	Agree bool `json:"direct_agrees"`
	// DirectNanos is how long the direct analysis took.
	DirectNanos int64 `json:"direct_ns,omitempty"`
	// Effects is the evidence of the optional effects property (effects.go); nil, and
	// absent from Verdicts and Results, when the history records no side effects.
	Effects *EffectsReport `json:"effects,omitempty"`
	// Ops counts the history's ops when it was checked as a stream (CheckFile), which
	// keeps no history to count them in; then StaleWrites and LostUpdates list the
	// first 1,000 each (Evidence counts every one). Absent otherwise.
	Ops int `json:"ops,omitempty"`
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
	// PorcupineBudget is how long Check waits for porcupine's second opinion once the
	// direct analysis has answered: 0 means DefaultPorcupineBudget, NoPorcupine skips
	// it, WaitForPorcupine waits for it.
	PorcupineBudget time.Duration
	// Timeout, when > 0, is a hard ceiling on porcupine's second opinion, also when
	// waiting for it.
	Timeout time.Duration
	// PorcupineMaxBytes caps the memory porcupine's second opinion may need, estimated
	// as n²/8 bytes for n model ops on one key; a property over it is skipped. 0 means
	// DefaultPorcupineMaxBytes.
	PorcupineMaxBytes int64
	// Select asks for the opt-in properties (Property.OptIn) to check, when the history
	// calls for them; naming another property changes nothing. Nil: none.
	Select []Property
	// StreamAbove is the size in bytes above which CheckFile checks a history file as a
	// stream rather than in memory; 0 means DefaultStreamAbove, a negative value
	// streams every file.
	StreamAbove int64
}

// Porcupine budgets.
const (
	DefaultPorcupineBudget = time.Second
	// WaitForPorcupine waits for porcupine's answer (up to Options.Timeout).
	WaitForPorcupine time.Duration = -1
	// NoPorcupine skips the second opinion (witnesses are still certified).
	NoPorcupine time.Duration = -2
	// DefaultPorcupineMaxBytes: porcupine's memo table for about 23,000 ops on one key.
	DefaultPorcupineMaxBytes int64 = 64 << 20
)

// DefaultTimeout bounds porcupine where nothing else does: Visualize, and witnesses.
const DefaultTimeout = 30 * time.Second

func (o Options) budget() time.Duration {
	switch {
	case o.PorcupineBudget == 0:
		return DefaultPorcupineBudget
	case o.PorcupineBudget < 0 && o.PorcupineBudget != NoPorcupine:
		return WaitForPorcupine
	}
	return o.PorcupineBudget
}

func (o Options) maxBytes() int64 {
	if o.PorcupineMaxBytes > 0 {
		return o.PorcupineMaxBytes
	}
	return DefaultPorcupineMaxBytes
}
