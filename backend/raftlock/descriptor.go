package raftlock

import (
	"context"
	"fmt"
	"time"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/nemesis"
	"github.com/fencecheck/fencecheck/harness/proc"
	"github.com/fencecheck/fencecheck/harness/registry"
)

// Descriptor returns the registry entry of the raft backend.
func Descriptor() registry.Backend {
	return registry.Backend{
		Name:    Name,
		Meaning: "a hashicorp/raft lock service (--members 3 or 5); token = log index of the committed acquire",
		Token:   "the Raft log index of the committed acquire entry",
		Facts: registry.Facts{
			Members:     3,
			MultiMember: true,
		},
		Lifecycle: registry.Lifecycle{
			Check: func(s registry.Settings) error {
				if s.Members < 1 || s.Members > 7 {
					return fmt.Errorf("raft: --members must be between 1 and 7, got %d", s.Members)
				}
				if s.TTL < MinTTL || s.TTL > MaxTTL {
					return fmt.Errorf("raft: --ttl must be between %v and %v, got %v", MinTTL, MaxTTL, s.TTL)
				}
				return nil
			},
			Shape: func(registry.Settings) registry.Shape {
				return registry.Shape{Backend: (*started)(nil), Locker: (*locker)(nil), Lease: (*Lease)(nil)}
			},
			Setup: func(s registry.Settings) string {
				return fmt.Sprintf("hashicorp/raft lock service, %d nodes", s.Members)
			},
			Start: start,
			Version: func(context.Context, registry.Settings) string {
				return proc.Embedded("hashicorp/raft", "github.com/hashicorp/raft")
			},
		},
		Listing: registry.Listing{
			Matrix:      true,
			Recommended: true,
		},
	}
}

// started is the service with the node clocks fencecheck owns (skew).
type started struct {
	*service
	clocks []*nemesis.Clock
}

func start(ctx context.Context, env registry.Env) (harness.Backend, error) {
	w, _, err := env.LogFile("raft.log")
	if err != nil {
		return nil, err
	}
	s := &started{}
	for range env.Members {
		s.clocks = append(s.clocks, nemesis.NewClock())
	}
	cfg := config{
		Nodes: env.Members, TTL: env.TTL, LogWriter: w,
		NodeClock:   func(i int) func() time.Time { return s.clocks[i].Monotonic },
		ClientClock: env.ClientClock,
	}
	if err := cfg.Validate(); err != nil {
		return nil, registry.Input(err)
	}
	if s.service, err = Start(ctx, cfg); err != nil {
		return nil, err
	}
	return s, nil
}

// ServiceClock implements registry.ServiceClocked: the leader's clock stamps the
// commands that decide expiry.
func (s *started) ServiceClock(ctx context.Context) (string, *nemesis.Clock, error) {
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	i, err := s.Leader(lctx)
	if err != nil {
		return "lock service", nil, err
	}
	return registry.NodeName(i), s.clocks[i], nil
}

// CrashCluster implements harness.ClusterCrasher: every node crashes, then every node
// restarts with its log and snapshot.
func (s *service) CrashCluster(ctx context.Context) error {
	for i := range s.Nodes() {
		if err := s.Crash(ctx, i); err != nil {
			return err
		}
	}
	for i := range s.Nodes() {
		if err := s.Restart(ctx, i, true); err != nil {
			return err
		}
	}
	return nil
}
