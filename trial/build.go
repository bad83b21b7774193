package trial

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/nemesis"
	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/spec"
)

// env is a started backend and resource, and what to close when the run ends.
type env struct {
	backend  harness.Backend
	resource harness.Resource
	closers  []func() error
	// clientClock is each client's clock, owned by the harness.
	clientClock []*nemesis.Clock
}

// clientNow reads client i's clock.
func (e *env) clientNow(i int) time.Time { return e.clientClock[i].Monotonic() }

// Close closes everything in reverse order of creation. Safe to call twice.
func (e *env) Close() error {
	var errs []error
	for i := len(e.closers) - 1; i >= 0; i-- {
		errs = append(errs, e.closers[i]())
	}
	e.closers = nil
	return errors.Join(errs...)
}

// build starts the spec's backend and resource from their descriptors. Lock-service logs
// go to outDir (if set) and what its clients say to log; runID names the run's own keys
// in a store that may outlive it.
func build(ctx context.Context, r *spec.Resolved, outDir, runID string, log *slog.Logger) (_ *env, err error) {
	e := &env{}
	for range r.Spec.Clients {
		e.clientClock = append(e.clientClock, nemesis.NewClock())
	}
	defer func() {
		if err != nil {
			_ = e.Close()
		}
	}()
	logFile := func(name string) (io.Writer, string, error) {
		if outDir == "" {
			return io.Discard, "", nil
		}
		path := filepath.Join(outDir, name)
		f, err := os.Create(path)
		if err != nil {
			return nil, "", err
		}
		e.closers = append(e.closers, f.Close)
		return f, path, nil
	}
	tempDir := func() (string, error) {
		dir, err := os.MkdirTemp("", "fencecheck-*")
		if err != nil {
			return "", err
		}
		e.closers = append(e.closers, func() error { return os.RemoveAll(dir) })
		return dir, nil
	}
	be, err := r.Backend.Start(ctx, registry.Env{
		Settings:    r.Settings,
		RunID:       runID,
		ClientClock: func(i int) func() time.Time { return e.clientClock[i].Monotonic },
		TempDir:     tempDir,
		LogFile:     logFile,
		Logger:      log,
	})
	if err != nil {
		return nil, spec.Input(err)
	}
	e.backend = be
	// A descriptor without a Shape is planned with none of the optional capabilities, and
	// a run that needs none (a pause) goes on so: its log says it, and what the started
	// value has that the plan did not know.
	if why := r.Backend.ShapeMissing(r.Settings); why != "" {
		if diff := registry.ShapeDiff(r.Backend.ShapeOf(r.Settings), r.Spec.Members, be, nil, nil); diff != "" {
			why += "; the started value has more: " + diff
		}
		log.Warn(why)
	}
	if !r.Backend.Shared {
		e.closers = append(e.closers, be.Close)
	}
	res, err := r.Resource.Start(ctx, registry.ResourceEnv{Settings: r.ResourceSettings, RunID: runID, Backend: be, TempDir: tempDir})
	if err != nil {
		return nil, spec.Input(err)
	}
	e.resource = res
	e.closers = append(e.closers, res.Close)
	return e, nil
}
