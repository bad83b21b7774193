package judge

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/models"
)

// ComparisonFormat names compare.json's format.
const ComparisonFormat = "fencecheck.compare/v2"

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
	Faults []string `json:"faults"`
	// Runs is how many times each cell ran (each fault without and with fencing, and
	// the run without a fault); Seeds are the workload seeds of those runs, the k-th
	// run of every cell at Seeds[k] (derived from --seed: Seeds[0] is it).
	Runs  int     `json:"runs"`
	Seeds []int64 `json:"seeds"`
	// Parallel is how many fault runs went at a time; the runs without a fault ran
	// alone, so that their latency measures the lock and not the other runs.
	Parallel int `json:"parallel"`
	// BaselineAlone: the runs without a fault ran alone (a comparison saved before they
	// did says false, and its pages do not claim it).
	BaselineAlone bool           `json:"baseline_alone"`
	Machine       Machine        `json:"machine"`
	Services      []ServiceRow   `json:"services"`
	Skipped       []SkippedEntry `json:"skipped"`

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
	// Configuration is what a team must set on the service or its client for the
	// result to hold, as the descriptor declares it (registry.Backend.Configuration).
	Configuration string `json:"configuration,omitempty"`
}

// CompareRun is one run of a comparison: its figures, from the checked history.
type CompareRun struct {
	Resource string `json:"resource"`
	Scenario string `json:"scenario"`
	// Run is the run's place among its cell's runs (0-based) and Seed its workload seed.
	Run  int   `json:"run"`
	Seed int64 `json:"seed"`
	// Outcome: unsafe, safe, inconclusive, unknown (see Outcome), OutcomeError, or
	// OutcomeNotRun (a fenced run of a backend without a token).
	Outcome RunOutcome `json:"outcome"`
	// Reason and Why say why an inconclusive run proves nothing (see Why).
	Reason   models.Reason                      `json:"reason,omitempty"`
	Why      string                             `json:"why,omitempty"`
	Verdicts map[models.Property]models.Verdict `json:"verdicts,omitempty"`
	TTLNanos int64                              `json:"ttl_ns"`

	StaleAttempted              int   `json:"stale_attempted"`
	StaleRejected               int   `json:"stale_rejected"`
	StaleAccepted               int   `json:"stale_accepted"`
	Grants                      int   `json:"grants"`
	ValidityGapNanos            int64 `json:"validity_gap_ns"`
	LongestNoAcceptedWriteNanos int64 `json:"longest_no_accepted_write_ns"`
	Superseded                  int   `json:"superseded"`
	Noticed                     int   `json:"noticed"`
	NeverNoticed                int   `json:"never_noticed"`
	NoticeDelayNanos            int64 `json:"notice_delay_ns"`
	NoticeDelayP50Nanos         int64 `json:"notice_delay_p50_ns"`
	TakeoverNanos               int64 `json:"takeover_ns"`
	// OvershootNanos is the longest overshoot (docs/checker.md, "Lock timing") over the
	// superseded holders that recorded their validity estimate; Estimated counts them.
	OvershootNanos int64 `json:"overshoot_ns"`
	Estimated      int   `json:"estimated"`
	// FaultNanos is the longest fault's length in the run (its start to its heal).
	FaultNanos      int64   `json:"fault_ns"`
	AcquireP50Nanos int64   `json:"acquire_p50_ns"`
	AcquireP99Nanos int64   `json:"acquire_p99_ns"`
	GrantsPerSecond float64 `json:"grants_per_second"`

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
		OvershootNanos: ev.OvershootNanos, Estimated: ev.Estimated,
		AcquireP50Nanos: ev.AcquireP50Nanos, AcquireP99Nanos: ev.AcquireP99Nanos, GrantsPerSecond: ev.GrantsPerSecond,
	}
}

// ErrorRun is a run that gave no report.
func ErrorRun(resource, scenario, msg string) CompareRun {
	return CompareRun{Resource: resource, Scenario: scenario, Outcome: OutcomeError, Error: msg}
}

// NotRunWord is the word for a run that was not made (a fenced run without a token:
// OutcomeNotRun, CellNotRun).
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

// Spread is one figure over a cell's runs: the median (nearest rank: of an even count,
// the lower of the two middle values), the least and the greatest, and how many runs
// gave it (N; with N = 0 no run did, and the others are 0).
type Spread[T int64 | float64] struct {
	Median T   `json:"median"`
	Min    T   `json:"min"`
	Max    T   `json:"max"`
	N      int `json:"n"`
}

// SpreadOf is the spread of samples (in any order).
func SpreadOf[T int64 | float64](samples []T) Spread[T] {
	if len(samples) == 0 {
		return Spread[T]{}
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	return Spread[T]{Median: s[(len(s)+1)/2-1], Min: s[0], Max: s[len(s)-1], N: len(s)}
}

// Words says the spread with f for one value: "1.20 s (900 ms–1.50 s, n=10)", "1.20 s
// (n=3)" when every run gave the same (in words), "—" when none gave it.
func (s Spread[T]) Words(f func(T) string) string {
	switch {
	case s.N == 0:
		return "—"
	case s.Min == s.Max, f(s.Min) == f(s.Max):
		return fmt.Sprintf("%s (n=%d)", f(s.Median), s.N)
	}
	return fmt.Sprintf("%s (%s–%s, n=%d)", f(s.Median), f(s.Min), f(s.Max), s.N)
}

// DurationWords is a spread of nanoseconds in words.
func DurationWords(s Spread[int64]) string { return s.Words(Duration) }

// RateWords is a spread of grants per second in words.
func RateWords(s Spread[float64]) string {
	return s.Words(func(v float64) string { return fmt.Sprintf("%.1f/s", v) })
}

// Stale counts stale writes over runs.
type Stale struct {
	Attempted int `json:"attempted"`
	Rejected  int `json:"rejected"`
	Accepted  int `json:"accepted"`
}

func (s *Stale) add(r CompareRun) {
	s.Attempted += r.StaleAttempted
	s.Rejected += r.StaleRejected
	s.Accepted += r.StaleAccepted
}

// Figures are a fault's figures over its decided runs. The timing figures take the
// unfenced and the fenced runs alike as samples: the fence decides which write lands, not
// when a holder is superseded or notices.
type Figures struct {
	// Runs is how many decided runs the timing figures are over; Superseded how many of
	// them had a holder superseded; NeverNoticed how many had a superseded holder that
	// never noticed (those give no notice delay).
	Runs         int `json:"runs"`
	Superseded   int `json:"superseded_runs"`
	NeverNoticed int `json:"never_noticed_runs"`
	// ValidityGap, over every decided run, beside FaultLength: the gap is bounded by how
	// long the fault lasted, and the harness heals a fault only after 2 × TTL, so a long
	// gap next to an equally long fault measures the harness's heal, not the lock.
	ValidityGap Spread[int64] `json:"validity_gap_ns"`
	FaultLength Spread[int64] `json:"fault_length_ns"`
	// Overshoot, over the runs whose superseded holders recorded a validity estimate.
	Overshoot Spread[int64] `json:"overshoot_ns"`
	// NoticeDelay, over the runs with a supersession in which every superseded holder
	// noticed; Takeover, over the runs with a supersession.
	NoticeDelay            Spread[int64] `json:"notice_delay_ns"`
	Takeover               Spread[int64] `json:"takeover_ns"`
	LongestNoAcceptedWrite Spread[int64] `json:"longest_no_accepted_write_ns"`
	// UnfencedRuns are the decided unfenced runs, Through those in which a stale write
	// got through.
	UnfencedRuns int `json:"unfenced_runs"`
	Through      int `json:"stale_through_runs"`
	// The stale writes summed over the runs without and with fencing.
	StaleUnfenced Stale `json:"stale_unfenced"`
	StaleFenced   Stale `json:"stale_fenced"`
}

// figuresOf measures a fault's figures over its runs.
func figuresOf(unfenced, fenced []CompareRun) Figures {
	var f Figures
	var gap, length, over, notice, takeover, noWrite []int64
	for k, runs := range [][]CompareRun{unfenced, fenced} {
		for _, r := range runs {
			if !r.Decided() {
				continue
			}
			f.Runs++
			if k == 0 {
				f.UnfencedRuns++
				f.StaleUnfenced.add(r)
				if r.Outcome == OutcomeUnsafe {
					f.Through++
				}
			} else {
				f.StaleFenced.add(r)
			}
			gap = append(gap, r.ValidityGapNanos)
			noWrite = append(noWrite, r.LongestNoAcceptedWriteNanos)
			if r.FaultNanos > 0 {
				length = append(length, r.FaultNanos)
			}
			if r.Superseded == 0 {
				continue
			}
			f.Superseded++
			takeover = append(takeover, r.TakeoverNanos)
			if r.Estimated > 0 {
				over = append(over, r.OvershootNanos)
			}
			if r.NeverNoticed > 0 {
				f.NeverNoticed++
			} else {
				notice = append(notice, r.NoticeDelayNanos)
			}
		}
	}
	f.ValidityGap, f.FaultLength, f.Overshoot = SpreadOf(gap), SpreadOf(length), SpreadOf(over)
	f.NoticeDelay, f.Takeover, f.LongestNoAcceptedWrite = SpreadOf(notice), SpreadOf(takeover), SpreadOf(noWrite)
	return f
}

// NoticeWords says how long superseded holders took to notice over the runs: "never"
// when no run's holder noticed, "never in k of n runs; else …" when some did not,
// "0 (before the takeover)" when every one noticed before the next grant, the spread
// otherwise, "—" when no holder was superseded.
func (f Figures) NoticeWords() string {
	switch {
	case f.Superseded == 0:
		return "—"
	case f.NeverNoticed == f.Superseded:
		return "never"
	case f.NeverNoticed > 0:
		return fmt.Sprintf("never in %d of %d runs; else %s", f.NeverNoticed, f.Superseded, noticeSpread(f.NoticeDelay))
	}
	return noticeSpread(f.NoticeDelay)
}

func noticeSpread(s Spread[int64]) string {
	if s.N > 0 && s.Max == 0 {
		return fmt.Sprintf("0 (before the takeover, n=%d)", s.N)
	}
	return DurationWords(s)
}

// GapWords is the validity gap beside the fault's length: "4.01 s (n=10) of a 4.02 s
// (n=10) fault".
func (f Figures) GapWords() string {
	if f.FaultLength.N == 0 {
		return DurationWords(f.ValidityGap)
	}
	return fmt.Sprintf("%s of a %s fault", DurationWords(f.ValidityGap), DurationWords(f.FaultLength))
}

// Latency is the runs without a fault: acquire latency and throughput over the runs that
// made grants.
type Latency struct {
	AcquireP50      Spread[int64]   `json:"acquire_p50_ns"`
	AcquireP99      Spread[int64]   `json:"acquire_p99_ns"`
	GrantsPerSecond Spread[float64] `json:"grants_per_second"`
}

func latencyOf(runs []CompareRun) Latency {
	var p50, p99 []int64
	var rate []float64
	for _, r := range runs {
		if r.Decided() && r.Grants > 0 {
			p50, p99, rate = append(p50, r.AcquireP50Nanos), append(p99, r.AcquireP99Nanos), append(rate, r.GrantsPerSecond)
		}
	}
	return Latency{AcquireP50: SpreadOf(p50), AcquireP99: SpreadOf(p99), GrantsPerSecond: SpreadOf(rate)}
}

// Worst is a figure's worst fault: the one whose median is the greatest, named (Fault ""
// when no fault gave the figure).
type Worst struct {
	Fault string `json:"fault"`
	Spread[int64]
}

// Words says the worst in words with its fault: "2.13 s (…, n=10) under pause".
func (w Worst) Words() string {
	if w.Fault == "" {
		return "—"
	}
	return DurationWords(w.Spread) + " under " + w.Fault
}

func worstOf(faults []CompareFault, figure func(Figures) Spread[int64]) Worst {
	var w Worst
	for _, f := range faults {
		s := figure(f.Figures)
		if s.N > 0 && (w.Fault == "" || s.Median > w.Median) {
			w = Worst{Fault: f.Fault, Spread: s}
		}
	}
	return w
}

// CompareFault is one fault of a service: its runs without and with fencing (Runs of
// each; a backend without a token has its fenced runs "not run").
type CompareFault struct {
	Fault    string       `json:"fault"`
	Meaning  string       `json:"meaning"`
	Unfenced []CompareRun `json:"unfenced"`
	Fenced   []CompareRun `json:"fenced"`
	// Judged by Judge: the unfenced runs' word ("stale writes got through", "held",
	// "held in 3 of 5 runs, stale writes got through in 2 of 5 runs", ...) and the
	// fenced ones' ("held", "VIOLATED", "no fencing token", ...), and the figures.
	UnfencedWord string  `json:"unfenced_verdict"`
	FencedWord   string  `json:"fenced_verdict"`
	Figures      Figures `json:"figures"`
}

// ServiceRow is one compared service: its recommended variant (or the backend asked
// for), its facts, the runs without a fault and one entry per fault.
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
	// ServerVersion is the service's version as its server said over its own protocol
	// in the runs (the history's run.server_version), ClientLibrary the lock client's
	// library and version (run.client_library), GrantedTTLNanos the longest TTL the
	// service granted a lease in any run (run.granted_ttl_ms), and SessionTimeouts the
	// server settings that end a lock's session as the server reported them: each from
	// the runs' histories, absent when none said.
	ServerVersion   string            `json:"server_version,omitempty"`
	ClientLibrary   string            `json:"client_library,omitempty"`
	GrantedTTLNanos int64             `json:"granted_ttl_ns,omitempty"`
	SessionTimeouts map[string]string `json:"session_timeouts,omitempty"`
	Facts           Facts             `json:"facts"`
	Baseline        []CompareRun      `json:"baseline"`
	Faults          []CompareFault    `json:"faults"`

	// Judged by Judge: the service's verdict (in JSON its words, ServiceVerdict.String).
	Verdict ServiceVerdict `json:"verdict"`
	// Safe: every fenced run held (or had no stale write attempted) and tokens stayed
	// monotonic, every run was decided, and the fence was tested: some fenced run had
	// stale writes attempted and rejected, and no run tested nothing.
	Safe bool `json:"safe"`
	// Inconclusive, when the verdict is, says why: no run showed fencing fail, but the
	// runs lack the evidence.
	Inconclusive string `json:"inconclusive,omitempty"`
	// The worst figures over the faults, each with the fault it came from (by median).
	ValidityGap Worst `json:"validity_gap"`
	Overshoot   Worst `json:"overshoot"`
	NoticeDelay Worst `json:"notice_delay"`
	Takeover    Worst `json:"takeover"`
	// NeverNoticed: the runs, over every fault, in which a superseded holder never
	// noticed; NeverFaults the faults they ran under.
	NeverNoticed int      `json:"never_noticed_runs"`
	NeverFaults  []string `json:"never_noticed_faults,omitempty"`
	// Latency is the runs without a fault.
	Latency Latency `json:"latency"`
	// Paragraph is what the figures mean for a caller, derived from Facts and the runs.
	Paragraph string `json:"paragraph"`
}

// ServiceVerdict is a compared service's verdict. Logic compares the kinds; only its
// words (String) reach compare.json and the pages.
type ServiceVerdict int

// A service's verdicts.
const (
	// VerdictNone: not judged (yet): a row before Judge, "" in JSON.
	VerdictNone ServiceVerdict = iota
	VerdictSafe
	VerdictUnsafe
	VerdictNoToken
	VerdictIncomplete
	// VerdictInconclusive: every run was decided and none showed fencing fail, but no
	// stale write was attempted against the fence, or a run tested nothing.
	VerdictInconclusive
)

// verdictWords are the verdicts' words, as compare.json has always written them.
var verdictWords = [...]string{
	VerdictNone:         "",
	VerdictSafe:         "safe with fencing",
	VerdictUnsafe:       "UNSAFE with fencing",
	VerdictNoToken:      NoTokenWord,
	VerdictIncomplete:   "incomplete",
	VerdictInconclusive: "inconclusive",
}

// String is the verdict in words: "safe with fencing", "UNSAFE with fencing", "no
// fencing token", "incomplete", "inconclusive" ("" when not judged).
func (v ServiceVerdict) String() string {
	if v < 0 || int(v) >= len(verdictWords) {
		return fmt.Sprintf("ServiceVerdict(%d)", int(v))
	}
	return verdictWords[v]
}

// MarshalText writes the verdict's words.
func (v ServiceVerdict) MarshalText() ([]byte, error) {
	if v < 0 || int(v) >= len(verdictWords) {
		return nil, fmt.Errorf("judge: no words for service verdict %d", int(v))
	}
	return []byte(verdictWords[v]), nil
}

// UnmarshalText reads the verdict's words.
func (v *ServiceVerdict) UnmarshalText(b []byte) error {
	i := slices.Index(verdictWords[:], string(b))
	if i < 0 {
		return fmt.Errorf("judge: unknown service verdict %q", b)
	}
	*v = ServiceVerdict(i)
	return nil
}

// Judge fills every service's words, verdict, figures and paragraph.
func (c *Comparison) Judge() {
	c.Format = ComparisonFormat
	c.Complete = true
	if c.Skipped == nil {
		c.Skipped = []SkippedEntry{} // an empty list in JSON, not null
	}
	if c.Services == nil {
		c.Services = []ServiceRow{}
	}
	if c.Seeds == nil {
		c.Seeds = []int64{}
	}
	for _, s := range c.Skipped {
		if s.Asked {
			c.Complete = false
		}
	}
	for i := range c.Services {
		s := &c.Services[i]
		s.judge(c.Runs, c.BaselineAlone)
		if !allDecided(s.Baseline) {
			c.Complete = false
		}
		for _, f := range s.Faults {
			if !allDecided(f.Unfenced) || (s.Facts.NoToken == "" && !allDecided(f.Fenced)) {
				c.Complete = false
			}
		}
	}
}

// allDecided: there are runs, and every one ran and was decided.
func allDecided(runs []CompareRun) bool {
	return len(runs) > 0 && !slices.ContainsFunc(runs, func(r CompareRun) bool { return !r.Decided() })
}

// runsWord joins the words of a cell's runs: the word when every run says the same,
// else each word with how many runs said it ("held in 3 of 5 runs, stale writes got
// through in 2 of 5 runs").
func runsWord(words []Cell) string {
	if len(words) == 0 {
		return NotRunWord
	}
	var order []Cell
	count := map[Cell]int{}
	for _, w := range words {
		if count[w] == 0 {
			order = append(order, w)
		}
		count[w]++
	}
	if len(order) == 1 {
		return string(order[0])
	}
	parts := make([]string, len(order))
	for i, w := range order {
		parts[i] = fmt.Sprintf("%s in %d of %d runs", w, count[w], len(words))
	}
	return strings.Join(parts, ", ")
}

func (s *ServiceRow) judge(runs int, alone bool) {
	bad, backwards, incomplete := false, false, !allDecided(s.Baseline)
	var untested []string // what tested nothing (a models.Reason that is Untested), with why
	for _, b := range s.Baseline {
		if b.Outcome == OutcomeInconclusive && b.Reason.Untested() {
			untested = append(untested, fmt.Sprintf("a run without a fault tested nothing (%s)", b.Why))
			break
		}
	}
	rejected, tested := 0, []string{}
	for i := range s.Faults {
		f := &s.Faults[i]
		var uw, fw []Cell
		for _, r := range f.Unfenced {
			uw = append(uw, unfencedWord(r))
		}
		f.UnfencedWord = runsWord(uw)
		for _, r := range f.Fenced {
			switch {
			case s.Facts.NoToken != "":
				fw = append(fw, CellNoToken)
			case r.Outcome == OutcomeNotRun:
				fw = append(fw, CellNotRun)
			default:
				fw = append(fw, fencedWord(ScoreRun{Outcome: r.Outcome, StaleAccepted: r.StaleAccepted, Verdicts: r.Verdicts}))
			}
		}
		f.FencedWord = runsWord(fw)
		if s.Facts.NoToken != "" {
			f.FencedWord = NoTokenWord
		}
		if !allDecided(f.Unfenced) || (s.Facts.NoToken == "" && !allDecided(f.Fenced)) {
			incomplete = true
		}
		for _, r := range f.Fenced {
			if s.Facts.NoToken == "" && r.Outcome == OutcomeUnsafe {
				bad = true
			}
			if s.Facts.NoToken == "" {
				rejected += r.StaleRejected
			}
		}
		if s.Facts.NoToken == "" {
			tested = append(tested, f.Fault)
		}
		for _, r := range slices.Concat(f.Unfenced, f.Fenced) {
			if r.Outcome == OutcomeInconclusive && r.Reason.Untested() {
				untested = append(untested, fmt.Sprintf("under %s %s %s run tested nothing (%s)", f.Fault, article(r.Resource), r.Resource, r.Why))
			}
			if s.Facts.NoToken == "" && r.Verdicts[models.Tokens] == models.Violated {
				backwards = true
			}
		}
		fenced := f.Fenced
		if s.Facts.NoToken != "" {
			fenced = nil
		}
		f.Figures = figuresOf(f.Unfenced, fenced)
	}
	s.ValidityGap = worstOf(s.Faults, func(f Figures) Spread[int64] { return f.ValidityGap })
	s.Overshoot = worstOf(s.Faults, func(f Figures) Spread[int64] { return f.Overshoot })
	s.NoticeDelay = worstOf(s.Faults, func(f Figures) Spread[int64] { return f.NoticeDelay })
	s.Takeover = worstOf(s.Faults, func(f Figures) Spread[int64] { return f.Takeover })
	s.NeverNoticed, s.NeverFaults = 0, nil
	for _, f := range s.Faults {
		if f.Figures.NeverNoticed > 0 {
			s.NeverNoticed += f.Figures.NeverNoticed
			s.NeverFaults = append(s.NeverFaults, f.Fault)
		}
	}
	s.Latency = latencyOf(s.Baseline)
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
	// A raw run error (an exec client's reason for having no token) may name its
	// process and temporary folder: neither belongs in what a team reads.
	s.Facts.NoToken = Scrub(s.Facts.NoToken)
	s.Paragraph = Scrub(Paragraph(*s, runs, alone))
}

func unfencedWord(r CompareRun) Cell {
	switch r.Outcome {
	case OutcomeUnsafe:
		return CellStaleThrough
	case OutcomeSafe:
		return CellHeld
	}
	return Cell(r.Outcome)
}

// NoticeWords is the service's worst notice delay in words with its fault ("never
// under pause" when a superseded holder never noticed in some run).
func (s ServiceRow) NoticeWords() string {
	if s.NeverNoticed > 0 {
		return fmt.Sprintf("never in %d run(s) under %s", s.NeverNoticed, list(s.NeverFaults))
	}
	if s.NoticeDelay.Fault == "" {
		return "—"
	}
	return noticeSpread(s.NoticeDelay.Spread) + " under " + s.NoticeDelay.Fault
}

// ServerWords is the service's version: the server's own word from the runs, else the
// descriptor's, else "".
func (s ServiceRow) ServerWords() string {
	if s.ServerVersion != "" {
		return s.ServerVersion
	}
	return s.Version
}

// GrantedTTLWords is the longest granted TTL in words, "—" when no run recorded one.
func (s ServiceRow) GrantedTTLWords() string {
	if s.GrantedTTLNanos <= 0 {
		return "—"
	}
	return Duration(s.GrantedTTLNanos)
}

// SessionTimeoutWords lists the session timeouts, "name=value, ..." by name.
func (s ServiceRow) SessionTimeoutWords() string {
	names := slices.Sorted(maps.Keys(s.SessionTimeouts))
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + "=" + s.SessionTimeouts[n]
	}
	return strings.Join(parts, ", ")
}

// configurationSentence names what a team must set for the result to hold (the
// descriptor's declared fact) and the session settings the server ran with, or "".
func configurationSentence(s ServiceRow) string {
	var p []string
	if c := strings.TrimSpace(s.Facts.Configuration); c != "" {
		p = append(p, "For this result to hold in production, set what the runs relied on: "+strings.TrimSuffix(c, ".")+".")
	}
	if len(s.SessionTimeouts) > 0 {
		p = append(p, fmt.Sprintf("The server ran with %s, as it reported them; a different value changes when a silent holder's session, and its lock, ends.", s.SessionTimeoutWords()))
	}
	var asked int64
	for _, r := range allRunsOf(s) {
		asked = max(asked, r.TTLNanos)
	}
	if s.GrantedTTLNanos > 0 && asked > 0 && s.GrantedTTLNanos != asked {
		p = append(p, fmt.Sprintf("The service granted leases of up to %s for the %s asked: a holder is superseded on its figure, not the one asked for.", Duration(s.GrantedTTLNanos), Duration(asked)))
	}
	return strings.Join(p, " ")
}

// allRunsOf is every run of a row, the runs without a fault first.
func allRunsOf(s ServiceRow) []CompareRun {
	out := slices.Clone(s.Baseline)
	for _, f := range s.Faults {
		out = append(append(out, f.Unfenced...), f.Fenced...)
	}
	return out
}

// NotTested is what every paragraph says compare leaves out, with the command that runs it.
func NotTested(backend string) string {
	return fmt.Sprintf("Not tested here: compare crashes no server and moves no clock; `fencecheck evaluate --backend %s` runs the crash and clock faults that apply to it.", backend)
}

// Paragraph derives what a service's figures mean for a caller from its declared facts
// and its judged runs (runs per cell; alone: the runs without a fault ran alone): which token makes it safe, what breaks that token
// as declared, and per fault what the gap, notice delay, takeover, overshoot and the
// baseline latency were. A claim is made only where every run of the row supports it;
// where the runs differ the paragraph says in how many it held. No backend is named in
// its rules; only the row's own name and declared words appear.
func Paragraph(s ServiceRow, runs int, alone bool) string {
	var p []string
	var faults, fencedBad, backwards, incomplete []string
	rejected := 0
	for _, f := range s.Faults {
		faults = append(faults, f.Fault)
		if !allDecided(f.Unfenced) || (s.Facts.NoToken == "" && !allDecided(f.Fenced)) {
			incomplete = append(incomplete, f.Fault)
		}
		if s.Facts.NoToken != "" {
			continue
		}
		bad, back := false, false
		for _, r := range f.Fenced {
			rejected += r.StaleRejected
			bad = bad || r.Outcome == OutcomeUnsafe
			back = back || r.Verdicts[models.Tokens] == models.Violated
		}
		for _, r := range f.Unfenced {
			back = back || r.Verdicts[models.Tokens] == models.Violated
		}
		if bad {
			fencedBad = append(fencedBad, f.Fault)
		}
		if back {
			backwards = append(backwards, f.Fault)
		}
	}
	each := ""
	if runs > 1 {
		each = fmt.Sprintf(" in all %d runs of each", runs)
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
		p = append(p, fmt.Sprintf("%s is safe to adopt with a fenced resource: send %s with every write and have the resource refuse a token not newer than the newest it accepted. Under %s%s the fence refused every stale write (%d in all) and the tokens stayed strictly increasing.", s.Name, s.Facts.Token, list(faults), each, rejected))
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
		if !allDecided(s.Baseline) {
			what = "a run without a fault failed or was not decided"
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
			p = append(p, "What breaks it, as its descriptor declares: "+strings.Join(breaks, "; ")+".")
		} else {
			durable := "Its descriptor declares nothing that resets the token, reads it from a clock or shares it through a pool"
			if s.Facts.DurableLeases {
				durable += ", and a restarted server keeps its leases"
			}
			p = append(p, durable+"; the fence still is what makes it safe, since the lock alone lets a stalled holder write late.")
		}
	}
	// Per fault, what the figures mean for a caller.
	for _, f := range s.Faults {
		if sentence := faultSentence(s, f); sentence != "" {
			p = append(p, sentence)
		}
	}
	if l := s.Latency; l.AcquireP50.N > 0 {
		beside := ", with nothing else running,"
		if !alone {
			beside = " (beside other runs of the comparison)"
		}
		p = append(p, fmt.Sprintf("Without faults%s an acquire took %s at the median and %s at p99, and the service granted locks at %s to the contending clients.",
			beside, DurationWords(l.AcquireP50), DurationWords(l.AcquireP99), RateWords(l.GrantsPerSecond)))
	}
	if c := configurationSentence(s); c != "" {
		p = append(p, c)
	}
	p = append(p, NotTested(s.Backend))
	return strings.Join(p, " ")
}

// faultSentence says what a fault's runs showed, each claim only where every run
// supports it.
func faultSentence(s ServiceRow, f CompareFault) string {
	fg := f.Figures
	if fg.Runs == 0 {
		return ""
	}
	var p []string
	switch {
	case fg.UnfencedRuns == 0:
	case fg.Through == fg.UnfencedRuns:
		p = append(p, fmt.Sprintf("Under %s without fencing a stale write got through in every run (%d of %d)", f.Fault, fg.Through, fg.UnfencedRuns))
	case fg.Through > 0:
		p = append(p, fmt.Sprintf("Under %s without fencing a stale write got through in %d of %d runs (timing decides which)", f.Fault, fg.Through, fg.UnfencedRuns))
	default:
		p = append(p, fmt.Sprintf("Under %s without fencing no stale write got through in %d runs (timing, not a guarantee)", f.Fault, fg.UnfencedRuns))
	}
	if fg.Superseded == 0 {
		if len(p) == 0 {
			return ""
		}
		return p[0] + "; no holder was superseded."
	}
	if len(p) == 0 {
		p = append(p, fmt.Sprintf("Under %s", f.Fault))
	}
	p[0] += fmt.Sprintf("; a superseded holder went on believing it held the lock %s after another client got it", DurationWords(fg.ValidityGap))
	if fg.FaultLength.N > 0 {
		p[0] += fmt.Sprintf(", in faults that lasted %s (the harness heals a fault only after 2 × TTL, so a gap as long as the fault measures the heal more than the lock)", DurationWords(fg.FaultLength))
	}
	refuse := "the resource must refuse it"
	if s.Facts.NoToken != "" {
		refuse = "no resource can tell it from a valid one"
	}
	switch {
	case fg.NeverNoticed == fg.Superseded:
		p = append(p, fmt.Sprintf("in every run (%d) a superseded holder never noticed the loss before writing: a client cannot rely on the lock's loss signal here", fg.Superseded))
	case fg.NeverNoticed > 0:
		p = append(p, fmt.Sprintf("in %d of %d runs a superseded holder never noticed the loss; in the others it learned of it %s after the other client's grant", fg.NeverNoticed, fg.Superseded, noticeSpread(fg.NoticeDelay)))
	case fg.NoticeDelay.Max == 0:
		p = append(p, fmt.Sprintf("in every run (%d) its client signalled the loss before the other client was granted the lock, but a stalled holder acts on no signal: when its late write comes, %s", fg.NoticeDelay.N, refuse))
	default:
		p = append(p, fmt.Sprintf("it learned it had lost the lock %s after the other client's grant: a write in that window is late, and %s", DurationWords(fg.NoticeDelay), refuse))
	}
	p = append(p, fmt.Sprintf("the others waited %s from its last successful operation until one of them was granted the lock", DurationWords(fg.Takeover)))
	switch o := fg.Overshoot; {
	case o.N == 0:
		if s.Facts.ClientExpiry {
			p = append(p, "no superseded holder recorded its validity estimate, so these runs do not show whether checking it before writing stops a client in time")
		}
	case o.N == fg.Superseded && o.Max == 0:
		p = append(p, fmt.Sprintf("in every run (%d) the holder's own validity estimate had run out before the next grant, so a careful client that checks it right before writing stops in time; a pause between the check and the write still needs the token", o.N))
	case o.Max > 0:
		p = append(p, fmt.Sprintf("its own validity estimate still said it held the lock %s after the next grant (overshoot), so a careful client that checks it before writing would still write late", DurationWords(o)))
	}
	return strings.Join(p, "; ") + "."
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
func (c *Comparison) Outcome() RunOutcome {
	for _, s := range c.Services {
		if s.Verdict == VerdictUnsafe {
			return OutcomeUnsafe
		}
	}
	if !c.Complete {
		return OutcomeIncomplete
	}
	for _, s := range c.Services {
		if s.Verdict == VerdictInconclusive {
			return OutcomeInconclusive
		}
	}
	return OutcomeComplete
}

// SummaryLine says in one line which services are safe with fencing.
func (c *Comparison) SummaryLine() string {
	var safe, other []string
	for _, s := range c.Services {
		if s.Safe {
			safe = append(safe, s.Name)
		} else {
			other = append(other, s.Name+" ("+s.Verdict.String()+")")
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
