package scenarios

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/harness/redact"
	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/models/judge"
	"github.com/fencecheck/fencecheck/reports"
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
	// Store, if set, is the results store: every run goes to
	// Store/<scenario>/<timestamp>/ like any other (SoakRun.Evidence is that folder
	// relative to Store). If not, runs go to a temporary store and only the evidence of
	// runs that differ from the catalogue (or fail) is kept, its full path in Evidence.
	Store string
	// CheckTimeout bounds each property's check (0: the models' default).
	CheckTimeout time.Duration
	// Registry resolves the scenarios' names (nil: the built-in registry).
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

// SelectScenarios resolves a comma-separated list of catalogue names; "all" (or an
// empty list) is the whole catalogue but the scenarios that cannot run here (a
// PostgreSQL resource without a configured server: Unavailable), which it lists in
// skipped. An unknown name is an ErrSpec error.
func SelectScenarios(list string) (_ []Scenario, skipped []string, _ error) {
	all := Catalogue()
	if list == "" || list == "all" {
		var out []Scenario
		for _, sc := range all {
			if Unavailable(sc.Spec) != "" {
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

// Soak runs every scenario cfg.Runs times over the campaign runner and summarises each.
// It returns an error when the configuration is invalid (ErrSpec, before anything runs)
// or when ctx ends: then the result still holds every run that finished. A run that
// fails is counted in SoakStats.Errors.
func Soak(ctx context.Context, cfg SoakConfig) (*SoakResult, error) {
	if cfg.Runs < 1 {
		return nil, fmt.Errorf("%w: runs must be at least 1, got %d", ErrSpec, cfg.Runs)
	}
	reg := cfg.Registry
	if reg == nil {
		reg = defaultRegistry()
	}
	// Every scenario is checked first: an invalid spec would fail every run.
	var specs []Spec
	for _, sc := range cfg.Scenarios {
		spec, err := soakSpec(sc, cfg.Random)
		if err != nil {
			return nil, err
		}
		if _, err := normalize(reg, spec); err != nil {
			return nil, fmt.Errorf("soak %s: %w", sc.Name, err)
		}
		for seed := int64(1); seed <= int64(cfg.Runs); seed++ {
			spec.Seed = seed
			specs = append(specs, spec)
		}
	}
	store, keepAll := cfg.Store, cfg.Store != ""
	if !keepAll {
		dir, err := os.MkdirTemp("", "fencecheck-soak-")
		if err != nil {
			return nil, fmt.Errorf("soak: %w", err)
		}
		store = dir
	}
	runs := make([]*SoakRun, len(specs))
	var mu sync.Mutex // Finished may run on several goroutines at once
	var cleanupErr error
	c := Campaign{
		Registry: reg, Store: store, Parallel: cfg.Parallel, Log: cfg.Log, CheckTimeout: cfg.CheckTimeout, Redact: cfg.Redact,
		Finished: func(i int, res RunResult) {
			mu.Lock()
			defer mu.Unlock()
			sc := cfg.Scenarios[i/cfg.Runs]
			if res.Err != nil && cfg.Failed != nil {
				cfg.Failed(sc.Name, res.Err)
			}
			r := soakRun(sc, specs[i].Seed, res, cfg.Random)
			switch {
			case keepAll && res.Dir != "":
				r.Evidence = relTo(store, res.Dir)
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
	_, interrupted := c.Run(ctx, specs)
	if !keepAll {
		_ = os.Remove(store) // only when empty: kept evidence stays
	}
	res := &SoakResult{Runs: cfg.Runs, Random: cfg.Random}
	for k, sc := range cfg.Scenarios {
		var done []SoakRun
		for _, r := range runs[k*cfg.Runs : (k+1)*cfg.Runs] {
			if r != nil {
				done = append(done, *r)
			}
		}
		if len(done) == 0 {
			continue
		}
		expect := sc.Expect
		if cfg.Random {
			expect = Expect{}
		}
		res.Scenarios = append(res.Scenarios, judge.Summarise(sc.Name, expect.Verdicts, done))
	}
	if interrupted {
		return res, fmt.Errorf("soak interrupted: %w", context.Cause(ctx))
	}
	if cleanupErr != nil {
		return res, fmt.Errorf("soak: %w", cleanupErr)
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
func soakRun(sc Scenario, seed int64, res RunResult, random bool) SoakRun {
	r := SoakRun{Seed: seed}
	if res.Err != nil || res.Outcome == nil || res.Outcome.Report == nil {
		r.Err = errText(res.Err)
		return r
	}
	o := res.Outcome
	r.Verdicts = o.Report.Verdicts
	r.WorkloadNanos, r.CheckNanos, r.Ops = o.Workload.Nanoseconds(), o.Check.Nanoseconds(), max(len(o.History.Ops), o.Report.Ops)
	if !random {
		r.Diffs = sc.Expect.Diff(o.Report)
	}
	if t, ok := FirstViolation(o.Report); ok {
		r.FirstViolationNanos = &t
	}
	return r
}

// errText is an error's message, or "no report" for a run without error or report.
func errText(err error) string {
	if err == nil {
		return "no report"
	}
	return err.Error()
}
