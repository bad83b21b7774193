package scenarios

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/harness/history"
	execlock "github.com/fencecheck/fencecheck/harness/lease/exec"
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
	// Warnings are problems met while shutting the run down that do not change its
	// verdicts (an exec client that had to be killed).
	Warnings []string
}

// runError keeps the history recorded before a run failed (a broken exec client, an
// interrupt) and says where it is, in one line. A client that broke the protocol is a
// usage error (ErrSpec); one that died, or anything else, is not.
func runError(err error, h *history.History, outDir string) error {
	where := ""
	if h != nil && outDir != "" {
		path := filepath.Join(outDir, "history.json")
		if werr := history.WriteFile(path, h); werr == nil {
			where = fmt.Sprintf(" (the history so far, %d ops: %s)", len(h.Ops), path)
		}
	}
	if errors.Is(err, execlock.ErrProtocol) {
		return specError{fmt.Errorf("%w%s", err, where)}
	}
	var ce *execlock.ClientError
	if errors.As(err, &ce) {
		return fmt.Errorf("%w%s", err, where)
	}
	return fmt.Errorf("run: %w%s", err, where)
}

// specError is a usage error whose message is only its cause's.
type specError struct{ err error }

func (e specError) Error() string   { return e.err.Error() }
func (e specError) Unwrap() []error { return []error{ErrSpec, e.err} }

// ErrSpec marks a spec that cannot run (bad name, bad value): a usage error.
var ErrSpec = errors.New("invalid scenario")

// Execute builds the backend and resource, runs the workload, saves the history, checks
// it, and saves the verdicts. Every server it starts is closed before it returns.
func Execute(ctx context.Context, spec Spec, opt Options) (out *Outcome, err error) {
	spec, err = spec.withDefaults()
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
	e, err := build(ctx, spec, opt.OutDir, log)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := e.Close(); cerr != nil && out != nil {
			out.Warnings = append(out.Warnings, strings.Split(cerr.Error(), "\n")...)
		}
	}()
	res, be := e.resource, e.backend

	faults := spec.clientFaults(nodeFaults{backend: lockServiceOf(be), env: e})
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
		return nil, runError(err, h, opt.OutDir)
	}
	out = &Outcome{Spec: spec, History: h, Workload: time.Since(start)}
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
