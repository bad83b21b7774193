package campaign

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/harness/redact"
	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/judge"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/reports"
	"github.com/fencecheck/fencecheck/spec"
)

// Soak runs: every scenario N times with seeds 1..N, and how trustworthy its verdicts
// were. A soak answers "does this scenario catch the bug every time, and does it never
// cry wolf?" rather than "what happened in this one run?".

// SoakConfig says what to soak.
type SoakConfig struct {
	// Scenarios to run, in order; each runs Runs times.
	Scenarios []catalogue.Scenario
	// Runs per scenario, with seeds 1..Runs.
	Runs int
	// Random replaces each scenario's targeted faults with a random schedule of the
	// same kinds drawn from the seed (see Spec.RandomFaults). Verdicts are then reported,
	// not compared with the catalogue: a random schedule need not produce the hazard.
	Random bool
	// Early arms every targeted strike at the run's first critical sections and heals
	// it on the takeover (spec.Spec.Early): the stale write comes about one TTL into a
	// run instead of three.
	Early bool
	// Store, if set, is the results store: every run goes to
	// Store/<scenario>/<timestamp>/ like any other (SoakRun.Evidence is that folder
	// relative to Store). If not, runs go to a temporary store and only the evidence of
	// runs that differ from the catalogue (or fail) is kept, its full path in Evidence.
	Store string
	// CheckTimeout bounds each property's check (0: the models' default).
	CheckTimeout time.Duration
	// Registry resolves the scenarios' names; required.
	Registry *registry.Registry
	// Parallel runs at a time (default 1: timing-sensitive faults are most faithful
	// alone); Log, if set, receives every run's log.
	Parallel int
	Log      io.Writer
	// Progress, if set, is called after every run.
	Progress func(scenario string, r SoakRun)
	// Failed, if set, is called with the error of every run that failed (before
	// Progress), so that a caller can tell the user's input from its own failure.
	Failed func(scenario string, err error)
	// Redact masks secrets in every run's log and error (see Campaign.Redact).
	Redact *redact.Redactor
	// Shard, if set, runs only the shard's runs of the plan (see Shard); the result
	// summarises those.
	Shard Shard
}

// SoakRun, SoakStats, SoakResult and Percentiles are judge's: the soak's judgement is
// computed there, outside reports.
type (
	SoakRun     = judge.SoakRun
	SoakStats   = judge.SoakStats
	SoakResult  = judge.SoakResult
	Percentiles = judge.Percentiles
)

// FirstViolation is the call time (ns since the run started) of the earliest stale write
// that got through, if one did.
func FirstViolation(rep *models.Report) (int64, bool) { return judge.FirstViolation(rep) }

// Soak runs every scenario cfg.Runs times over the campaign runner and summarises each.
// It returns an error when the configuration is invalid (ErrSpec, before anything runs)
// or when ctx ends: then the result still holds every run that finished. A run that
// fails is counted in SoakStats.Errors.
func Soak(ctx context.Context, cfg SoakConfig) (*SoakResult, error) {
	res, _, err := SoakPlanned(ctx, cfg)
	return res, err
}

// SoakPlanned is Soak that also returns the soak's plan record (plan.json: every run of
// the whole plan and, with cfg.Store set, the results of cfg.Shard's); nil when the
// configuration is invalid.
func SoakPlanned(ctx context.Context, cfg SoakConfig) (*SoakResult, *Plan, error) {
	if cfg.Runs < 1 {
		return nil, nil, fmt.Errorf("%w: runs must be at least 1, got %d", spec.ErrSpec, cfg.Runs)
	}
	reg := cfg.Registry
	if reg == nil {
		return nil, nil, fmt.Errorf("%w: soak needs a registry (SoakConfig.Registry)", spec.ErrSpec)
	}
	// Every scenario is checked first: an invalid spec would fail every run.
	var specs []spec.Spec
	for _, sc := range cfg.Scenarios {
		s, err := soakSpec(sc, cfg.Random, cfg.Early)
		if err != nil {
			return nil, nil, err
		}
		if _, err := spec.Resolve(reg, s); err != nil {
			return nil, nil, fmt.Errorf("soak %s: %w", sc.Name, err)
		}
		for seed := int64(1); seed <= int64(cfg.Runs); seed++ {
			s.Seed = seed
			specs = append(specs, s)
		}
	}
	sp := &SoakPlan{Runs: cfg.Runs, Random: cfg.Random}
	for _, sc := range cfg.Scenarios {
		sp.Scenarios = append(sp.Scenarios, SoakPlanScenario{Name: sc.Name, Expect: sc.Expect})
	}
	plan, err := newPlan(reg, nil, KindSoak, KindSoak, specs, cfg.Shard, sp)
	if err != nil {
		return nil, nil, err
	}
	plan.Soak = sp
	for i := range plan.Runs {
		plan.Runs[i].Scenario = cfg.Scenarios[i/cfg.Runs].Name
	}
	store, keepAll := cfg.Store, cfg.Store != ""
	if !keepAll {
		dir, err := os.MkdirTemp("", "fencecheck-soak-")
		if err != nil {
			return nil, nil, fmt.Errorf("soak: %w", err)
		}
		store = dir
	}
	runs := make([]*SoakRun, len(specs))
	var mu sync.Mutex // Finished may run on several goroutines at once
	var cleanupErr error
	c := Campaign{
		Registry: reg, Store: store, Parallel: cfg.Parallel, Log: cfg.Log, CheckTimeout: cfg.CheckTimeout, Redact: cfg.Redact, Shard: cfg.Shard,
		Finished: func(i int, res RunResult) {
			mu.Lock()
			defer mu.Unlock()
			sc := cfg.Scenarios[i/cfg.Runs]
			if res.Err != nil && cfg.Failed != nil {
				cfg.Failed(sc.Name, res.Err)
			}
			r := soakRun(sc.Expect, specs[i].Seed, res, cfg.Random)
			switch {
			case keepAll && res.Dir != "":
				r.Evidence = RelTo(store, res.Dir)
			case res.Err != nil && ctx.Err() != nil && res.Dir != "":
				// Cut short by the interrupt: it shows nothing about the scenario, and a
				// temporary store is left behind only for a run that shows something.
				if err := removeRun(res.Dir); err != nil && cleanupErr == nil {
					cleanupErr = err
				}
			case len(r.Diffs) > 0 || r.Err != "":
				r.Evidence = res.Dir
			case res.Dir != "":
				// As expected: nothing worth keeping in a temporary store.
				if err := removeRun(res.Dir); err != nil && cleanupErr == nil {
					cleanupErr = err
				}
			}
			runs[i] = &r
			if cfg.Progress != nil {
				cfg.Progress(sc.Name, r)
			}
		},
	}
	started := time.Now()
	results, interrupted := c.Run(ctx, specs)
	if keepAll {
		plan.Record(results, store, started, cfg.Redact)
	}
	if !keepAll {
		_ = os.Remove(store) // only when empty: kept evidence stays
	}
	res := summariseSoak(sp, runs)
	if interrupted {
		return res, plan, fmt.Errorf("soak interrupted: %w", context.Cause(ctx))
	}
	if cleanupErr != nil {
		return res, plan, fmt.Errorf("soak: %w", cleanupErr)
	}
	return res, plan, nil
}

// summariseSoak judges each scenario of a soak over its runs (one per run of the plan,
// in order; nil for a run that did not run here), leaving out a scenario none of whose
// runs ran.
func summariseSoak(sp *SoakPlan, runs []*SoakRun) *SoakResult {
	res := &SoakResult{Runs: sp.Runs, Random: sp.Random}
	for k, sc := range sp.Scenarios {
		var done []SoakRun
		for _, r := range runs[k*sp.Runs : (k+1)*sp.Runs] {
			if r != nil {
				done = append(done, *r)
			}
		}
		if len(done) == 0 {
			continue
		}
		expect := sc.Expect
		if sp.Random {
			expect = catalogue.Expect{}
		}
		res.Scenarios = append(res.Scenarios, judge.Summarise(sc.Name, expect.Verdicts, done))
	}
	return res
}

// RandomSoakDuration is a random-mode soak run's workload time when the scenario sets
// none: long enough for a schedule at the default interval (2 TTLs) with a 1 s etcd TTL;
// a scenario with a longer TTL of its own gets four of them.
const RandomSoakDuration = 5 * time.Second

// soakSpec is the spec a soak runs for sc: as catalogued, or, in random mode, with its
// targeted faults replaced by a random schedule of the same kinds; early arms its
// targeted strikes early (spec.Spec.Early).
func soakSpec(sc catalogue.Scenario, random, early bool) (spec.Spec, error) {
	s := sc.Spec
	if !random {
		s.Early = s.Early || early
		return s, nil
	}
	if len(s.Faults) == 0 {
		return s, fmt.Errorf("%w: scenario %s has no faults to draw a random schedule from", spec.ErrSpec, sc.Name)
	}
	s.RandomFaults, s.Faults = s.Faults, nil
	if s.Duration == 0 {
		// At least two of the default intervals (2 TTLs) of the scenario's own TTL.
		s.Duration = max(RandomSoakDuration, 4*s.TTL)
	}
	return s, nil
}

// removeRun deletes a run's folder from a temporary store, and its scenario's folder
// when nothing else is left in it (its latest link then points nowhere).
func removeRun(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	parent := filepath.Dir(dir)
	link := filepath.Join(parent, reports.LatestLink)
	if _, err := os.Stat(link); errors.Is(err, fs.ErrNotExist) {
		_ = os.Remove(link)
	}
	_ = os.Remove(parent) // only when empty
	return nil
}

// soakRun judges one finished run of a soak. A run interrupted by the end of the soak
// counts as failed only if it started.
func soakRun(expect catalogue.Expect, seed int64, res RunResult, random bool) SoakRun {
	r := SoakRun{Seed: seed}
	if res.Err != nil || res.Outcome == nil || res.Outcome.Report == nil {
		r.Err = errText(res.Err)
		return r
	}
	o := res.Outcome
	r.Verdicts = o.Report.Verdicts
	r.Reason, r.Why = judge.Why(o.Report)
	r.WorkloadNanos, r.CheckNanos, r.Ops = o.Workload.Nanoseconds(), o.Check.Nanoseconds(), max(len(o.History.Ops), o.Report.Ops)
	if !random {
		r.Diffs = expect.Diff(o.Report)
	}
	if t, ok := FirstViolation(o.Report); ok {
		r.FirstViolationNanos = &t
	}
	r.Violations = judge.Violations(o.History, o.Report)
	return r
}

// errText is an error's message, or "no report" for a run without error or report.
func errText(err error) string {
	if err == nil {
		return "no report"
	}
	return err.Error()
}
