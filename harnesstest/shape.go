package harnesstest

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/registry"
)

// shapeAgrees starts the backend once, takes a lease through a proxied locker, and
// fails with one line naming every capability in which the descriptor's Shape and the
// started values differ: a plan made from the Shape would offer faults that cannot run,
// or miss some that can. missing, if set, says that the descriptor has no Shape
// (registry.Backend.ShapeMissing): the failure says it too.
func shapeAgrees(t *testing.T, cfg Config, shape registry.Shape, members int, missing string) {
	f := start(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*cfg.ceiling())
	defer cancel()
	if err := f.checkShape(ctx, shape, members); err != nil {
		if missing != "" {
			err = fmt.Errorf("%w: %s", err, missing)
		}
		t.Error(err)
	}
}

func (f *fixture) checkShape(ctx context.Context, shape registry.Shape, members int) error {
	l, _ := f.mustLocker(ctx, 0)
	le, err := l.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("Acquire: %w", err)
	}
	defer func() { _ = le.Release(ctx) }()
	if d := registry.ShapeDiff(shape, members, f.backend, l, le); d != "" {
		return fmt.Errorf("the descriptor's Shape disagrees with the started values: %s (Backend.Shape must return values of the types Start, NewLocker and Acquire return)", d)
	}
	return nil
}

// Start starts d with settings s as a run would (a temporary directory, logs
// discarded, the clients' clocks time.Now), fails the test when the started value's
// capabilities differ from d's Shape (one line naming the fields), and closes the
// backend when the test ends.
func Start(t testing.TB, d registry.Backend, s registry.Settings) harness.Backend {
	t.Helper()
	if s.Clients == 0 {
		s.Clients = 2
	}
	s = s.WithOptions(d.Options)
	if err := d.CheckSettings(s); err != nil {
		t.Fatalf("settings: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*Ceiling)
	defer cancel()
	b, err := d.Start(ctx, registry.Env{
		Settings:    s,
		RunID:       "run-harnesstest",
		ClientClock: func(int) func() time.Time { return time.Now },
		TempDir:     func() (string, error) { return t.TempDir(), nil },
		LogFile:     func(string) (io.Writer, string, error) { return io.Discard, "", nil },
	})
	if err != nil {
		t.Fatalf("start %s: %v", d.Name, err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("Backend.Close: %v", err)
		}
	})
	if diff := registry.ShapeDiff(d.ShapeOf(s), s.Members, b, nil, nil); diff != "" {
		t.Fatalf("the descriptor's Shape disagrees with the started backend: %s (Backend.Shape must return values of the types Start returns)", diff)
	}
	return b
}
