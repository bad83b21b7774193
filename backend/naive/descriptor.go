package naive

import (
	"context"
	"time"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/nemesis"
	"github.com/fencecheck/fencecheck/harness/proc"
	"github.com/fencecheck/fencecheck/harness/registry"
)

// Descriptors returns the registry entries of the naive backends, one per token source.
func Descriptors() []registry.Backend {
	variant := func(name string, v Variant, meaning, token string, matrix, resets bool) registry.Backend {
		return registry.Backend{
			Name:    name,
			Meaning: meaning,
			Token:   token,
			Facts: registry.Facts{
				TokensResetOnCrash: resets,
				TokenFromClock:     v == WallClock,
			},
			Lifecycle: registry.Lifecycle{
				Version: func(context.Context, registry.Settings) string {
					return proc.Embedded("fencecheck's naive lock server", "github.com/fencecheck/fencecheck")
				},
				Shape: func(registry.Settings) registry.Shape {
					return registry.Shape{Backend: (*started)(nil), Locker: (*Locker)(nil), Lease: (*lease)(nil)}
				},
				Setup: func(registry.Settings) string { return "naive TTL lock server (" + name + ")" },
				Start: func(ctx context.Context, env registry.Env) (harness.Backend, error) { return start(env, v) },
			},
			Listing: registry.Listing{
				Matrix: matrix,
				// The persisted counter is the one token of the four that neither resets,
				// steps back with a clock nor wraps.
				Service:     "naive",
				Recommended: v == Persisted,
			},
		}
	}
	return []registry.Backend{
		variant("naive", Memory, "a TTL lock server with an in-memory token counter (lost on restart)", "the lock server's in-memory counter", true, true),
		variant("naive-persisted", Persisted, "the naive lock server with a token counter persisted to a file (fsync before each grant)", "the lock server's counter persisted to disk", false, false),
		variant("naive-wallclock", WallClock, "the naive lock server whose token is its wall clock in ns (not linearizable)", "the lock server's wall clock", false, false),
		variant("naive-32bit", Narrow, "the naive lock server with a 32-bit token counter started near its limit (wraps)", "the lock server's 32-bit counter", false, false),
	}
}

// started is a naive backend with the server clock fencecheck owns (skew, clock-jump).
type started struct {
	*Backend
	clock *nemesis.Clock
}

func start(env registry.Env, v Variant) (*started, error) {
	clock := nemesis.NewClock()
	cfg := Config{
		TTL: env.TTL, Variant: v, Now: clock.Now, Mono: clock.Monotonic,
		ClientNow: func(i int) time.Time { return env.ClientClock(i)() },
	}
	if v == Persisted {
		dir, err := env.TempDir()
		if err != nil {
			return nil, err
		}
		cfg.Dir = dir
	}
	b, err := New(cfg)
	if err != nil {
		return nil, registry.Input(err)
	}
	return &started{Backend: b, clock: clock}, nil
}

// ServiceClock implements registry.ServiceClocked: the server's clock decides expiry.
func (s *started) ServiceClock(context.Context) (string, *nemesis.Clock, error) {
	return "lock server", s.clock, nil
}

// WallClock implements registry.WallClocked.
func (s *started) WallClock() *nemesis.Clock { return s.clock }

// WallClockTokens implements registry.WallClocked.
func (s *started) WallClockTokens() bool { return s.cfg.Variant == WallClock }
