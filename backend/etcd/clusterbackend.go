package etcd

import (
	"context"
	"errors"
	"fmt"

	"github.com/fencecheck/fencecheck/harness"
)

// ClusterBackend is the "etcd" backend together with the embedded cluster it started:
// it implements harness.Backend, harness.Cluster and harness.Crasher, and Close stops
// the cluster. Use New instead for servers the harness does not own.
type ClusterBackend struct {
	*Backend
	*Cluster
}

var (
	_ harness.Backend = (*ClusterBackend)(nil)
	_ harness.Cluster = (*ClusterBackend)(nil)
	_ harness.Crasher = (*ClusterBackend)(nil)
)

// StartBackend starts an embedded cluster (cc) and returns the backend for it.
// cfg.Endpoints must be empty (they are the cluster's); cfg.TTL must also be at least
// the cluster's MinTTL, or the members would silently grant a longer lease.
func StartBackend(ctx context.Context, cc ClusterConfig, cfg Config) (*ClusterBackend, error) {
	if len(cfg.Endpoints) != 0 {
		return nil, errors.New("etcd: StartBackend sets the endpoints itself; leave Config.Endpoints empty")
	}
	if err := cc.Validate(); err != nil {
		return nil, err
	}
	check := cfg
	check.Endpoints = []string{"127.0.0.1:1"} // placeholder, only to validate the rest
	if err := check.Validate(); err != nil {
		return nil, err
	}
	if min := cc.MinTTL(); cfg.TTL < min {
		return nil, fmt.Errorf("etcd: TTL %v is below the cluster's minimum %v (ceil(1.5 × %dms election timeout) in whole seconds); the members would raise it", cfg.TTL, min, cc.withDefaults().ElectionMs)
	}
	cl, err := StartCluster(ctx, cc)
	if err != nil {
		return nil, err
	}
	cfg.Endpoints = cl.Endpoints()
	if cfg.KeepAlive == 0 {
		cfg.KeepAlive = EmbeddedKeepAlive
	}
	b, err := New(ctx, cfg)
	if err != nil {
		_ = cl.Close()
		return nil, err
	}
	return &ClusterBackend{Backend: b, Cluster: cl}, nil
}

// Endpoints implements harness.Backend: the members' client addresses.
func (cb *ClusterBackend) Endpoints() []string { return cb.Backend.Endpoints() }

// Close implements harness.Backend: it stops the cluster. Safe to call twice.
func (cb *ClusterBackend) Close() error { return cb.Cluster.Close() }
