package judge

import (
	"slices"

	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/models"
)

// Soak runs: every scenario N times; how trustworthy its verdicts were.

// SoakRun is one run of a soak.
type SoakRun struct {
	Seed     int64                              `json:"seed"`
	Verdicts map[models.Property]models.Verdict `json:"verdicts,omitempty"`
	// Reason and Why say why a run whose outcome is inconclusive proves nothing (Why).
	Reason models.Reason `json:"reason,omitempty"`
	Why    string        `json:"why,omitempty"`
	// Diffs are the ways the run differed from the catalogue (empty in random mode).
	Diffs []string `json:"diffs,omitempty"`
	// Err is set when the run could not complete; it has no verdicts then.
	Err string `json:"error,omitempty"`
	// Evidence is the directory holding the run's history and verdicts, when kept.
	Evidence string `json:"evidence,omitempty"`
	// FirstViolationNanos is when the first stale write that got through was called,
	// since the workload started; nil when none got through.
	FirstViolationNanos *int64 `json:"first_violation_ns,omitempty"`
	// Violations holds, for each property the run found violated, the latest call time
	// (ns since the workload started) among its counterexample's operations: when the
	// last operation the violation needs was made, so when the run first showed what
	// broke (the zoo's time to first detection).
	Violations    map[models.Property]int64 `json:"violations_ns,omitempty"`
	WorkloadNanos int64                     `json:"workload_ns"`
	CheckNanos    int64                     `json:"check_ns"`
	Ops           int                       `json:"ops"`
}

// SoakStats is one scenario's soak.
type SoakStats struct {
	Scenario string `json:"scenario"`
	Runs     int    `json:"runs"`
	// Expected are the catalogue's verdicts (nil in random mode).
	Expected map[models.Property]models.Verdict `json:"expected,omitempty"`
	// DetectionRate is, over the runs that completed, the share in which every property
	// expected violated came out violated; nil when none is expected violated.
	DetectionRate *float64 `json:"detection_rate,omitempty"`
	// FalseAlarmRate is the share of runs in which some property expected held came out
	// violated; nil when none is expected held.
	FalseAlarmRate *float64 `json:"false_alarm_rate,omitempty"`
	// InconclusiveRate is the share of runs with at least one inconclusive verdict.
	InconclusiveRate float64 `json:"inconclusive_rate"`
	// Untested counts the completed runs that tested nothing (a models.Reason that is
	// Untested: no grant, no accepted write, the fault never struck), as expected or
	// not; UntestedWhy is the first one's Why.
	Untested    int    `json:"untested"`
	UntestedWhy string `json:"untested_why,omitempty"`
	// Mismatches counts runs whose verdicts or evidence differed from the catalogue;
	// Errors counts runs that did not complete.
	Mismatches int `json:"mismatches"`
	Errors     int `json:"errors"`
	// TimeToFirstViolation is over the runs where a stale write got through.
	TimeToFirstViolation Percentiles `json:"time_to_first_violation"`
	// Check is the checker's time per run; OpsPerSec the mean workload throughput.
	Check     Percentiles `json:"check"`
	OpsPerSec float64     `json:"ops_per_sec"`
	Detail    []SoakRun   `json:"runs_detail"`
}

// SoakResult is a whole soak.
type SoakResult struct {
	Runs      int         `json:"runs"`
	Random    bool        `json:"random"`
	Scenarios []SoakStats `json:"scenarios"`
}

// Mismatches is the number of runs, over all scenarios, that differed from the catalogue.
func (r *SoakResult) Mismatches() int {
	n := 0
	for _, s := range r.Scenarios {
		n += s.Mismatches
	}
	return n
}

// Untested is the number of runs, over all scenarios, that tested nothing; the first
// one's scenario and why.
func (r *SoakResult) Untested() (n int, first string) {
	for _, s := range r.Scenarios {
		if s.Untested > 0 && first == "" {
			first = s.Scenario + ": " + s.UntestedWhy
		}
		n += s.Untested
	}
	return n, first
}

// Errors is the number of runs, over all scenarios, that did not complete.
func (r *SoakResult) Errors() int {
	n := 0
	for _, s := range r.Scenarios {
		n += s.Errors
	}
	return n
}

// FirstViolation is the call time (ns since the run started) of the earliest stale write
// that got through, if one did.
func FirstViolation(rep *models.Report) (int64, bool) {
	first, ok := int64(0), false
	for _, s := range rep.StaleWrites {
		if s.Status == "accepted" && (!ok || s.At < first) {
			first, ok = s.At, true
		}
	}
	return first, ok
}

// Violations is, for each property rep found violated whose counterexample names
// operations of h, the latest call time among them (the violation needs them all); nil when none (or h is nil: a
// history checked as a stream is not kept).
func Violations(h *history.History, rep *models.Report) map[models.Property]int64 {
	if h == nil || rep == nil {
		return nil
	}
	calls := make(map[int]int64, len(h.Ops))
	for _, op := range h.Ops {
		calls[op.ID] = op.Call
	}
	var out map[models.Property]int64
	for _, r := range rep.Results {
		if r.Verdict != models.Violated {
			continue
		}
		last, ok := int64(0), false
		for _, id := range r.Counterexample {
			if c, found := calls[id]; found && (!ok || c > last) {
				last, ok = c, true
			}
		}
		if ok {
			if out == nil {
				out = map[models.Property]int64{}
			}
			out[r.Property] = last
		}
	}
	return out
}

// Summarise computes one scenario's rates and percentiles from its runs; expected are
// the verdicts the catalogue expects (nil in random mode).
func Summarise(name string, expected map[models.Property]models.Verdict, runs []SoakRun) SoakStats {
	st := SoakStats{Scenario: name, Runs: len(runs), Expected: expected, Detail: runs}
	var wantViolated, wantHeld []models.Property
	for _, p := range models.AllProperties {
		switch expected[p] {
		case models.Violated:
			wantViolated = append(wantViolated, p)
		case models.Held:
			wantHeld = append(wantHeld, p)
		}
	}
	var detected, alarms, inconclusive, done int
	var ttfv, check []int64
	var opsPerSec float64
	for _, r := range runs {
		if r.Err != "" {
			st.Errors++
			continue
		}
		done++
		if r.Reason.Untested() {
			if st.Untested++; st.UntestedWhy == "" {
				st.UntestedWhy = r.Why
			}
		}
		if len(r.Diffs) > 0 {
			st.Mismatches++
		}
		if len(wantViolated) > 0 && !slices.ContainsFunc(wantViolated, func(p models.Property) bool { return r.Verdicts[p] != models.Violated }) {
			detected++
		}
		if slices.ContainsFunc(wantHeld, func(p models.Property) bool { return r.Verdicts[p] == models.Violated }) {
			alarms++
		}
		for _, v := range r.Verdicts {
			if v == models.Inconclusive {
				inconclusive++
				break
			}
		}
		if r.FirstViolationNanos != nil {
			ttfv = append(ttfv, *r.FirstViolationNanos)
		}
		check = append(check, r.CheckNanos)
		if r.WorkloadNanos > 0 {
			opsPerSec += float64(r.Ops) / (float64(r.WorkloadNanos) / 1e9)
		}
	}
	rate := func(n int) *float64 {
		if done == 0 {
			return nil
		}
		f := float64(n) / float64(done)
		return &f
	}
	if len(wantViolated) > 0 {
		st.DetectionRate = rate(detected)
	}
	if len(wantHeld) > 0 {
		st.FalseAlarmRate = rate(alarms)
	}
	if done > 0 {
		st.InconclusiveRate = float64(inconclusive) / float64(done)
		st.OpsPerSec = opsPerSec / float64(done)
	}
	st.TimeToFirstViolation = Summary(ttfv)
	st.Check = Summary(check)
	return st
}
