// Package faults holds the faults fencecheck ships, one type each, by family: strikes on
// the lock holder (client.go), the network between the parts (network.go), the service's
// processes (process.go) and its clocks (clock.go). Each fault says from the target's
// capabilities — the interfaces of the started backend, and its descriptor's facts —
// whether it applies, and when it does not, which interface or setting would make it
// apply; none knows a backend by name. A fault turns itself into a nemesis strike
// (registry.ClientFault) or action (registry.ServiceFault), and its details in the
// history say what was done to which process, never what a backend would have lost.
package faults

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/nemesis"
	"github.com/fencecheck/fencecheck/harness/registry"
)

// The faults' names, as users name them and the history records them (each fault's
// Name). Code that means a fault refers to it by one of these, never by its spelling.
const (
	Pause           = "pause"
	PauseBeforeRead = "pause-before-read"
	Stall           = "stall"
	Delay           = "delay"
	Partition       = "partition"
	SilentPartition = "silent-partition"
	LeaderIsolation = "leader-isolation"
	NodePause       = "node-pause"
	Crash           = "crash"
	ClusterCrash    = "cluster-crash"
	Skew            = "skew"
	ClockJump       = "clock-jump"
	ClientCrash     = "client-crash"
)

// All returns the faults in the order `list` prints them and evaluate's rows run.
func All() []registry.Fault {
	return []registry.Fault{
		pause{}, pauseBeforeRead{}, stall{}, delay{}, partition{}, silentPartition{},
		leaderIsolation{}, nodePause{}, crash{}, clusterCrash{}, skew{}, clockJump{},
		clientCrash{},
	}
}

// strike is the common shape of a strike on the holder: armed after a TTL and three
// grants, held past
// the lease's expiry until another client's write is accepted. In a random schedule the
// schedule decides when, whom and how long, and the strike takes the first pause point
// the client reaches.
func strike(kind string, t registry.Target) nemesis.ClientFault {
	if t.Random {
		return nemesis.ClientFault{Kind: kind, AnyPoint: true, Targeted: true}
	}
	s := nemesis.ClientFault{
		Kind:     kind,
		ArmAfter: max(t.TTL, 200*time.Millisecond),
		// Counted as well as timed: on a loaded machine a TTL may pass with one grant.
		ArmGrants: 3,
		// Twice the TTL: the lease has surely expired on the server before the client
		// may go on, whatever the load.
		MinHold: 2 * t.TTL,
		MaxHold: max(20*t.TTL, 10*time.Second),
		// The struck client's late request lands right after the write that ended the
		// fault, before anyone else's: the same interleaving on every run.
		Exclusive: true,
	}
	if t.Early {
		// The takeover ends it, not a timer: another client's accepted write is the
		// proof the lease moved on, so it needs no minimum hold beyond a token one.
		s.ArmAfter, s.MinHold = 0, max(t.TTL/20, time.Millisecond)
	}
	return s
}

// ownService refuses a service fault on servers fencecheck did not start.
func ownService(name string, t registry.Target) error {
	if t.Caps.External == "" {
		return nil
	}
	return registry.Refuse("harness.External", "fault %q acts on the lock service, which fencecheck must have started itself; backend %s runs against %s, so it takes client-side faults only (%s)",
		name, t.Backend, t.Caps.External, strings.Join(t.ClientFaults, ", "))
}

// needCluster refuses a fault on a leader when the service has none to give up.
func needCluster(name string, t registry.Target) error {
	if err := ownService(name, t); err != nil {
		return err
	}
	switch {
	case t.Caps.Cluster && t.Caps.Nodes >= 3:
		return nil
	case t.Caps.Cluster:
		return fmt.Errorf("fault %q needs a lock-service cluster of at least 3 nodes (--members 3): a leader stopped or cut off among %d grants nobody the lock, so the run could never show a stale write", name, t.Caps.Nodes)
	case t.Caps.ProcessNodes && !t.Caps.SingleProcess():
		// A server that runs as a cluster too: its started value is a harness.Cluster
		// with more members.
		return fmt.Errorf("fault %q needs a cluster of at least 3 %s servers (--members 3): a single server stopped or cut off grants nobody the lock, so the run could never show a stale write", name, t.Backend)
	}
	return registry.Refuse("harness.Cluster", "fault %q needs a lock-service cluster of at least 3 nodes (--members 3) whose leader fencecheck can cut off or stall; backend %s is not one", name, t.Backend)
}

// leader returns the index of the service's leader (0 for a single server).
func leader(ctx context.Context, b harness.Backend) (int, error) {
	cluster, ok := b.(harness.Cluster)
	if !ok {
		return 0, nil
	}
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return cluster.Leader(lctx)
}

func node(i int) string { return registry.NodeName(i) }

// serverRole names node i of a process-backed service in a fault's detail.
func serverRole(pn harness.ProcessNodes, i int) string {
	if pn.Nodes() == 1 {
		return "the only server"
	}
	return fmt.Sprintf("leader node %d", i)
}

// pidOf returns " (pid N)" for node i of a process-backed service, else "".
func pidOf(b harness.Backend, i int) string {
	if pn, ok := b.(harness.ProcessNodes); ok {
		return fmt.Sprintf(" (pid %d)", pn.NodePID(i))
	}
	return ""
}
