package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/fencecheck/fencecheck/reports"
	"github.com/fencecheck/fencecheck/scenarios"
)

// defaultOut is the results store when --out is not given.
const defaultOut = "fencecheck-results"

// cell is one scenario executed into the results store.
type cell struct {
	Label   string
	Dir     string // the run's folder
	Outcome *scenarios.Outcome
	Took    time.Duration
	Err     error
}

// execute runs spec into out/<label>/<timestamp>/ with its log in run.log, and points
// out/<label>/latest at it. verbose, if not nil, also receives the log.
func execute(ctx context.Context, spec scenarios.Spec, out string, verbose io.Writer) (c cell) {
	c.Label = scenarios.Label(spec)
	started := time.Now()
	defer func() { c.Took = time.Since(started) }()
	dir, err := reports.NewRunDir(out, c.Label, started)
	if err != nil {
		c.Err = err
		return c
	}
	c.Dir = dir
	logf, err := os.Create(filepath.Join(dir, reports.RunLog))
	if err != nil {
		c.Err = err
		return c
	}
	defer logf.Close()
	var h slog.Handler = slog.NewTextHandler(logf, nil)
	if verbose != nil {
		h = slog.NewMultiHandler(h, slog.NewTextHandler(verbose, nil))
	}
	logger := slog.New(h)
	logger.Info("scenario starting", "label", c.Label, "backend", spec.Backend, "resource", spec.Resource, "faults", spec.Faults, "seed", spec.Seed)
	c.Outcome, c.Err = scenarios.Execute(ctx, spec, scenarios.Options{OutDir: dir, Logger: logger})
	if c.Err != nil {
		logger.Error("scenario failed", "err", c.Err)
	}
	// The folder holds whatever evidence there is, even from a failed run.
	if err := reports.MarkLatest(dir); err != nil && c.Err == nil {
		c.Err = fmt.Errorf("results store: %w", err)
	}
	return c
}

// relTo returns path relative to root, with forward slashes.
func relTo(root, path string) string {
	r, err := filepath.Rel(root, path)
	if err != nil {
		return filepath.ToSlash(path)
	}
	return filepath.ToSlash(r)
}
