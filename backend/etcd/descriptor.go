package etcd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/registry"
	"go.etcd.io/etcd/api/v3/version"
)

// Name is the backend's name as users type it.
const Name = "etcd"

// OptionEndpoints points the backend at an existing cluster instead of an embedded one.
const OptionEndpoints = "etcd-endpoints"

// Descriptor returns the registry entry of the etcd backend.
func Descriptor() registry.Backend {
	return registry.Backend{
		Name:    Name,
		Meaning: "embedded etcd (--members 1 or 3) or an existing cluster (--etcd-endpoints); concurrency.Mutex, token = lock key's CreateRevision",
		Token:   "the lock key's CreateRevision",
		Options: []registry.Option{{
			Name: OptionEndpoints, External: true,
			Usage: "comma-separated host:port of an existing etcd cluster to use instead of an embedded one (client-side faults only)",
		}},
		Facts: registry.Facts{
			TTL:              time.Second, // etcd leases are whole seconds, at least 1
			Members:          1,
			NodeFaultMembers: 3,
			MultiMember:      true,
			Native:           []string{"etcd-txn"},
			Configuration:    "a session lease TTL (concurrency.WithTTL) no shorter than the TTL tested, and a fenced resource that refuses a revision not newer than the newest it accepted; etcd keeps its leases and revisions across a restart, so no server setting is needed",
		},
		Lifecycle: registry.Lifecycle{
			Check: func(s registry.Settings) error {
				if s.Members != 1 && s.Members != 3 {
					return fmt.Errorf("etcd: --members must be 1 or 3, got %d", s.Members)
				}
				if s.TTL < time.Second || s.TTL%time.Second != 0 {
					return fmt.Errorf("etcd leases are whole seconds, at least 1s (and at least 1.5x the election timeout): --ttl %v will not do", s.TTL)
				}
				return nil
			},
			Shape: func(s registry.Settings) registry.Shape {
				if len(s.List(OptionEndpoints)) > 0 {
					return registry.Shape{Backend: external{}, Locker: (*Locker)(nil), Lease: (*Lease)(nil)}
				}
				return registry.Shape{Backend: (*ClusterBackend)(nil), Locker: (*Locker)(nil), Lease: (*Lease)(nil)}
			},
			Setup: func(s registry.Settings) string {
				if eps := s.List(OptionEndpoints); len(eps) > 0 {
					return "existing etcd cluster at " + strings.Join(eps, ",")
				}
				if s.Members > 1 {
					return "embedded etcd: 1 member, 3 members for node faults"
				}
				return "embedded etcd, 1 member"
			},
			GrantedTTL: grantedTTL,
			Version: func(_ context.Context, s registry.Settings) string {
				if len(s.List(OptionEndpoints)) > 0 {
					return ""
				}
				return "etcd " + version.Version + " (embedded)"
			},
			Start: start,
		},
		Listing: registry.Listing{
			Matrix:      true,
			Recommended: true,
		},
	}
}

// grantedTTL probes an external cluster: etcd raises a TTL below 1.5 × its election
// timeout (a server with the default 1000 ms grants 2 s for 1 s). An embedded cluster is
// configured for the TTL it is asked for.
func grantedTTL(ctx context.Context, s registry.Settings) (time.Duration, error) {
	eps := s.List(OptionEndpoints)
	if len(eps) == 0 {
		return s.TTL, nil
	}
	b, err := New(ctx, Config{Endpoints: eps, TTL: s.TTL})
	var te *TTLError
	switch {
	case err == nil:
		return s.TTL, b.Close() // the probe's lease is revoked already; nothing else was written
	case errors.As(err, &te):
		return te.Granted, nil
	default:
		return 0, registry.Input(err) // an endpoint that does not answer is the user's input
	}
}

const externalWords = "an external cluster (--" + OptionEndpoints + ")"

// external is the backend on a cluster fencecheck did not start.
type external struct{ *Backend }

// External implements harness.External.
func (external) External() string { return externalWords }

func start(ctx context.Context, env registry.Env) (harness.Backend, error) {
	if eps := env.List(OptionEndpoints); len(eps) > 0 {
		b, err := New(ctx, Config{Endpoints: eps, TTL: env.TTL, Prefix: runPrefix(env.RunID)})
		if err != nil {
			// A bad or unreachable endpoint is the user's input.
			return nil, registry.Input(err)
		}
		return external{b}, nil
	}
	dir, err := env.TempDir()
	if err != nil {
		return nil, err
	}
	_, logPath, err := env.LogFile("etcd.log")
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return StartBackend(cctx, ClusterConfig{Members: env.Members, Dir: dir, LogPath: logPath}, Config{TTL: env.TTL, Prefix: runPrefix(env.RunID)})
}

// runPrefix is the run's key prefix, or none for a caller that names no run.
func runPrefix(runID string) string {
	if runID == "" {
		return ""
	}
	return RunPrefix(runID)
}
