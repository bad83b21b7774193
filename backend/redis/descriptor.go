package redis

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/proc"
	"github.com/fencecheck/fencecheck/harness/registry"
)

// Backend names as users type them.
const (
	Name         = "redis"
	NameVolatile = "redis-volatile"
	NameNoToken  = "redis-notoken"
)

// OptionAddrs points the redis backends (one address) and redlock (three or more) at
// existing servers instead of ones fencecheck starts.
const OptionAddrs = "redis-addrs"

// AddrsOption is the --redis-addrs option, shared by the redis and redlock descriptors.
func AddrsOption() registry.Option {
	return registry.Option{
		Name: OptionAddrs, External: true,
		Usage: "host:port of existing redis-servers to use instead of starting them (redis backends: one; redlock: 3 or more independent ones); client-side faults only",
	}
}

// Descriptors returns the registry entries of the redis backends: the same lock with the
// AOF and an INCR token, without persistence, and without a token.
func Descriptors() []registry.Backend {
	variant := func(name, meaning, token, setup string, persist bool, kind TokenKind) registry.Backend {
		return registry.Backend{
			Name:    name,
			Meaning: meaning,
			Token:   token,
			Options: []registry.Option{AddrsOption()},
			Facts: registry.Facts{
				Configuration: configuration(persist),
				// Without persistence the counter restarts at 1 after a crash.
				TokensResetOnCrash: !persist && kind == TokenIncr,
			},
			Lifecycle: registry.Lifecycle{
				Version: func(ctx context.Context, s registry.Settings) string {
					if len(s.List(OptionAddrs)) > 0 {
						return ""
					}
					v, _, _ := strings.Cut(proc.Version(ctx, ServerNeed, "--version"), " sha=")
					return v
				},
				Needs: Needs,
				Check: func(s registry.Settings) error {
					// Dir: Start makes a temp dir; only the settings are checked here.
					return Config{TTL: s.TTL, Token: kind, Addrs: s.List(OptionAddrs), Dir: "-"}.Validate()
				},
				Shape: func(s registry.Settings) registry.Shape {
					sh := registry.Shape{Backend: (*Backend)(nil), Locker: (*Locker)(nil), Lease: (*Lease)(nil)}
					existing := len(s.List(OptionAddrs)) > 0
					switch {
					case existing && kind == TokenNone:
						sh.Backend = externalTokenless{}
					case existing:
						sh.Backend = (*external)(nil)
					case kind == TokenNone:
						sh.Backend = tokenless{}
					}
					return sh
				},
				Setup: func(s registry.Settings) string {
					if addrs := s.List(OptionAddrs); len(addrs) > 0 {
						return "existing redis-server at " + strings.Join(addrs, ",")
					}
					return setup
				},
				Start: func(ctx context.Context, env registry.Env) (harness.Backend, error) {
					return start(ctx, env, Config{TTL: env.TTL, Token: kind, Persist: persist})
				},
			},
			Listing: registry.Listing{
				Service: Name,
				// The AOF keeps the counter across a crash; the others lose it or have none.
				Recommended: persist && kind == TokenIncr,
			},
		}
	}
	return []registry.Backend{
		variant(Name, "one redis-server with the AOF (or --redis-addrs); SET NX PX + Lua renew/release; token = an INCR counter taken in the same script",
			"the INCR counter taken with the grant", "one redis-server (Debian), appendonly yes", true, TokenIncr),
		variant(NameVolatile, "the redis backend without persistence (--save ''): a crash forgets the lock and the counter",
			"the INCR counter taken with the grant (in memory only)", "one redis-server (Debian), no persistence (--save '')", false, TokenIncr),
		variant(NameNoToken, "the redis backend with no fencing token at all (the SET NX PX random value)",
			"no token (the lock's random value)", "one redis-server (Debian), appendonly yes, no token", true, TokenNone),
	}
}

const externalWords = "an existing redis-server (--" + OptionAddrs + ")"

// configuration is what a team must set on its Redis for a variant's result to hold.
func configuration(persist bool) string {
	if !persist {
		return ""
	}
	return "appendonly yes with appendfsync always on the Redis server (without it a crash loses the lock key and the INCR counter, and tokens start again below the newest a resource accepted), and the lock's TTL (PX) as tested"
}

func start(ctx context.Context, env registry.Env, cfg Config) (harness.Backend, error) {
	kind := cfg.Token
	if addrs := env.List(OptionAddrs); len(addrs) > 0 {
		cfg.Addrs = addrs
		if env.RunID != "" {
			cfg.Key = "fencecheck:" + env.RunID + ":lock" // this run's keys only
		}
		b, err := Start(ctx, cfg)
		if err != nil {
			return nil, registry.Input(err) // a server that does not answer is the user's input
		}
		if kind == TokenNone {
			return externalTokenless{&external{b: b}}, nil
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
	b, err := Start(sctx, cfg)
	if err != nil || kind != TokenNone {
		return b, err
	}
	return tokenless{b}, nil
}

// tokenless is a TokenNone backend: harness.Tokenless, with every capability of Backend.
type tokenless struct{ *Backend }

// NoFencingToken implements harness.Tokenless.
func (tokenless) NoFencingToken() string { return NoTokenReason }

// externalTokenless is a TokenNone backend on an existing server.
type externalTokenless struct{ *external }

// NoFencingToken implements harness.Tokenless.
func (externalTokenless) NoFencingToken() string { return NoTokenReason }

// external is the redis backend on a server fencecheck did not start: no node faults
// (it is neither harness.ProcessNodes nor a Crasher), and Close deletes the run's keys.
type external struct{ b *Backend }

var (
	_ harness.External  = (*external)(nil)
	_ harness.Tokenless = tokenless{}
	_ harness.Tokenless = externalTokenless{}
)

// Name implements harness.Backend.
func (e *external) Name() string { return e.b.Name() }

// Endpoints implements harness.Backend.
func (e *external) Endpoints() []string { return e.b.Endpoints() }

// NewLocker implements harness.Backend.
func (e *external) NewLocker(ctx context.Context, id int, addrs []string) (harness.Locker, error) {
	return e.b.NewLocker(ctx, id, addrs)
}

// External implements harness.External.
func (e *external) External() string { return externalWords }

// Close implements harness.Backend: deletes the run's lock key and counter. Safe to call
// twice.
func (e *external) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cli := NewClient(e.b.addr, e.b.cfg.TTL)
	_, err := cli.Do(ctx, "DEL", e.b.cfg.Key, e.b.cfg.Key+":token")
	return errors.Join(err, cli.Close(), e.b.Close())
}

// LeaseTTL implements registry.LeaseTimed: node-pause stops the server(s) for twice it.
func (b *Backend) LeaseTTL() time.Duration { return b.cfg.TTL }

// Needs is what the redis backends and redlock need to start their servers: redis-server,
// unless --redis-addrs names existing ones.
func Needs(s registry.Settings) []proc.Need {
	if len(s.List(OptionAddrs)) > 0 {
		return nil
	}
	return []proc.Need{ServerNeed}
}
