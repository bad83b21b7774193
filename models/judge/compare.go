package judge

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/models"
)

// ComparisonFormat names compare.json's format.
const ComparisonFormat = "fencecheck.compare/v1"

// Comparison is the outcome of `fencecheck compare`: every service's recommended
// variant on the same terms (one TTL, one fault set, the same workload), side by side.
type Comparison struct {
	Format  string    `json:"format"`
	Started time.Time `json:"started"`
	Seconds float64   `json:"seconds"`
	// TTLNanos is every run's lease TTL.
	TTLNanos int64 `json:"ttl_ns"`
	// Faults are the faults every service ran under (each unfenced and fenced), besides
	// the run without a fault.
	Faults   []string       `json:"faults"`
	Machine  Machine        `json:"machine"`
	Services []ServiceRow   `json:"services"`
	Skipped  []SkippedEntry `json:"skipped"`

	// Judged by Judge: Complete when every run of every service ran and was decided,
	// and no backend asked for was skipped.
	Complete bool `json:"complete"`

	// Sharding, when set, says the comparison is one shard of a plan, or merged shards.
	Sharding *Sharding `json:"sharding,omitempty"`
}

// Machine is where a comparison ran.
type Machine struct {
	CPUs      int    `json:"cpus"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
	Kernel    string `json:"kernel,omitempty"`
	GoVersion string `json:"go_version"`
}

// SkippedEntry is a backend the comparison did not run, and why (one line).
type SkippedEntry struct {
	Backend string `json:"backend"`
	Reason  string `json:"reason"`
	// Asked: the backend was asked for by name (or by an option that points at it), so
	// the comparison is incomplete without it.
	Asked bool `json:"asked,omitempty"`
}

// Facts are what a backend's descriptor (and its Shape's interfaces) declare about its
// token and leases: the paragraph under a service is derived from them and the runs.
type Facts struct {
	// Token says where the fencing token comes from; NoToken, when set, why there is
	// none.
	Token   string `json:"token"`
	NoToken string `json:"no_token,omitempty"`
	// TokensResetOnCrash, TokenFromClock, Pool, ClientClockExpiry: what breaks the token
	// or the lock (registry.Backend's fields of those names).
	TokensResetOnCrash bool   `json:"tokens_reset_on_crash"`
	TokenFromClock     bool   `json:"token_from_clock"`
	Pool               string `json:"pool,omitempty"`
	ClientClockExpiry  bool   `json:"client_clock_expiry"`
	// DurableLeases: a restarted server keeps its leases.
	DurableLeases bool `json:"durable_leases"`
	// ClientExpiry: the leases know their end by the client's clock (harness.Expiring).
	ClientExpiry bool `json:"client_expiry"`
	// External says which option pointed the backend at servers fencecheck does not own.
	External string `json:"external,omitempty"`
}

// CompareRun is one run of a comparison: its figures, from the checked history.
type CompareRun struct {
	Resource string `json:"resource"`
	Scenario string `json:"scenario"`
	// Outcome: unsafe, safe, inconclusive, unknown (see Outcome), "error", or "not run"
	// (a fenced run of a backend without a token).
	Outcome string `json:"outcome"`
	// Reason and Why say why an inconclusive run proves nothing (see Why).
	Reason   models.Reason                      `json:"reason,omitempty"`
	Why      string                             `json:"why,omitempty"`
	Verdicts map[models.Property]models.Verdict `json:"verdicts,omitempty"`
	TTLNanos int64                              `json:"ttl_ns"`

	StaleAttempted              int     `json:"stale_attempted"`
	StaleRejected               int     `json:"stale_rejected"`
	StaleAccepted               int     `json:"stale_accepted"`
	Grants                      int     `json:"grants"`
	ValidityGapNanos            int64   `json:"validity_gap_ns"`
	LongestNoAcceptedWriteNanos int64   `json:"longest_no_accepted_write_ns"`
	Superseded                  int     `json:"superseded"`
	Noticed                     int     `json:"noticed"`
	NeverNoticed                int     `json:"never_noticed"`
	NoticeDelayNanos            int64   `json:"notice_delay_ns"`
	NoticeDelayP50Nanos         int64   `json:"notice_delay_p50_ns"`
	TakeoverNanos               int64   `json:"takeover_ns"`
	AcquireP50Nanos             int64   `json:"acquire_p50_ns"`
	AcquireP99Nanos             int64   `json:"acquire_p99_ns"`
	GrantsPerSecond             float64 `json:"grants_per_second"`

	// Dir is the run's folder relative to the store's root.
	Dir     string  `json:"dir,omitempty"`
	Seconds float64 `json:"seconds"`
	Error   string  `json:"error,omitempty"`
}

// NewCompareRun summarizes a checked run at ttl.
func NewCompareRun(resource, scenario string, ttl time.Duration, rep *models.Report) CompareRun {
	ev := rep.Evidence
	reason, why := Why(rep)
	return CompareRun{
		Resource: resource, Scenario: scenario, Outcome: Outcome(rep), Reason: reason, Why: why, Verdicts: rep.Verdicts, TTLNanos: ttl.Nanoseconds(),
		StaleAttempted: ev.StaleAttempted, StaleRejected: ev.StaleRejected, StaleAccepted: ev.StaleAccepted, Grants: ev.Grants,
		ValidityGapNanos: ev.ValidityGapNanos, LongestNoAcceptedWriteNanos: ev.LongestNoAcceptedWriteNanos,
		Superseded: ev.Superseded, Noticed: ev.Noticed, NeverNoticed: ev.NeverNoticed,
		NoticeDelayNanos: ev.NoticeDelayNanos, NoticeDelayP50Nanos: ev.NoticeDelayP50Nanos, TakeoverNanos: ev.TakeoverNanos,
		AcquireP50Nanos: ev.AcquireP50Nanos, AcquireP99Nanos: ev.AcquireP99Nanos, GrantsPerSecond: ev.GrantsPerSecond,
	}
}

// ErrorRun is a run that gave no report.
func ErrorRun(resource, scenario, msg string) CompareRun {
	return CompareRun{Resource: resource, Scenario: scenario, Outcome: "error", Error: msg}
}

// NotRunWord is the outcome of a run that was not made (a fenced run without a token).
const NotRunWord = "not run"

// Decided reports whether the run ran and the checker decided.
func (r CompareRun) Decided() bool {
	return r.Outcome == OutcomeSafe || r.Outcome == OutcomeUnsafe || r.Outcome == OutcomeInconclusive
}

// NoticeWords says how long a superseded holder took to notice: "never" when one never
// did, its longest delay otherwise, "—" when no holder was superseded.
func (r CompareRun) NoticeWords() string {
	switch {
	case r.NeverNoticed > 0:
		return "never"
	case r.Superseded == 0:
		return "—"
	}
	return noticeDuration(r.NoticeDelayNanos)
}

// noticeDuration is a notice delay in words: 0 means the holder's loss signal came
// before the other client's grant.
func noticeDuration(ns int64) string {
	if ns == 0 {
		return "0 (before the takeover)"
	}
	return Duration(ns)
}

// CompareFault is one fault of a service: its unfenced and fenced runs.
type CompareFault struct {
	Fault    string     `json:"fault"`
	Meaning  string     `json:"meaning"`
	Unfenced CompareRun `json:"unfenced"`
	Fenced   CompareRun `json:"fenced"`
	// Judged by Judge: the unfenced run's word ("stale writes got through", "held",
	// ...) and the fenced one's ("held", "VIOLATED", "no fencing token", ...).
	UnfencedWord string `json:"unfenced_verdict"`
	FencedWord   string `json:"fenced_verdict"`
}

// ServiceRow is one compared service: its recommended variant (or the backend asked
// for), its facts, the run without a fault and one entry per fault.
type ServiceRow struct {
	// Name is the row's name: the backend's, with -external on servers fencecheck does
	// not own.
	Name        string            `json:"name"`
	Service     string            `json:"service"`
	Backend     string            `json:"backend"`
	Recommended bool              `json:"recommended"`
	Options     map[string]string `json:"options,omitempty"`
	Setup       string            `json:"setup"`
	Version     string            `json:"version"`
	Facts       Facts             `json:"facts"`
	Baseline    CompareRun        `json:"baseline"`
	Faults      []CompareFault    `json:"faults"`

	// Judged by Judge:
	// Verdict: "safe with fencing", "UNSAFE with fencing", "no fencing token",
	// "incomplete", "inconclusive".
	Verdict string `json:"verdict"`
	// Safe: every fenced run held (or had no stale write attempted) and tokens stayed
	// monotonic, every run was decided, and the fence was tested: some fenced run had
	// stale writes attempted and rejected, and no run tested nothing.
	Safe bool `json:"safe"`
	// Inconclusive, when the verdict is, says why: no run showed fencing fail, but the
	// runs lack the evidence.
	Inconclusive string `json:"inconclusive,omitempty"`
	// The worst figures over the faults' unfenced runs (the lock alone).
	ValidityGapNanos int64 `json:"validity_gap_ns"`
	NoticeDelayNanos int64 `json:"notice_delay_ns"`
	NeverNoticed     int   `json:"never_noticed"`
	TakeoverNanos    int64 `json:"takeover_ns"`
	// Paragraph is what the figures mean for a caller, derived from Facts and the runs.
	Paragraph string `json:"paragraph"`
}

// Verdict words of a service.
const (
	VerdictSafe       = "safe with fencing"
	VerdictUnsafe     = "UNSAFE with fencing"
	VerdictNoToken    = "no fencing token"
	VerdictIncomplete = "incomplete"
	// VerdictInconclusive: every run was decided and none showed fencing fail, but no
	// stale write was attempted against the fence, or a run tested nothing.
	VerdictInconclusive = "inconclusive"
)

// Judge fills every service's words, verdict, worst figures and paragraph.
func (c *Comparison) Judge() {
	c.Format = ComparisonFormat
	c.Complete = true
	if c.Skipped == nil {
		c.Skipped = []SkippedEntry{} // an empty list in JSON, not null
	}
	if c.Services == nil {
		c.Services = []ServiceRow{}
	}
	for _, s := range c.Skipped {
		if s.Asked {
			c.Complete = false
		}
	}
	for i := range c.Services {
		s := &c.Services[i]
		s.judge()
		if !s.Baseline.Decided() {
			c.Complete = false
		}
		for _, f := range s.Faults {
			if !f.Unfenced.Decided() || (s.Facts.NoToken == "" && !f.Fenced.Decided()) {
				c.Complete = false
			}
		}
	}
}

func (s *ServiceRow) judge() {
	bad, backwards, incomplete := false, false, !s.Baseline.Decided()
	s.ValidityGapNanos, s.NoticeDelayNanos, s.NeverNoticed, s.TakeoverNanos = 0, 0, 0, 0
	var untested []string // what tested nothing (a models.Reason that is Untested), with why
	if b := s.Baseline; b.Outcome == OutcomeInconclusive && b.Reason.Untested() {
		untested = append(untested, fmt.Sprintf("the run without a fault tested nothing (%s)", b.Why))
	}
	rejected, tested := 0, []string{}
	for i := range s.Faults {
		f := &s.Faults[i]
		f.UnfencedWord = unfencedWord(f.Unfenced)
		switch {
		case s.Facts.NoToken != "":
			f.FencedWord = NoTokenWord
		case f.Fenced.Outcome == NotRunWord:
			f.FencedWord = NotRunWord
		default:
			f.FencedWord = fencedWord(ScoreRun{Outcome: f.Fenced.Outcome, StaleAccepted: f.Fenced.StaleAccepted, Verdicts: f.Fenced.Verdicts})
		}
		if !f.Unfenced.Decided() || (s.Facts.NoToken == "" && !f.Fenced.Decided()) {
			incomplete = true
		}
		if s.Facts.NoToken == "" && f.Fenced.Outcome == OutcomeUnsafe {
			bad = true
		}
		for _, r := range []CompareRun{f.Unfenced, f.Fenced} {
			if r.Outcome == OutcomeInconclusive && r.Reason.Untested() {
				untested = append(untested, fmt.Sprintf("under %s the %s run tested nothing (%s)", f.Fault, r.Resource, r.Why))
			}
		}
		if s.Facts.NoToken == "" {
			rejected += f.Fenced.StaleRejected
			tested = append(tested, f.Fault)
		}
		for _, r := range []CompareRun{f.Unfenced, f.Fenced} {
			if s.Facts.NoToken == "" && r.Verdicts[models.Tokens] == models.Violated {
				backwards = true
			}
		}
		u := f.Unfenced
		s.ValidityGapNanos = max(s.ValidityGapNanos, u.ValidityGapNanos)
		s.NoticeDelayNanos = max(s.NoticeDelayNanos, u.NoticeDelayNanos)
		s.NeverNoticed += u.NeverNoticed
		s.TakeoverNanos = max(s.TakeoverNanos, u.TakeoverNanos)
	}
	switch {
	case s.Facts.NoToken != "":
		s.Verdict = VerdictNoToken
	case bad || backwards:
		s.Verdict = VerdictUnsafe
	case incomplete || len(s.Faults) == 0:
		s.Verdict = VerdictIncomplete
	case len(untested) > 0:
		s.Verdict, s.Inconclusive = VerdictInconclusive, strings.Join(untested, "; ")
	case rejected == 0:
		s.Verdict = VerdictInconclusive
		s.Inconclusive = fmt.Sprintf("no stale write was attempted against the fenced resource under any fault (%s)", list(tested))
	default:
		s.Verdict = VerdictSafe
	}
	if s.Verdict != VerdictInconclusive {
		s.Inconclusive = ""
	}
	s.Safe = s.Verdict == VerdictSafe
	s.Paragraph = Paragraph(*s)
}

func unfencedWord(r CompareRun) string {
	switch r.Outcome {
	case OutcomeUnsafe:
		return "stale writes got through"
	case OutcomeSafe:
		return "held"
	}
	return r.Outcome
}

// NoticeWords is the service's worst notice delay in words ("never" when a superseded
// holder never noticed).
func (s ServiceRow) NoticeWords() string {
	if s.NeverNoticed > 0 {
		return "never"
	}
	for _, f := range s.Faults {
		if f.Unfenced.Superseded > 0 {
			return noticeDuration(s.NoticeDelayNanos)
		}
	}
	return "—"
}

// Paragraph derives what a service's figures mean for a caller from its declared facts
// and its judged runs: which token makes it safe, what breaks that token, and what the
// gap, notice delay, takeover and baseline latency mean. No backend is named in its
// rules; only the row's own name and declared words appear.
func Paragraph(s ServiceRow) string {
	var p []string
	var faults, through, fencedBad, backwards, incomplete []string
	rejected := 0
	for _, f := range s.Faults {
		faults = append(faults, f.Fault)
		if f.Unfenced.Outcome == OutcomeUnsafe {
			through = append(through, f.Fault)
		}
		if !f.Unfenced.Decided() || (s.Facts.NoToken == "" && !f.Fenced.Decided()) {
			incomplete = append(incomplete, f.Fault)
		}
		if s.Facts.NoToken != "" {
			continue
		}
		rejected += f.Fenced.StaleRejected
		if f.Fenced.Outcome == OutcomeUnsafe {
			fencedBad = append(fencedBad, f.Fault)
		}
		if f.Fenced.Verdicts[models.Tokens] == models.Violated || f.Unfenced.Verdicts[models.Tokens] == models.Violated {
			backwards = append(backwards, f.Fault)
		}
	}
	ttl := ""
	if s.Baseline.TTLNanos > 0 {
		ttl = " at a TTL of " + Duration(s.Baseline.TTLNanos)
	}
	// Which token makes it safe, or why nothing can.
	switch {
	case s.Facts.NoToken != "":
		why := fmt.Sprintf("%s hands out no fencing token (%s)", s.Name, s.Facts.NoToken)
		if strings.Contains(s.Facts.NoToken, "cannot be made safe by fencing") {
			why = fmt.Sprintf("%s: %s", s.Name, s.Facts.NoToken) // the reason says it itself
		}
		p = append(p, why+": a resource has nothing to refuse a superseded holder's write by, so only the lock's own mutual exclusion stands between two writers.")
	case s.Verdict == VerdictSafe:
		p = append(p, fmt.Sprintf("%s is safe to adopt with a fenced resource: send %s with every write and have the resource refuse a token not newer than the newest it accepted. Under %s the fence refused every stale write (%d in all) and the tokens stayed strictly increasing.", s.Name, s.Facts.Token, list(faults), rejected))
	case s.Verdict == VerdictUnsafe:
		var why []string
		if len(fencedBad) > 0 {
			why = append(why, fmt.Sprintf("under %s a stale write got through the fence or an update was lost", list(fencedBad)))
		}
		if len(backwards) > 0 {
			why = append(why, fmt.Sprintf("under %s its tokens (%s) went backwards or repeated", list(backwards), s.Facts.Token))
		}
		p = append(p, fmt.Sprintf("%s is NOT safe even with a fenced resource: %s.", s.Name, strings.Join(why, "; ")))
	case s.Verdict == VerdictInconclusive:
		p = append(p, fmt.Sprintf("%s is not shown safe: no run showed fencing fail, but %s, so the fence was not put to the test and its verdict is inconclusive.", s.Name, s.Inconclusive))
	default:
		what := "no fault ran"
		if len(incomplete) > 0 {
			what = fmt.Sprintf("under %s a run failed or was not decided", list(incomplete))
		}
		if !s.Baseline.Decided() {
			what = "the run without a fault failed or was not decided"
			if len(incomplete) > 0 {
				what += fmt.Sprintf(", and under %s a run did too", list(incomplete))
			}
		}
		p = append(p, fmt.Sprintf("%s is not shown safe: %s, so its verdict is incomplete (see the runs' folders).", s.Name, what))
	}
	// What breaks the token or the lock, as the descriptor declares it.
	if s.Facts.NoToken == "" {
		var breaks []string
		if s.Facts.TokensResetOnCrash {
			breaks = append(breaks, "its token counter is lost when the server crashes: after a restart tokens start again below the newest a resource accepted, so the new holder's writes are refused while an older holder's larger token passes the fence")
		}
		if s.Facts.TokenFromClock {
			breaks = append(breaks, "its token is a clock reading, so a clock stepped back, or two grants within one tick, give a token that is not newer")
		}
		if s.Facts.Pool != "" {
			breaks = append(breaks, fmt.Sprintf("its clients share server sessions through %s, so a session lock belongs to a pooled connection and one client's grant is held by every client on it", s.Facts.Pool))
		}
		if s.Facts.ClientClockExpiry {
			breaks = append(breaks, "each client's own clock decides when a lock expires, so a client whose clock runs ahead takes a lock that is still held (the token still orders the writes: fencing is what keeps the data safe)")
		}
		if len(breaks) > 0 {
			p = append(p, "What breaks it: "+strings.Join(breaks, "; ")+". The faults compared here do not crash servers or move clocks: fencecheck evaluate runs those.")
		} else {
			durable := "its descriptor declares nothing that resets the token, reads it from a clock or shares it through a pool"
			if s.Facts.DurableLeases {
				durable += ", and a restarted server keeps its leases"
			}
			p = append(p, "What breaks it: nothing known — "+durable+"; the fence still is what makes it safe, since the lock alone lets a paused holder write late.")
		}
	}
	// What the figures mean for a caller.
	if len(through) > 0 {
		sentence := fmt.Sprintf("Without fencing, stale writes got through under %s: a superseded holder went on believing it held the lock for up to %s after another client got it%s", list(through), Duration(s.ValidityGapNanos), ttl)
		switch notice := s.NoticeWords(); notice {
		case "never":
			sentence += fmt.Sprintf(", and %d holder(s) never noticed the loss before writing — a client cannot rely on the lock's loss signal", s.NeverNoticed)
		case "—":
		default:
			refuse := "the resource must refuse it"
			if s.Facts.NoToken != "" {
				refuse = "no resource can tell it from a valid one"
			}
			if s.NoticeDelayNanos == 0 {
				sentence += "; its client signalled the loss before the other client was granted the lock, but a stalled holder acts on no signal: when its late write comes, " + refuse
			} else {
				sentence += fmt.Sprintf(", and learned it had lost the lock up to %s after the other client's grant: a write in that window is late, and %s", notice, refuse)
			}
		}
		p = append(p, sentence+".")
	} else if len(faults) > 0 {
		p = append(p, "Without fencing no stale write got through in these runs; that is timing, not a guarantee.")
	}
	if s.TakeoverNanos > 0 {
		p = append(p, fmt.Sprintf("When a holder stalls, the others wait up to %s from its last successful operation until one of them is granted the lock: the pause a caller sees before work goes on.", Duration(s.TakeoverNanos)))
	}
	if s.Facts.ClientExpiry && s.Facts.NoToken == "" {
		p = append(p, "Its leases know their end by the client's clock, so a careful client can stop before writing late; that narrows the gap, the token closes it.")
	}
	if b := s.Baseline; b.Decided() && b.Grants > 0 {
		p = append(p, fmt.Sprintf("Without faults an acquire took %s at the median and %s at p99, and the service granted %.1f locks/s to the contending clients.", Duration(b.AcquireP50Nanos), Duration(b.AcquireP99Nanos), b.GrantsPerSecond))
	}
	return strings.Join(p, " ")
}

// Service returns a service row by name.
func (c *Comparison) Service(name string) (ServiceRow, bool) {
	i := slices.IndexFunc(c.Services, func(s ServiceRow) bool { return s.Name == name })
	if i < 0 {
		return ServiceRow{}, false
	}
	return c.Services[i], true
}

// Outcome is the comparison's overall word: "unsafe" when a service with a fencing
// token let a stale write through the fence or its tokens went backwards, "incomplete"
// when a run failed or was not decided or a backend asked for could not run, "inconclusive" when a service's runs lack the
// evidence (its verdict is inconclusive), else "complete".
func (c *Comparison) Outcome() string {
	for _, s := range c.Services {
		if s.Verdict == VerdictUnsafe {
			return "unsafe"
		}
	}
	if !c.Complete {
		return "incomplete"
	}
	for _, s := range c.Services {
		if s.Verdict == VerdictInconclusive {
			return "inconclusive"
		}
	}
	return "complete"
}

// SummaryLine says in one line which services are safe with fencing.
func (c *Comparison) SummaryLine() string {
	var safe, other []string
	for _, s := range c.Services {
		if s.Safe {
			safe = append(safe, s.Name)
		} else {
			other = append(other, s.Name+" ("+s.Verdict+")")
		}
	}
	line := fmt.Sprintf("%d services at TTL %s under %s", len(c.Services), Duration(c.TTLNanos), list(c.Faults))
	if len(safe) > 0 {
		line += "; safe with fencing: " + strings.Join(safe, ", ")
	}
	if len(other) > 0 {
		line += "; " + strings.Join(other, ", ")
	}
	return line
}
