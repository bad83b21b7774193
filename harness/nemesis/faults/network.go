package faults

import (
	"context"
	"fmt"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/nemesis"
	"github.com/fencecheck/fencecheck/harness/registry"
)

// The network between the parts: the holder's write held in its links, the holder cut
// off from the lock service, the leader cut off from its peers.

type delay struct{}

func (delay) Name() string { return Delay }
func (delay) Meaning() string {
	return "the holder's write is sent but held in the network (all its links stall) until its lease has expired and another write was accepted"
}
func (f delay) Applies(t registry.Target) error {
	if t.Resource.Embedded != "" {
		return fmt.Errorf("fault %q holds a write in the network, and %s is embedded: there is no network between the client and %s (use pause, or a resource over the network)", f.Name(), t.Resource.Name, t.Resource.Embedded)
	}
	return nil
}
func (f delay) Strike(t registry.Target, _ []registry.ServiceFault) nemesis.ClientFault {
	s := strike(f.Name(), t)
	// Held on its way: only a write can be delayed, so not at any other pause point.
	s.Point, s.StopWorker, s.AnyPoint = harness.PauseInWrite, false, false
	return s
}

type partition struct{}

func (partition) Name() string { return Partition }
func (partition) Meaning() string {
	return "the holder is cut off from the lock service (its connections close) while it can still reach the resource, and stalls in its critical section"
}
func (partition) Applies(registry.Target) error { return nil }
func (f partition) Strike(t registry.Target, _ []registry.ServiceFault) nemesis.ClientFault {
	s := strike(f.Name(), t)
	s.Point, s.Partition = harness.PauseAfterRead, true
	// A random partition lets the client go on: it should notice on its own.
	s.StopWorker = !t.Random
	return s
}

// silentPartition is partition without the connections closing: the network goes quiet
// (a switch or a firewall dropping packets) rather than refusing, so the server keeps
// the session, and whatever it holds, until an application-level timeout ends it.
type silentPartition struct{}

func (silentPartition) Name() string { return SilentPartition }
func (silentPartition) Meaning() string {
	return "the holder's links to the lock service go silent (bytes held both ways, no FIN or RST: the connections stay open, so only a session or idle timeout notices) while it can still reach the resource, and it stalls in its critical section"
}
func (silentPartition) Applies(registry.Target) error { return nil }
func (f silentPartition) Strike(t registry.Target, _ []registry.ServiceFault) nemesis.ClientFault {
	s := strike(f.Name(), t)
	s.Point, s.Partition, s.Silent = harness.PauseAfterRead, true, true
	s.StopWorker = !t.Random
	return s
}

type leaderIsolation struct{}

func (leaderIsolation) Name() string { return LeaderIsolation }
func (leaderIsolation) Meaning() string {
	return "the lock service's leader is cut off from the other nodes, both ways, while the holder is paused (a harness.Cluster of 3 or more nodes)"
}
func (f leaderIsolation) Applies(t registry.Target) error { return needCluster(f.Name(), t) }
func (f leaderIsolation) Action(_ registry.Target, b harness.Backend) nemesis.Action {
	cluster, _ := b.(harness.Cluster)
	return nemesis.Action{
		Kind: f.Name(),
		Start: func(ctx context.Context, _ *nemesis.Nemesis, _ int) (string, string, error) {
			if cluster == nil {
				return "lock service", "", registry.Refuse("harness.Cluster", "backend %s is not a cluster whose leader fencecheck can cut off", b.Name())
			}
			i, err := leader(ctx, b)
			if err != nil {
				return "lock service", "", err
			}
			return node(i), fmt.Sprintf("leader node %d cut off from every other node, both ways", i), cluster.Isolate(ctx, i)
		},
		Heal: func(ctx context.Context) error { return cluster.Heal(ctx) },
	}
}
