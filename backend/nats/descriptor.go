package nats

import (
	"context"
	"time"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/proc"
	"github.com/fencecheck/fencecheck/harness/registry"
)

// Name is the backend's name as users type it.
const Name = "nats"

// OptionURL points the backend at an existing nats-server.
const OptionURL = "nats-url"

// Descriptor returns the registry entry of the nats backend.
func Descriptor() registry.Backend {
	return registry.Backend{
		Name:    Name,
		Meaning: "one nats-server with JetStream (or --nats-url): KV Create/Update(revision) with the bucket's TTL; token = the key's revision at grant",
		Token:   "the key's revision at grant (the stream sequence)",
		Options: []registry.Option{{
			Name: OptionURL, External: true, Secret: true,
			Usage: "nats://host:port of an existing nats-server with JetStream to use instead of starting one (client-side faults only)",
		}},
		Facts: registry.Facts{
			Configuration: "the KV bucket's TTL (its MaxAge: the lock's TTL) as tested, on file storage (JetStream FileStorage, as in these runs)",
		},
		Lifecycle: registry.Lifecycle{
			Needs: func(s registry.Settings) []proc.Need {
				if s.Option(OptionURL) != "" {
					return nil
				}
				return []proc.Need{ServerNeed}
			},
			Check: func(s registry.Settings) error {
				// Dir: Start makes a temp dir; only the settings are checked here.
				return Config{TTL: s.TTL, URL: s.Option(OptionURL), Dir: "-"}.Validate()
			},
			Shape: func(s registry.Settings) registry.Shape {
				sh := registry.Shape{Backend: (*Backend)(nil), Locker: (*Locker)(nil), Lease: (*Lease)(nil)}
				if s.Option(OptionURL) != "" {
					sh.Backend = (*external)(nil)
				}
				return sh
			},
			Version: func(ctx context.Context, s registry.Settings) string {
				if s.Option(OptionURL) != "" {
					return ""
				}
				return proc.Version(ctx, ServerNeed, "--version")
			},
			Setup: func(s registry.Settings) string {
				if u := s.Option(OptionURL); u != "" {
					return "existing nats-server at " + u
				}
				return "one nats-server (Debian) with JetStream file storage, KV bucket TTL = lock TTL"
			},
			Start: start,
		},
		Listing: registry.Listing{
			Recommended: true,
		},
	}
}

const externalWords = "an existing nats-server (--" + OptionURL + ")"

func start(ctx context.Context, env registry.Env) (harness.Backend, error) {
	cfg := Config{TTL: env.TTL}
	if u := env.Option(OptionURL); u != "" {
		cfg.URL = u
		if env.RunID != "" {
			cfg.Key = "lock-" + env.RunID // this run's key only
		}
		b, err := Start(ctx, cfg)
		if err != nil {
			return nil, registry.Input(err) // a server that does not answer is the user's input
		}
		return &external{b: b}, nil
	}
	dir, err := env.TempDir()
	if err != nil {
		return nil, err
	}
	if cfg.LogWriter, _, err = env.LogFile("nats.log"); err != nil {
		return nil, err
	}
	cfg.Dir = dir
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return Start(sctx, cfg)
}

// external is the backend on a server fencecheck did not start: no node faults (neither
// harness.ProcessNodes nor a Crasher).
type external struct{ b *Backend }

var _ harness.External = (*external)(nil)

func (e *external) Name() string        { return e.b.Name() }
func (e *external) Endpoints() []string { return e.b.Endpoints() }
func (e *external) Close() error        { return e.b.Close() }
func (e *external) NewLocker(ctx context.Context, id int, addrs []string) (harness.Locker, error) {
	return e.b.NewLocker(ctx, id, addrs)
}

// External implements harness.External.
func (e *external) External() string { return externalWords }

// LeaseTTL implements registry.LeaseTimed: node-pause stops the server(s) for twice it.
func (b *Backend) LeaseTTL() time.Duration { return b.cfg.TTL }
