package judge

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/models"
)

// ScorecardFormat names scorecard.json's format.
const ScorecardFormat = "fencecheck.scorecard/v1"

// ScoreRun is one run of an evaluation: one fault against one resource.
type ScoreRun struct {
	Resource string `json:"resource"`
	Scenario string `json:"scenario"`
	// Outcome: unsafe, safe, inconclusive, unknown (see Outcome), or OutcomeError.
	Outcome RunOutcome `json:"outcome"`
	// Reason and Why say why an inconclusive run proves nothing (see Why).
	Reason                      models.Reason                      `json:"reason,omitempty"`
	Why                         string                             `json:"why,omitempty"`
	Verdicts                    map[models.Property]models.Verdict `json:"verdicts,omitempty"`
	StaleAccepted               int                                `json:"stale_accepted"`
	StaleRejected               int                                `json:"stale_rejected"`
	WritesAccepted              int                                `json:"writes_accepted"`
	WritesRefused               int                                `json:"writes_refused"`
	AcquireFailed               int                                `json:"acquire_failed"`
	ValidityGapNanos            int64                              `json:"validity_gap_ns"`
	LongestNoAcceptedWriteNanos int64                              `json:"longest_no_accepted_write_ns"`
	// The run's lock timing, as models.Evidence has it (same names and meanings).
	Superseded          int     `json:"superseded"`
	Noticed             int     `json:"noticed"`
	NeverNoticed        int     `json:"never_noticed"`
	NoticeDelayNanos    int64   `json:"notice_delay_ns"`
	NoticeDelayP50Nanos int64   `json:"notice_delay_p50_ns"`
	TakeoverNanos       int64   `json:"takeover_ns"`
	AcquireP50Nanos     int64   `json:"acquire_p50_ns"`
	AcquireP99Nanos     int64   `json:"acquire_p99_ns"`
	GrantsPerSecond     float64 `json:"grants_per_second"`
	// GapSamples are the validity gaps of every lease takeover in the run (GapSamples).
	GapSamples []int64 `json:"gap_samples_ns"`
	// Dir is the run's folder relative to the store's root.
	Dir     string  `json:"dir,omitempty"`
	Seconds float64 `json:"seconds"`
	Error   string  `json:"error,omitempty"`
}

// NewScoreRun summarizes a checked run for the scorecard.
func NewScoreRun(resource, scenario string, rep *models.Report, gaps []int64) ScoreRun {
	ev := rep.Evidence
	reason, why := Why(rep)
	return ScoreRun{
		Resource: resource, Scenario: scenario, Outcome: Outcome(rep), Reason: reason, Why: why, Verdicts: rep.Verdicts,
		StaleAccepted: ev.StaleAccepted, StaleRejected: ev.StaleRejected,
		WritesAccepted: ev.WritesAccepted, WritesRefused: ev.WritesRefused, AcquireFailed: ev.AcquireFailed,
		ValidityGapNanos: ev.ValidityGapNanos, LongestNoAcceptedWriteNanos: ev.LongestNoAcceptedWriteNanos,
		Superseded: ev.Superseded, Noticed: ev.Noticed, NeverNoticed: ev.NeverNoticed,
		NoticeDelayNanos: ev.NoticeDelayNanos, NoticeDelayP50Nanos: ev.NoticeDelayP50Nanos, TakeoverNanos: ev.TakeoverNanos,
		AcquireP50Nanos: ev.AcquireP50Nanos, AcquireP99Nanos: ev.AcquireP99Nanos, GrantsPerSecond: ev.GrantsPerSecond,
		GapSamples: gaps,
	}
}

// ScoreRow is one fault: its runs against every resource, and what they show.
type ScoreRow struct {
	Fault   string     `json:"fault"`
	Meaning string     `json:"meaning"`
	Runs    []ScoreRun `json:"runs"`

	// Judged by Judge:
	// Unfenced: did stale writes get through without fencing (CellStaleThrough,
	// CellHeld, or the run's outcome when it was not decided: inconclusive, unknown,
	// error; CellNotRun).
	Unfenced Cell `json:"unfenced"`
	// Fenced: did fencing hold (CellHeld, CellViolated, CellRefusedValid,
	// CellNotTested, CellNoToken, CellNotRun, or the outcome: unknown, error).
	Fenced Cell `json:"fenced"`
	// Why says why the fenced run is "not tested" (its ScoreRun.Why).
	Why string `json:"why,omitempty"`
	// Native: the backend-native resource's result, like Fenced ("" when none).
	Native Cell `json:"native,omitempty"`
	// Tokens: CellMonotonic or CellBackwards (or CellUnknown; CellNone without a
	// fencing token).
	Tokens Cell `json:"tokens"`
	// Validity-gap percentiles over every takeover in the fault's runs.
	GapP50 int64 `json:"gap_p50_ns"`
	GapP90 int64 `json:"gap_p90_ns"`
	GapMax int64 `json:"gap_max_ns"`
	// Availability cost of fencing: the fenced run's refused writes and longest stretch
	// without an accepted write.
	Refused        int   `json:"fenced_writes_refused"`
	LongestNoWrite int64 `json:"fenced_longest_no_accepted_write_ns"`
	// Safe: fencing held and tokens stayed monotonic under this fault.
	Safe bool `json:"safe"`
}

// Run returns the row's run against a resource.
func (r ScoreRow) Run(resource string) (ScoreRun, bool) {
	i := slices.IndexFunc(r.Runs, func(x ScoreRun) bool { return x.Resource == resource })
	if i < 0 {
		return ScoreRun{}, false
	}
	return r.Runs[i], true
}

// Scorecard is the outcome of `fencecheck evaluate`: may we adopt this lock backend,
// and what must our resource do?
type Scorecard struct {
	Format  string `json:"format"`
	Backend string `json:"backend"`
	// Options are the backend's options (e.g. an external cluster's endpoints).
	Options map[string]string `json:"options,omitempty"`
	// Endpoints is read from older scorecards (etcd_endpoints); new ones use Options.
	Endpoints []string `json:"etcd_endpoints,omitempty"`
	Setup     string   `json:"setup"`
	Token     string   `json:"token_source"`
	TTLNanos  int64    `json:"ttl_ns"`
	Resources []string `json:"resources"`
	Native    []string `json:"native_resources,omitempty"`
	// NativeAdvice are the native resources' conditions of use (their descriptors').
	NativeAdvice []string `json:"native_advice,omitempty"`
	// NoToken, when set, says why the backend hands out no fencing token: it cannot be
	// made safe by fencing, and the fenced runs were not made.
	NoToken string    `json:"no_token,omitempty"`
	Started time.Time `json:"started"`
	Seconds float64   `json:"seconds"`
	// Sharding, when set, says the scorecard is one shard of a plan, or merged shards.
	Sharding *Sharding `json:"sharding,omitempty"`
	// Rows is "rows" in JSON; older scorecards wrote "Rows", which reads the same
	// (encoding/json matches keys case-insensitively).
	Rows []ScoreRow `json:"rows"`

	// Judged by Judge:
	// Safe: fencing held and tokens stayed monotonic under every applicable fault, every
	// run completed, and the fence was tested: some fenced run had stale writes
	// attempted and rejected, and none tested nothing (a models.Reason that is
	// Untested).
	Safe bool `json:"safe"`
	// Complete: every fenced run ran and was decided (no error, no checker timeout).
	Complete bool `json:"complete"`
	// Inconclusive, when set, says why a complete scorecard that shows nothing unsafe is
	// not shown safe either: the fenced runs lack the evidence (none had a stale write
	// attempted, or one tested nothing at all).
	Inconclusive string `json:"inconclusive,omitempty"`
	// Verdict is the plain-language verdict, one paragraph.
	Verdict    string   `json:"verdict"`
	Conditions []string `json:"conditions"`
	GapP50     int64    `json:"gap_p50_ns"`
	GapP90     int64    `json:"gap_p90_ns"`
	GapMax     int64    `json:"gap_max_ns"`
}

// gotThrough reports whether a run let a stale write through or lost an update, as
// opposed to breaking the register model by refusing a write it should have accepted.
func gotThrough(r ScoreRun) bool {
	return r.StaleAccepted > 0 || r.Verdicts[models.Updates] == models.Violated
}

// NoTokenWord is a row's fenced result when the backend has no fencing token.
const NoTokenWord = "no fencing token"

// RefusedValid is the word for a resource that let no stale write through but refused a
// write the register model accepts (e.g. etcd-txn refuses a write once the writer's
// lock key is gone, even when nobody else wrote since).
const RefusedValid = "refused a valid write"

// Cell is what a scorecard row says in one column (ScoreRow's Unfenced, Fenced, Native
// and Tokens): the words are the ones scorecard.json and the pages show, so logic
// compares cells with these constants and only rendering reads the words.
type Cell string

// A row's cells. A column whose run was not decided shows the run's outcome word
// (Cell(OutcomeUnknown), Cell(OutcomeError)).
const (
	CellHeld         Cell = "held"
	CellViolated     Cell = "VIOLATED"
	CellRefusedValid Cell = RefusedValid
	CellNotTested    Cell = "not tested"
	CellStaleThrough Cell = "stale writes got through"
	CellNoToken      Cell = NoTokenWord
	CellNotRun       Cell = NotRunWord
	CellMonotonic    Cell = "monotonic"
	CellBackwards    Cell = "WENT BACKWARDS"
	CellUnknown      Cell = Cell(OutcomeUnknown)
	// CellNone: a backend without a fencing token; its grants carry only the order the
	// harness saw them in.
	CellNone Cell = "none"
)

func fencedWord(r ScoreRun) Cell {
	switch r.Outcome {
	case OutcomeSafe:
		return CellHeld
	case OutcomeUnsafe:
		if !gotThrough(r) {
			return CellRefusedValid
		}
		return CellViolated
	case OutcomeInconclusive:
		return CellNotTested
	}
	return Cell(r.Outcome)
}

// Judge fills the rows' summaries, the overall verdict, its paragraph and conditions.
func (s *Scorecard) Judge() {
	s.Format = ScorecardFormat
	var all []int64
	var unfencedBad, unfencedHeld, fencedBad, fencedInconclusive, fencedUntested, fencedIncomplete, tokensBad, nativeBad, nativeRefused, nativeHeld []string
	untestedWhy := "" // the first fenced run that tested nothing: why
	staleRejected, refused := 0, 0
	var worstNoWrite int64
	worstNoWriteFault := ""
	for i := range s.Rows {
		r := &s.Rows[i]
		var gaps []int64
		r.Tokens = CellMonotonic
		for _, run := range r.Runs {
			gaps = append(gaps, run.GapSamples...)
			switch run.Verdicts[models.Tokens] {
			case models.Violated:
				r.Tokens = CellBackwards
			case models.Unknown:
				if r.Tokens == CellMonotonic {
					r.Tokens = CellUnknown
				}
			}
		}
		if s.NoToken != "" {
			r.Tokens = CellNone
		}
		slices.Sort(gaps)
		all = append(all, gaps...)
		r.GapP50, r.GapP90, r.GapMax = Percentile(gaps, 50), Percentile(gaps, 90), Percentile(gaps, 100)
		r.Unfenced = CellNotRun
		if u, ok := r.Run("unfenced"); ok {
			switch u.Outcome {
			case OutcomeUnsafe:
				r.Unfenced = CellStaleThrough
				unfencedBad = append(unfencedBad, r.Fault)
			case OutcomeSafe:
				r.Unfenced = CellHeld
				unfencedHeld = append(unfencedHeld, r.Fault)
			default:
				r.Unfenced = Cell(u.Outcome)
			}
		}
		r.Fenced = CellNotRun
		if s.NoToken != "" {
			r.Fenced = CellNoToken
		} else if f, ok := r.Run("fenced"); ok {
			r.Fenced = fencedWord(f)
			r.Refused, r.LongestNoWrite = f.WritesRefused, f.LongestNoAcceptedWriteNanos
			staleRejected += f.StaleRejected
			refused += f.WritesRefused
			if f.LongestNoAcceptedWriteNanos > worstNoWrite {
				worstNoWrite, worstNoWriteFault = f.LongestNoAcceptedWriteNanos, r.Fault
			}
			switch f.Outcome {
			case OutcomeUnsafe:
				fencedBad = append(fencedBad, r.Fault)
			case OutcomeInconclusive:
				fencedInconclusive = append(fencedInconclusive, r.Fault)
				r.Why = f.Why
				if f.Reason.Untested() {
					fencedUntested = append(fencedUntested, r.Fault)
					if untestedWhy == "" {
						untestedWhy = f.Why
					}
				}
			case OutcomeSafe:
			default:
				fencedIncomplete = append(fencedIncomplete, r.Fault)
			}
		} else {
			fencedIncomplete = append(fencedIncomplete, r.Fault)
		}
		for _, n := range s.Native {
			if nr, ok := r.Run(n); ok {
				r.Native = fencedWord(nr)
				switch {
				case nr.Outcome == OutcomeUnsafe && !gotThrough(nr):
					nativeRefused = append(nativeRefused, r.Fault)
				case nr.Outcome == OutcomeUnsafe:
					nativeBad = append(nativeBad, r.Fault)
				case nr.Outcome == OutcomeSafe || nr.Outcome == OutcomeInconclusive:
					nativeHeld = append(nativeHeld, r.Fault)
				}
			}
		}
		if r.Tokens == CellBackwards {
			tokensBad = append(tokensBad, r.Fault)
		}
		r.Safe = r.Fenced == CellHeld || r.Fenced == CellNotTested && !slices.Contains(fencedUntested, r.Fault)
		r.Safe = r.Safe && r.Tokens == CellMonotonic
	}
	slices.Sort(all)
	s.GapP50, s.GapP90, s.GapMax = Percentile(all, 50), Percentile(all, 90), Percentile(all, 100)
	if s.NoToken != "" {
		fencedIncomplete = nil // nothing to complete: fencing cannot apply
	}
	s.Complete = len(fencedIncomplete) == 0
	s.Safe = s.NoToken == "" && len(s.Rows) > 0 && len(fencedBad) == 0 && len(tokensBad) == 0 && s.Complete
	// Safe only on evidence: the fence must have rejected stale writes, and no fenced
	// run may have tested nothing.
	s.Inconclusive = ""
	switch {
	case !s.Safe:
	case len(fencedUntested) > 0:
		s.Inconclusive = fmt.Sprintf("under %s the fenced run tested nothing (%s)", list(fencedUntested), untestedWhy)
	case staleRejected == 0:
		s.Inconclusive = fmt.Sprintf("no stale write was attempted against the fenced resource under any fault (%s)", list(fencedInconclusive))
	}
	s.Safe = s.Safe && s.Inconclusive == ""

	faults := make([]string, len(s.Rows))
	for i, r := range s.Rows {
		faults[i] = r.Fault
	}
	ttl := ""
	if s.TTLNanos > 0 {
		ttl = fmt.Sprintf(" (TTL %s)", Duration(s.TTLNanos))
	}
	var p []string
	if s.NoToken != "" {
		if strings.Contains(s.NoToken, "cannot be made safe by fencing") {
			// The built-in reasons say it themselves: say it once.
			p = append(p, fmt.Sprintf("%s: %s. No fenced resource was run against it.", s.Backend, s.NoToken))
		} else {
			p = append(p, fmt.Sprintf("%s hands out no fencing token (%s): it cannot be made safe by fencing, so no fenced resource was run against it.", s.Backend, s.NoToken))
		}
	} else if s.Safe {
		if len(fencedInconclusive) == 0 {
			p = append(p, fmt.Sprintf("%s is safe to adopt with a fenced resource that uses %s as its fencing token: under every applicable fault (%s) the fence rejected every stale write (%d in all) and tokens stayed strictly increasing.",
				s.Backend, s.Token, list(faults), staleRejected))
		} else {
			tested := slices.DeleteFunc(slices.Clone(faults), func(f string) bool { return slices.Contains(fencedInconclusive, f) })
			p = append(p, fmt.Sprintf("%s is safe to adopt with a fenced resource that uses %s as its fencing token: under %s the fence rejected every stale write (%d in all) and tokens stayed strictly increasing.",
				s.Backend, s.Token, list(tested), staleRejected))
			p = append(p, fmt.Sprintf("Under %s no stale write was attempted against the fenced resource, so those runs did not test the fence.", list(fencedInconclusive)))
		}
	} else if s.Inconclusive != "" {
		p = append(p, fmt.Sprintf("%s is NOT shown safe: nothing showed fencing fail, but %s, so the fence was not put to the test and the verdict is inconclusive.", s.Backend, s.Inconclusive))
	} else {
		var why []string
		if len(fencedBad) > 0 {
			why = append(why, fmt.Sprintf("under %s a stale write got through the fence or an update was lost", list(fencedBad)))
		}
		if len(tokensBad) > 0 {
			why = append(why, fmt.Sprintf("under %s its tokens went backwards or were reused, so %s is not a fencing token to rely on", list(tokensBad), s.Token))
		}
		if len(fencedIncomplete) > 0 {
			why = append(why, fmt.Sprintf("under %s the evaluation did not finish (a run failed or the checker timed out), so safety there is not shown", list(fencedIncomplete)))
		}
		if len(fencedUntested) > 0 {
			why = append(why, fmt.Sprintf("under %s the fenced run tested nothing (%s)", list(fencedUntested), untestedWhy))
		}
		if len(s.Rows) == 0 {
			why = append(why, "no fault applies to it")
		}
		p = append(p, fmt.Sprintf("%s is NOT shown safe, even with a fenced resource: %s.", s.Backend, strings.Join(why, "; ")))
	}
	if len(unfencedBad) > 0 {
		p = append(p, fmt.Sprintf("It is unsafe as a bare lock: without fencing, stale writes got through under %s; a client went on believing it held the lock for up to %s after another client got it%s.",
			list(unfencedBad), Duration(s.GapMax), ttl))
	} else if len(unfencedHeld) > 0 {
		p = append(p, "Without fencing no stale write got through in these runs; that is luck of timing, not a guarantee: the lock alone is no mutual exclusion under pauses.")
	}
	if len(s.Native) > 0 {
		native := strings.Join(s.Native, ", ")
		switch {
		case len(nativeBad) > 0:
			p = append(p, fmt.Sprintf("The backend-native %s resource let a stale write through or lost an update under %s.", native, list(nativeBad)))
		case len(nativeRefused) > 0:
			p = append(p, fmt.Sprintf("The backend-native %s resource let no stale write through, but under %s it refused a write that the register model accepts (it guards on the writer's lock key still existing, not on token order), so its register verdict is violated there.", native, list(nativeRefused)))
		case len(nativeHeld) > 0:
			p = append(p, fmt.Sprintf("The backend-native %s resource held under every fault as well.", strings.Join(s.Native, ", ")))
		}
	}
	if worstNoWriteFault != "" {
		p = append(p, fmt.Sprintf("Fencing's availability cost: %d write(s) refused in all; the longest stretch without an accepted write was %s (under %s).", refused, Duration(worstNoWrite), worstNoWriteFault))
	}
	s.Verdict = strings.Join(p, " ")

	s.Conditions = []string{
		fmt.Sprintf("Send %s with every write, and have the resource refuse a write whose token is not newer than the newest it accepted.", s.Token),
		"Check the token and write in one atomic step (a conditional write, or one transaction): a check-then-write (TOCTOU) resource lets the stale write through.",
		fmt.Sprintf("Do not rely on the lease alone: clients went on believing they held the lock for up to %s after it passed to another client%s.", Duration(s.GapMax), ttl),
	}
	s.Conditions = append(s.Conditions, s.NativeAdvice...)
	if len(tokensBad) > 0 {
		s.Conditions = append(s.Conditions, fmt.Sprintf("Fix the token source first: under %s tokens went backwards.", list(tokensBad)))
	}
}

func list(xs []string) string {
	switch len(xs) {
	case 0:
		return "none"
	case 1:
		return xs[0]
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}
