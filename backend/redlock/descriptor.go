package redlock

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/backend/redis"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/proc"
	"github.com/fencecheck/fencecheck/harness/registry"
)

// Name is the backend's name as users type it.
const Name = "redlock"

// Descriptor returns the registry entry of the redlock backend.
func Descriptor() registry.Backend {
	return registry.Backend{
		Name:    Name,
		Meaning: "go-redsync Redlock over --members 3 (default) or 5 independent redis-servers without persistence (or --redis-addrs); no fencing token",
		Token:   "no token (the lock's random value)",
		Options: []registry.Option{redis.AddrsOption()},
		Facts: registry.Facts{
			Members:       3,
			MultiMember:   true,
			Configuration: "the lock's TTL as tested on every Redis node, and appendonly yes with appendfsync always where a node may restart (these runs ran without it and crashed no node; a node that restarts without its lock keys grants the lock again)",
		},
		Lifecycle: registry.Lifecycle{
			Needs: redis.Needs,
			Version: func(ctx context.Context, s registry.Settings) string {
				if len(s.List(redis.OptionAddrs)) > 0 {
					return ""
				}
				v, _, _ := strings.Cut(proc.Version(ctx, redis.ServerNeed, "--version"), " sha=")
				return v
			},
			Check: func(s registry.Settings) error {
				addrs := s.List(redis.OptionAddrs)
				switch {
				case len(addrs) == 0 && s.Members != 3 && s.Members != 5:
					return fmt.Errorf("redlock: --members must be 3 or 5 independent redis-servers, got %d", s.Members)
				case len(addrs) > 0 && s.Members != len(addrs):
					return fmt.Errorf("redlock: --members %d does not match the %d --%s (give --members %d)", s.Members, len(addrs), redis.OptionAddrs, len(addrs))
				}
				// Dir: Start makes a temp dir; only the settings are checked here.
				return Config{TTL: s.TTL, Servers: s.Members, Addrs: addrs, Dir: "-"}.Validate()
			},
			Shape: func(s registry.Settings) registry.Shape {
				sh := registry.Shape{Backend: (*Backend)(nil), Locker: (*Locker)(nil), Lease: (*Lease)(nil)}
				if len(s.List(redis.OptionAddrs)) > 0 {
					sh.Backend = (*external)(nil)
				}
				return sh
			},
			Setup: func(s registry.Settings) string {
				if addrs := s.List(redis.OptionAddrs); len(addrs) > 0 {
					return "redsync over existing redis-servers at " + strings.Join(addrs, ",")
				}
				return fmt.Sprintf("redsync over %d independent redis-servers (Debian), no persistence", s.Members)
			},
			Start: start,
		},
		Listing: registry.Listing{
			Recommended: true,
		},
	}
}

const externalWords = "existing redis-servers (--" + redis.OptionAddrs + ")"

func start(ctx context.Context, env registry.Env) (harness.Backend, error) {
	cfg := Config{TTL: env.TTL, Servers: env.Members}
	if addrs := env.List(redis.OptionAddrs); len(addrs) > 0 {
		cfg.Addrs = addrs
		if env.RunID != "" {
			cfg.Key = "fencecheck:" + env.RunID + ":redlock" // this run's key only
		}
		b, err := Start(ctx, cfg)
		if err != nil {
			return nil, registry.Input(err) // servers that do not answer are the user's input
		}
		return &external{b: b}, nil
	}
	dir, err := env.TempDir()
	if err != nil {
		return nil, err
	}
	if cfg.LogWriter, _, err = env.LogFile("redis.log"); err != nil {
		return nil, err
	}
	cfg.Dir = dir
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return Start(sctx, cfg)
}

// external is the backend on servers fencecheck did not start: no node faults (neither
// harness.ProcessNodes nor a Crasher). Redlock's keys expire by themselves.
type external struct{ b *Backend }

var (
	_ harness.External  = (*external)(nil)
	_ harness.Tokenless = (*external)(nil)
)

func (e *external) Name() string        { return e.b.Name() }
func (e *external) Endpoints() []string { return e.b.Endpoints() }
func (e *external) Close() error        { return e.b.Close() }
func (e *external) NewLocker(ctx context.Context, id int, addrs []string) (harness.Locker, error) {
	return e.b.NewLocker(ctx, id, addrs)
}

// NoFencingToken implements harness.Tokenless.
func (e *external) NoFencingToken() string { return NoTokenReason }

// External implements harness.External.
func (e *external) External() string { return externalWords }

// LeaseTTL implements registry.LeaseTimed: node-pause stops the server(s) for twice it.
func (b *Backend) LeaseTTL() time.Duration { return b.cfg.TTL }
