// Package judge turns checked runs into judgements: a run's Outcome, the evaluate
// scorecard's verdict (Scorecard.Judge) and a soak's detection and false-alarm counts
// (Summarise). It is typed data computed from models' reports; package reports only
// renders it, and scenarios and the CLI decide exit codes from it.
package judge

import (
	"fmt"
	"slices"
	"time"

	"github.com/fencecheck/fencecheck/models"
)

// RunOutcome is what a run says about the protected data (Outcome), or why it says
// nothing (OutcomeError, OutcomeNotRun). The words are the ones the JSON documents and
// pages show; logic compares outcomes with these constants.
type RunOutcome string

// Outcome words, from worst to best: what a run says about the protected data.
const (
	OutcomeUnsafe       RunOutcome = "unsafe"       // register or updates violated
	OutcomeUnknown      RunOutcome = "unknown"      // the checker timed out on register or updates
	OutcomeInconclusive RunOutcome = "inconclusive" // nothing violated, but the history lacks the evidence (Why)
	OutcomeSafe         RunOutcome = "safe"         // held, and the fault bit (or a fault-free run tested it)
)

// Outcomes of a run that gave no report.
const (
	// OutcomeNone: no result (yet): a run another shard makes, or one not made so far.
	OutcomeNone RunOutcome = ""
	// OutcomeError: the run failed (its Error says why).
	OutcomeError RunOutcome = "error"
	// OutcomeNotRun: the run was not made (a fenced run of a backend without a token).
	OutcomeNotRun RunOutcome = NotRunWord
)

// Outcomes of a whole comparison or evaluation, beside unsafe and inconclusive
// (Comparison.Outcome).
const (
	// OutcomeIncomplete: a run failed or was not decided.
	OutcomeIncomplete RunOutcome = "incomplete"
	// OutcomeComplete: every run was decided and nothing was unsafe or inconclusive.
	OutcomeComplete RunOutcome = "complete"
)

// Outcome classifies a report by what it says about the protected data.
func Outcome(rep *models.Report) RunOutcome {
	v := rep.Verdicts
	switch {
	case v[models.Register] == models.Violated || v[models.Updates] == models.Violated:
		return OutcomeUnsafe
	case v[models.Register] == models.Unknown || v[models.Updates] == models.Unknown:
		return OutcomeUnknown
	case v[models.Register] == models.Inconclusive || v[models.Updates] == models.Inconclusive:
		return OutcomeInconclusive
	}
	return OutcomeSafe
}

// Why says why a report's outcome is inconclusive: the reason register's (else
// updates') verdict gives, as data and in a phrase for a line or a cell; "", "" when the
// outcome is not inconclusive. A report written before reasons were recorded has an
// empty phrase: "inconclusive" alone says it then.
func Why(rep *models.Report) (models.Reason, string) {
	if Outcome(rep) != OutcomeInconclusive {
		return "", ""
	}
	for _, p := range []models.Property{models.Register, models.Updates} {
		if r, ok := rep.Result(p); ok && r.Verdict == models.Inconclusive {
			return r.Reason, r.Why
		}
	}
	return "", ""
}

// Percentile is the nearest-rank percentile p (0..100) of sorted samples (0 when
// none): the one percentile function of fencecheck, models.Percentile, which the lock
// timing of the direct analysis uses too.
func Percentile(sorted []int64, p float64) int64 { return models.Percentile(sorted, p) }

// Percentiles summarises a set of durations (nearest rank).
type Percentiles struct {
	N     int   `json:"n"`
	P50ns int64 `json:"p50_ns"`
	P95ns int64 `json:"p95_ns"`
	MaxNs int64 `json:"max_ns"`
}

// Summary is the p50, p95 and maximum of xs (any order).
func Summary(xs []int64) Percentiles {
	if len(xs) == 0 {
		return Percentiles{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return Percentiles{N: len(s), P50ns: Percentile(s, 50), P95ns: Percentile(s, 95), MaxNs: Percentile(s, 100)}
}

// Duration formats nanoseconds for people: "1.52 s", "350 ms", "12 µs".
func Duration(ns int64) string {
	d := time.Duration(ns)
	// Each unit from where its rounding would reach it (999.6 ms prints "1.00 s", not
	// "1000 ms").
	switch {
	case d >= time.Minute-time.Second/2:
		return d.Round(time.Second).String()
	case d >= time.Second-time.Millisecond/2:
		return fmt.Sprintf("%.2f s", d.Seconds())
	case d >= time.Millisecond-time.Microsecond/2:
		return fmt.Sprintf("%.0f ms", float64(d)/1e6)
	case d >= time.Microsecond-time.Nanosecond/2:
		return fmt.Sprintf("%.0f µs", float64(d)/1e3)
	}
	return fmt.Sprintf("%d ns", ns)
}

// Sharding says which part of a plan split over several machines a campaign's page
// shows (campaign.Shard): one shard of it, or shards merged (fencecheck merge).
type Sharding struct {
	// Plan is the plan's identity (a hash of its runs' settings, no secret in it).
	Plan string `json:"plan"`
	// Shard is "I/N" for one shard; empty for a merge.
	Shard string `json:"shard,omitempty"`
	// Merged counts the shards a merge combined; Missing lists the shards a partial
	// merge went without (1-based, of Of).
	Merged  int   `json:"merged_shards,omitempty"`
	Missing []int `json:"missing_shards,omitempty"`
	Of      int   `json:"of"`
}

// Line says it in a few words.
func (s *Sharding) Line() string {
	if s == nil {
		return ""
	}
	id := s.Plan
	if len(id) > 12 {
		id = id[:12]
	}
	if s.Shard != "" {
		return fmt.Sprintf("shard %s of plan %s: the other shards' runs are not in this page (fencecheck merge combines them)", s.Shard, id)
	}
	line := fmt.Sprintf("%d shard(s) of %d of plan %s merged", s.Merged, s.Of, id)
	if len(s.Missing) > 0 {
		line += fmt.Sprintf("; PARTIAL: shard(s) %v missing, their runs are not counted", s.Missing)
	}
	return line
}
