package scenarios

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/models"
)

// Soak runs: every scenario N times with seeds 1..N, and how trustworthy its verdicts
// were. A soak answers "does this scenario catch the bug every time, and does it never
// cry wolf?" rather than "what happened in this one run?".

// SoakConfig says what to soak.
type SoakConfig struct {
	// Scenarios to run, in order; each runs Runs times.
	Scenarios []Scenario
	// Runs per scenario, with seeds 1..Runs.
	Runs int
	// Random replaces each scenario's targeted faults with a random schedule of the
	// same kinds drawn from the seed (see Spec.RandomFaults). Verdicts are then reported,
	// not compared with the catalogue: a random schedule need not produce the hazard.
	Random bool
	// OutDir, if set, keeps each run's evidence in OutDir/<scenario>/seed-<N>/. If not,
	// only the evidence of runs that differ from the catalogue is kept, in a temporary
	// directory named in SoakRun.Evidence.
	OutDir string
	// CheckTimeout bounds each property's check (0: the models' default).
	CheckTimeout time.Duration
	// Progress, if set, is called after every run.
	Progress func(scenario string, r SoakRun)
}

// SoakRun is one run of a soak.
type SoakRun struct {
	Seed     int64                              `json:"seed"`
	Verdicts map[models.Property]models.Verdict `json:"verdicts,omitempty"`
	// Diffs are the ways the run differed from the catalogue (empty in random mode).
	Diffs []string `json:"diffs,omitempty"`
	// Err is set when the run could not complete; it has no verdicts then.
	Err string `json:"error,omitempty"`
	// Evidence is the directory holding the run's history and verdicts, when kept.
	Evidence string `json:"evidence,omitempty"`
	// FirstViolationNanos is when the first stale write that got through was called,
	// since the workload started; nil when none got through.
	FirstViolationNanos *int64 `json:"first_violation_ns,omitempty"`
	WorkloadNanos       int64  `json:"workload_ns"`
	CheckNanos          int64  `json:"check_ns"`
	Ops                 int    `json:"ops"`
}

// Percentiles summarises a set of durations (nearest rank).
type Percentiles struct {
	N     int   `json:"n"`
	P50ns int64 `json:"p50_ns"`
	P95ns int64 `json:"p95_ns"`
	MaxNs int64 `json:"max_ns"`
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

// Errors is the number of runs, over all scenarios, that did not complete.
func (r *SoakResult) Errors() int {
	n := 0
	for _, s := range r.Scenarios {
		n += s.Errors
	}
	return n
}

// SelectScenarios resolves a comma-separated list of catalogue names; "all" (or an
// empty list) is the whole catalogue but the scenarios that cannot run here (a
// PostgreSQL resource without a configured server), which it lists in skipped. An
// unknown name is an ErrSpec error.
func SelectScenarios(list string) (_ []Scenario, skipped []string, _ error) {
	all := Catalogue()
	if list == "" || list == "all" {
		var out []Scenario
		for _, sc := range all {
			if needs, configured := needsPostgres(sc.Spec); needs && !configured {
				skipped = append(skipped, sc.Name)
				continue
			}
			out = append(out, sc)
		}
		return out, skipped, nil
	}
	var out []Scenario
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		i := slices.IndexFunc(all, func(s Scenario) bool { return s.Name == name })
		if i < 0 {
			return nil, nil, fmt.Errorf("%w: unknown scenario %q (see fencecheck list)", ErrSpec, name)
		}
		out = append(out, all[i])
	}
	if len(out) == 0 {
		return nil, nil, fmt.Errorf("%w: no scenario named", ErrSpec)
	}
	return out, nil, nil
}

// Soak runs every scenario cfg.Runs times, one run at a time (timing-sensitive faults are
// most faithful alone), and summarises each. It returns an error only when ctx ends or
// the configuration is invalid; a run that fails is counted in SoakStats.Errors.
func Soak(ctx context.Context, cfg SoakConfig) (*SoakResult, error) {
	if cfg.Runs < 1 {
		return nil, fmt.Errorf("%w: runs must be at least 1, got %d", ErrSpec, cfg.Runs)
	}
	res := &SoakResult{Runs: cfg.Runs, Random: cfg.Random}
	for _, sc := range cfg.Scenarios {
		spec, err := soakSpec(sc, cfg.Random)
		if err != nil {
			return nil, err
		}
		var runs []SoakRun
		for seed := int64(1); seed <= int64(cfg.Runs); seed++ {
			spec.Seed = seed
			opt := Options{CheckTimeout: cfg.CheckTimeout}
			keep := cfg.OutDir != ""
			if keep {
				opt.OutDir = filepath.Join(cfg.OutDir, sc.Name, "seed-"+strconv.FormatInt(seed, 10))
			} else {
				dir, err := os.MkdirTemp("", "fencecheck-soak-"+sc.Name+"-seed-"+strconv.FormatInt(seed, 10)+"-")
				if err != nil {
					return nil, fmt.Errorf("soak: %w", err)
				}
				opt.OutDir = dir
			}
			r, err := soakOnce(ctx, sc, spec, opt, cfg.Random)
			if keep || len(r.Diffs) > 0 || r.Err != "" {
				r.Evidence = opt.OutDir
			} else if rmErr := os.RemoveAll(opt.OutDir); rmErr != nil && err == nil {
				err = rmErr
			}
			if err == nil {
				err = ctx.Err()
			}
			if err != nil {
				return nil, fmt.Errorf("soak %s seed %d: %w", sc.Name, seed, err)
			}
			if cfg.Progress != nil {
				cfg.Progress(sc.Name, r)
			}
			runs = append(runs, r)
		}
		expect := sc.Expect
		if cfg.Random {
			expect = Expect{}
		}
		res.Scenarios = append(res.Scenarios, summarise(sc.Name, expect, runs))
	}
	return res, nil
}

// RandomSoakDuration is a random-mode soak run's workload time when the scenario sets
// none: long enough for a schedule at the default interval (2 TTLs) with a 1 s etcd TTL.
const RandomSoakDuration = 5 * time.Second

// soakSpec is the spec a soak runs for sc: as catalogued, or, in random mode, with its
// targeted faults replaced by a random schedule of the same kinds.
func soakSpec(sc Scenario, random bool) (Spec, error) {
	spec := sc.Spec
	if !random {
		return spec, nil
	}
	if len(spec.Faults) == 0 {
		return spec, fmt.Errorf("%w: scenario %s has no faults to draw a random schedule from", ErrSpec, sc.Name)
	}
	spec.RandomFaults, spec.Faults = spec.Faults, nil
	if spec.Duration == 0 {
		spec.Duration = RandomSoakDuration
	}
	return spec, nil
}

// soakOnce executes one run. A run that fails is recorded in SoakRun.Err; only an
// invalid spec (ErrSpec) is returned as an error, since every other run would fail too.
func soakOnce(ctx context.Context, sc Scenario, spec Spec, opt Options, random bool) (SoakRun, error) {
	r := SoakRun{Seed: spec.Seed}
	o, err := Execute(ctx, spec, opt)
	if errors.Is(err, ErrSpec) {
		return r, err
	}
	if err != nil {
		r.Err = err.Error()
		return r, nil
	}
	r.Verdicts = o.Report.Verdicts
	r.WorkloadNanos, r.CheckNanos, r.Ops = o.Workload.Nanoseconds(), o.Check.Nanoseconds(), len(o.History.Ops)
	if !random {
		r.Diffs = sc.Expect.Diff(o.Report)
	}
	if t, ok := FirstViolation(o.Report); ok {
		r.FirstViolationNanos = &t
	}
	return r, nil
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

// summarise computes one scenario's rates and percentiles from its runs.
func summarise(name string, expect Expect, runs []SoakRun) SoakStats {
	st := SoakStats{Scenario: name, Runs: len(runs), Expected: expect.Verdicts, Detail: runs}
	var wantViolated, wantHeld []models.Property
	for _, p := range models.AllProperties {
		switch expect.Verdicts[p] {
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
	st.TimeToFirstViolation = percentiles(ttfv)
	st.Check = percentiles(check)
	return st
}

// percentiles uses the nearest-rank method.
func percentiles(xs []int64) Percentiles {
	if len(xs) == 0 {
		return Percentiles{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	rank := func(q float64) int64 {
		i := int(q*float64(len(s))+0.999999) - 1
		return s[min(max(i, 0), len(s)-1)]
	}
	return Percentiles{N: len(s), P50ns: rank(0.50), P95ns: rank(0.95), MaxNs: s[len(s)-1]}
}
