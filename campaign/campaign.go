// Package campaign runs many runs: `matrix`, `evaluate` and `soak` are three plans
// (lists of specs: CellSpec, PlanEvaluate, Soak) over one runner (Campaign). Every run
// goes into a results store (<store>/<label>/<timestamp>/); an interrupted campaign
// keeps every run that finished.
package campaign

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/harness/redact"
	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/reports"
	"github.com/fencecheck/fencecheck/spec"
	"github.com/fencecheck/fencecheck/trial"
)

// Campaign says how to run a plan.
type Campaign struct {
	// Registry resolves the specs' names; required.
	Registry *registry.Registry
	// Catalogue names the runs that are its scenarios (Label); nil: every run is
	// labelled from its settings.
	Catalogue catalogue.Catalogue
	// Store is the results store: each run goes to Store/<label>/<timestamp>/ with its
	// run.log, and Store/<label>/latest points at it.
	Store string
	// Parallel is how many runs go at a time (default 1; DefaultParallel is what the
	// machine takes; always 1 for a Shared backend's runs). With more than one, the runs
	// whose faults act on the service (the longest: they wait for it to recover) are
	// handed out first.
	Parallel int
	// Log, if set, also receives every run's log.
	Log io.Writer
	// CheckTimeout bounds each property's check (0: the models' default).
	CheckTimeout time.Duration
	// Select asks every run's check for these opt-in properties (trial.Options.Select;
	// run's --fail-on names them).
	Select []models.Property
	// Host runs built-in lock clients as client hosts in runs with a process pause
	// (trial.Options.Host; nil: in-process).
	Host trial.LockerHost
	// Redact masks secrets in every run's log, its error and its folder's failure note
	// (nil: credential patterns only, such as a URL's password).
	Redact *redact.Redactor
	// Shard, if set, runs only the shard's specs of the plan (Shard.Owns); the others'
	// results carry ErrNotInShard.
	Shard Shard
	// Alone, if set, names the runs that go with nothing else running: they run one at
	// a time before the others (a comparison's runs without a fault, whose latency must
	// measure the lock and not the runs beside it).
	Alone func(i int) bool
	// Started and Finished, if set, are called around each run (from the runs'
	// goroutines, possibly at the same time).
	Started  func(i int, label string)
	Finished func(i int, r RunResult)
}

// RunResult is one run of a campaign.
type RunResult struct {
	Label string
	// Dir is the run's folder ("" when none could be made or the run never started).
	Dir     string
	Outcome *trial.Outcome
	Took    time.Duration
	Err     error
}

// ErrInterrupted marks a run that never started because the campaign was interrupted.
var ErrInterrupted = errors.New("interrupted before it ran")

// ErrNotInShard marks a run of the plan that another shard runs (Campaign.Shard).
var ErrNotInShard = errors.New("run by another shard")

// Run executes specs (those of c.Shard), Parallel at a time, and returns each spec's
// result in order. When ctx ends, the runs under way end with its error, the ones not
// started get ErrInterrupted, and interrupted is true.
func (c Campaign) Run(ctx context.Context, specs []spec.Spec) (results []RunResult, interrupted bool) {
	results = make([]RunResult, len(specs))
	n := max(c.Parallel, 1)
	if c.shared(specs) {
		n = 1
	}
	order := c.order(specs, n)
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range min(n, max(len(specs), 1)) {
		wg.Go(func() {
			for i := range jobs {
				label := c.label(specs[i])
				if ctx.Err() != nil { // ended while the job was handed over
					results[i] = RunResult{Label: label, Err: ErrInterrupted}
					continue
				}
				if c.Started != nil {
					c.Started(i, label)
				}
				results[i] = c.runOne(ctx, specs[i], label)
				if c.Finished != nil {
					c.Finished(i, results[i])
				}
			}
		})
	}
	// The runs that go alone first, one at a time, before any other starts.
	var rest []int
	for _, i := range order {
		if c.Alone == nil || !c.Alone(i) {
			rest = append(rest, i)
			continue
		}
		if !c.Shard.Owns(i) {
			results[i] = RunResult{Label: c.label(specs[i]), Err: ErrNotInShard}
			continue
		}
		label := c.label(specs[i])
		if ctx.Err() != nil {
			interrupted = true
			results[i] = RunResult{Label: label, Err: ErrInterrupted}
			continue
		}
		if c.Started != nil {
			c.Started(i, label)
		}
		results[i] = c.runOne(ctx, specs[i], label)
		if c.Finished != nil {
			c.Finished(i, results[i])
		}
	}
	for _, i := range rest {
		if !c.Shard.Owns(i) {
			results[i] = RunResult{Label: c.label(specs[i]), Err: ErrNotInShard}
			continue
		}
		if ctx.Err() == nil {
			select {
			case jobs <- i:
				continue
			case <-ctx.Done():
			}
		}
		interrupted = true
		results[i] = RunResult{Label: c.label(specs[i]), Err: ErrInterrupted}
	}
	close(jobs)
	wg.Wait()
	return results, interrupted || ctx.Err() != nil
}

// DefaultParallel is how many runs a campaign on this machine can take at a time: two per
// CPU Go may use, at most 8. A run mostly waits on its faults and its lease TTLs (an
// evaluation of etcd uses about a tenth of a core per run), and its faults strike the
// holder and heal on events, so the verdicts do not depend on how many run beside it.
func DefaultParallel() int { return min(2*runtime.GOMAXPROCS(0), 8) }

// order is the order the runs are handed out in: the plan's, or with n at a time those
// with the most service faults first (stable: a plan of client-side faults, like
// compare's interleaving of services, keeps its order), so that the longest runs do not
// start last and leave the campaign waiting on them alone.
func (c Campaign) order(specs []spec.Spec, n int) []int {
	out := make([]int, len(specs))
	for i := range out {
		out[i] = i
	}
	if n <= 1 || c.Registry == nil {
		return out
	}
	weight := make([]int, len(specs))
	for i, s := range specs {
		for _, f := range s.Faults {
			if c.Registry.ActsOnService(f) {
				weight[i]++
			}
		}
	}
	slices.SortStableFunc(out, func(a, b int) int { return weight[b] - weight[a] })
	return out
}

// shared reports whether a spec's backend is Shared: its runs share one started value,
// so they go one at a time.
func (c Campaign) shared(specs []spec.Spec) bool {
	if c.Registry == nil {
		return false
	}
	for _, s := range specs {
		if b, ok := c.Registry.Backend(s.Backend); ok && b.Shared {
			return true
		}
	}
	return false
}

// label names a run in the store.
func (c Campaign) label(s spec.Spec) string {
	if c.Registry == nil {
		return "unresolved"
	}
	return c.Catalogue.Label(c.Registry, s)
}

// ErrStore marks a run that the results store could not take: its folder, its run.log
// or the note of how it ended could not be written (a full disk, a read-only mount).
var ErrStore = errors.New("results store")

// runOne resolves s (settling the TTL an external service grants) and runs it as
// RunResolved does; a spec that does not resolve fails in its own folder.
func (c Campaign) runOne(ctx context.Context, s spec.Spec, label string) RunResult {
	return c.runInto(ctx, s, label, func(ctx context.Context, log *slog.Logger) (*spec.Resolved, error) {
		return trial.Resolve(ctx, c.Registry, s, log)
	})
}

// RunResolved runs the resolved spec r into Store/<label>/<timestamp>/: the one way a
// spec is run into a store, for the CLI's run, every campaign and the Go front. Its log
// goes to run.log (and to Log), secrets are masked in the log, the error and the
// folder's note, and Store/<label>/latest points at the run if it left a history
// (reports.EndRun). A store that cannot take the run gives an ErrStore.
func (c Campaign) RunResolved(ctx context.Context, r *spec.Resolved, label string) RunResult {
	return c.runInto(ctx, r.Spec, label, func(context.Context, *slog.Logger) (*spec.Resolved, error) { return r, nil })
}

func (c Campaign) runInto(ctx context.Context, s spec.Spec, label string, resolve func(context.Context, *slog.Logger) (*spec.Resolved, error)) (r RunResult) {
	r.Label = label
	started := time.Now()
	defer func() { r.Took = time.Since(started) }()
	switch {
	case c.Registry == nil:
		r.Err = fmt.Errorf("%w: campaign: no registry given (Campaign.Registry)", spec.ErrSpec)
		return r
	case c.Store == "":
		r.Err = fmt.Errorf("%w: campaign: no results store given (Campaign.Store)", spec.ErrSpec)
		return r
	}
	dir, err := reports.NewRunDir(c.Store, label, started)
	if err != nil {
		r.Err = fmt.Errorf("%w %s: %w", ErrStore, c.Store, err)
		return r
	}
	r.Dir = dir
	logf, err := os.Create(filepath.Join(dir, reports.RunLog))
	if err != nil {
		r.Err = fmt.Errorf("%w %s: %w", ErrStore, c.Store, err)
		return r
	}
	defer logf.Close()
	var h slog.Handler = slog.NewTextHandler(c.Redact.Writer(logf), nil)
	if c.Log != nil {
		h = slog.NewMultiHandler(h, slog.NewTextHandler(c.Redact.Writer(c.Log), nil))
	}
	logger := slog.New(h)
	logger.Info("scenario starting", "label", label, "backend", s.Backend, "resource", s.Resource, "faults", s.Faults, "seed", s.Seed)
	res, err := resolve(ctx, logger)
	if err == nil {
		r.Outcome, err = trial.Execute(ctx, res, trial.Options{Dir: dir, Logger: logger, CheckTimeout: c.CheckTimeout, Host: c.Host, Select: c.Select})
	}
	r.Err = c.Redact.Error(err)
	failure := ""
	if r.Err != nil {
		logger.Error("scenario failed", "err", r.Err)
		failure = strings.TrimPrefix(r.Err.Error(), spec.ErrSpec.Error()+": ")
	}
	// The folder holds whatever evidence there is, even from a failed run; latest
	// moves to it only if it has a history.
	if err := reports.EndRun(dir, failure); err != nil && r.Err == nil {
		r.Err = fmt.Errorf("%w: %w", ErrStore, err)
	}
	return r
}

// RelTo returns a run's folder relative to the results store's root, with forward
// slashes, as the store's pages link it.
func RelTo(root, path string) string {
	r, err := filepath.Rel(root, path)
	if err != nil {
		return filepath.ToSlash(path)
	}
	return filepath.ToSlash(r)
}
