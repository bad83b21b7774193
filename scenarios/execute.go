package scenarios

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/harness/runner"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/reports"
)

// Options control how a scenario is executed.
type Options struct {
	// OutDir receives the evidence (history.json first, then verdict.json and the
	// porcupine visualizations). Empty: nothing is written.
	OutDir string
	// Logger receives progress; nil discards it.
	Logger *slog.Logger
	// CheckTimeout bounds each property's linearizability check (0: models' default).
	CheckTimeout time.Duration
}

// Outcome is an executed scenario.
type Outcome struct {
	Spec     Spec
	History  *history.History
	Report   *models.Report
	Workload time.Duration
	Check    time.Duration
}

// ErrSpec marks a spec that cannot run (bad name, bad value): a usage error.
var ErrSpec = errors.New("invalid scenario")

// Execute builds the backend and resource, runs the workload, saves the history, checks
// it, and saves the verdicts. Every server it starts is closed before it returns.
func Execute(ctx context.Context, spec Spec, opt Options) (*Outcome, error) {
	spec, err := spec.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSpec, err)
	}
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opt.OutDir != "" {
		if err := os.MkdirAll(opt.OutDir, 0o755); err != nil {
			return nil, err
		}
	}
	e, err := build(ctx, spec, opt.OutDir)
	if err != nil {
		return nil, err
	}
	defer e.Close()
	res, be := e.resource, e.backend

	faults := spec.clientFaults(nodeFaults{backend: be, env: e})
	var maxHold time.Duration
	for _, f := range faults {
		maxHold = max(maxHold, f.MaxHold)
	}
	run := history.Run{
		Scenario: spec.Name, Backend: spec.Backend, Resource: spec.Resource, Fence: res.Fence(),
		Seed: spec.Seed, TTLms: spec.TTL.Milliseconds(),
		Extra: map[string]any{"clients": spec.Clients, "faults": spec.Faults, "duration_ms": spec.Duration.Milliseconds(), "members": spec.Members, "policy": spec.Policy},
	}
	if spec.Keys > 1 {
		run.Extra["keys"] = spec.Keys
	}
	if t, ok := be.(harness.Tokenless); ok {
		run.NoToken = t.NoFencingToken()
	}
	if sched, ok := spec.schedule(); ok {
		run.Extra["random_faults"] = spec.RandomFaults
		run.Extra["schedule"] = sched.Items
	}
	start := time.Now()
	h, err := runner.Run(ctx, runner.Config{
		Run: run, Backend: be, Resource: res, Clients: spec.Clients,
		Duration: spec.Duration, Tail: spec.TTL, Limit: maxHold + 10*time.Second,
		Faults: faults,
		// A held write must outlive the longest hold, so it returns with its real status.
		OpTimeout:      maxHold + 2*spec.TTL + time.Second,
		AcquireTimeout: 10 * spec.TTL,
		Think:          spec.TTL / 10,
		Careful:        spec.Policy == "careful",
		Margin:         spec.TTL / 10,
		ClientNow:      e.clientNow,
		Logger:         log,
		Keys:           spec.Keys,
	})
	if err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	out := &Outcome{Spec: spec, History: h, Workload: time.Since(start)}
	// Evidence first: the history is on disk before any check can fail or hang.
	if opt.OutDir != "" {
		if err := history.WriteFile(filepath.Join(opt.OutDir, "history.json"), h); err != nil {
			return nil, err
		}
	}
	start = time.Now()
	rep, err := models.Check(ctx, h, models.Options{Timeout: opt.CheckTimeout})
	if err != nil {
		return nil, fmt.Errorf("check: %w", err)
	}
	out.Report, out.Check = rep, time.Since(start)
	if opt.OutDir != "" {
		if err := reports.WriteRun(ctx, opt.OutDir, h, rep); err != nil {
			return out, err
		}
	}
	log.Info("scenario done", "name", spec.Name, "workload", out.Workload, "check", out.Check)
	return out, nil
}
