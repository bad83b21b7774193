package zookeeper

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/nemesis/faults"
	"github.com/fencecheck/fencecheck/harness/proc"
	"github.com/fencecheck/fencecheck/harness/registry"
)

// Names of the backends as users type them: one per token source.
const (
	Name         = "zookeeper"
	NameSequence = "zookeeper-sequence"
)

// OptionServers points the backends at an existing ensemble instead of servers
// fencecheck starts.
const OptionServers = "zookeeper-servers"

// SkewRate is how many times fast the started servers' clocks run in a run with the
// skew fault. Not the registry's 20: a go-zookeeper client pings every third of its
// session timeout, so above 3x the server expires every session, busy or not, and
// nobody holds the lock long enough to show a stale write.
const SkewRate = 2.0

const externalWords = "an existing ensemble (--" + OptionServers + ")"

// Descriptors returns the registry entries of the zookeeper backends: the czxid token
// and the sequence-number token.
func Descriptors() []registry.Backend {
	variant := func(name string, token TokenSource, meaning, tokenWords string) registry.Backend {
		return registry.Backend{
			Name:    name,
			Meaning: meaning,
			Token:   tokenWords,
			Options: []registry.Option{{
				Name: OptionServers, External: true,
				Usage: "comma-separated host:port of an existing ZooKeeper ensemble for the zookeeper backends (client-side faults only)",
			}},
			Facts: registry.Facts{
				Configuration:    "the client's session timeout as tested (the lock lasts as long as the session; the server clamps it to between 2 and 20 tickTime, so check the negotiated timeout, not the one asked for)",
				Members:          1,
				NodeFaultMembers: 3,
				MultiMember:      true,
				// A server restarted with its data still knows every session, so the lock
				// znodes stay until their sessions expire.
				DurableLeases: true,
			},
			Lifecycle: registry.Lifecycle{
				Version: func(_ context.Context, s registry.Settings) string {
					if len(s.List(OptionServers)) > 0 {
						return ""
					}
					if v := proc.FileVersion(proc.Need{File: defaultJar, Package: DebianPackage}); v != "" {
						return "ZooKeeper " + v
					}
					return ""
				},
				Check: check,
				Needs: needs,
				Shape: shape,
				Setup: setup,
				Start: func(ctx context.Context, env registry.Env) (harness.Backend, error) { return start(ctx, env, token) },
			},
			Listing: registry.Listing{
				// The czxid is the ensemble's zxid, which goes on across lock parents.
				Service:     Name,
				Recommended: token == TokenCzxid,
			},
		}
	}
	return []registry.Backend{
		variant(Name, TokenCzxid,
			"Debian's ZooKeeper (--members 1 or 3, or --zookeeper-servers); ephemeral sequential znode recipe, token = the lock znode's czxid",
			"the lock znode's czxid (the zxid of its create)"),
		variant(NameSequence, TokenSequence,
			"the zookeeper recipe with the znode's sequence number as token (per lock parent: restarts at 0 when the container parent is recreated)",
			"the lock znode's sequence number (per lock parent)"),
	}
}

// needs is what a run on servers fencecheck starts needs.
func needs(s registry.Settings) []proc.Need {
	if len(s.List(OptionServers)) > 0 {
		return nil
	}
	return ServerNeeds(Config{ClockRate: clockRate(s)})
}

func check(s registry.Settings) error {
	if srvs := s.List(OptionServers); len(srvs) > 0 {
		if s.Members != 1 && s.Members != len(srvs) {
			return fmt.Errorf("zookeeper: --members %d does not match the %d --%s", s.Members, len(srvs), OptionServers)
		}
	} else if s.Members != 1 && s.Members != 3 && s.Members != 5 {
		return fmt.Errorf("zookeeper: --members must be 1, 3 or 5, got %d", s.Members)
	}
	// Dir is made at start; the rest (TTL, addresses) is the user's to fix now.
	return Config{TTL: s.TTL, Dir: "-", Servers: s.List(OptionServers), Nodes: s.Members}.Validate()
}

// clockRate is the started servers' clock rate for settings: fast only in a run with
// the skew fault (libfaketime can set it only when a JVM starts).
func clockRate(s registry.Settings) float64 {
	if slices.Contains(s.Faults, faults.Skew) && len(s.List(OptionServers)) == 0 {
		return SkewRate
	}
	return 0
}

// shape: an existing ensemble's plain wrapper, an ensemble fencecheck started (a
// harness.Cluster), or one server.
func shape(s registry.Settings) registry.Shape {
	sh := registry.Shape{Backend: (*Backend)(nil), Locker: (*Locker)(nil), Lease: (*Lease)(nil)}
	switch {
	case len(s.List(OptionServers)) > 0:
		sh.Backend = external{}
	case s.Members > 1:
		sh.Backend = (*Ensemble)(nil)
	}
	return sh
}

func setup(s registry.Settings) string {
	if srvs := s.List(OptionServers); len(srvs) > 0 {
		return "existing ZooKeeper ensemble at " + strings.Join(srvs, ",")
	}
	if s.Members > 1 {
		return "Debian's ZooKeeper: 1 standalone server, a 3-server ensemble for node faults"
	}
	return "Debian's ZooKeeper, 1 standalone server"
}

// external is the backend on an ensemble fencecheck did not start: only the plain
// Backend methods, so that no node fault reaches it.
type external struct{ b *Backend }

func (e external) Name() string        { return e.b.Name() }
func (e external) Endpoints() []string { return e.b.Endpoints() }
func (e external) NewLocker(ctx context.Context, id int, addrs []string) (harness.Locker, error) {
	return e.b.NewLocker(ctx, id, addrs)
}
func (e external) Close() error { return e.b.Close() }

// External implements harness.External.
func (external) External() string { return externalWords }

func start(ctx context.Context, env registry.Env, token TokenSource) (harness.Backend, error) {
	cfg := Config{TTL: env.TTL, Token: token, Nodes: env.Members, Servers: env.List(OptionServers), ClockRate: clockRate(env.Settings)}
	if !cfg.External() {
		dir, err := env.TempDir()
		if err != nil {
			return nil, err
		}
		w, _, err := env.LogFile("zookeeper.log")
		if err != nil {
			return nil, err
		}
		cfg.Dir, cfg.LogWriter = dir, w
	}
	if err := cfg.Validate(); err != nil {
		return nil, registry.Input(err)
	}
	b, err := Start(ctx, cfg)
	if err != nil {
		if cfg.External() {
			return nil, registry.Input(err) // a bad or unreachable address is the user's input
		}
		return nil, err
	}
	if cfg.External() {
		return external{b}, nil
	}
	if ens, ok := b.Ensemble(); ok {
		return ens, nil
	}
	return b, nil
}
