package faults

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/harness/nemesis"
	"github.com/fencecheck/fencecheck/harness/registry"
)

// The service's nodes and processes: a node stops (its links stall, or SIGSTOP), a node
// crashes (SIGKILL for a process) and restarts with its data, the whole cluster crashes.

type nodePause struct{}

func (nodePause) Name() string { return NodePause }
func (nodePause) Meaning() string {
	return "the lock service stops: a cluster's leader (a harness.Cluster of 3 or more nodes: all its links, to peers and clients, stall; a server process, harness.ProcessNodes: SIGSTOP until the pause heals), or a single server process that forgets idle sessions on its own (harness.ProcessNodes: SIGSTOP, and SIGCONT after 2x TTL while the holder is still paused)"
}
func (f nodePause) Applies(t registry.Target) error {
	if err := ownService(f.Name(), t); err != nil {
		return err
	}
	switch {
	case t.Caps.SingleProcess():
		return nil
	case !t.Caps.Cluster && !t.Caps.ProcessNodes:
		return registry.Refuse("harness.ProcessNodes or harness.Cluster", "fault %q stops the lock service: it needs server processes fencecheck started (stopped with SIGSTOP) or a cluster of at least 3 nodes (--members 3, its leader stalls); backend %s has neither", f.Name(), t.Backend)
	}
	return needCluster(f.Name(), t)
}
func (f nodePause) Action(t registry.Target, b harness.Backend) nemesis.Action {
	if pn, ok := singleProcess(t, b); ok {
		return processPause(f.Name(), b, pn)
	}
	if pn, ok := b.(harness.ProcessNodes); ok {
		return signalPause(f.Name(), b, pn)
	}
	cluster, _ := b.(harness.Cluster)
	var stalled []nemesis.Link
	return nemesis.Action{
		Kind: f.Name(),
		Start: func(ctx context.Context, nem *nemesis.Nemesis, _ int) (string, string, error) {
			if cluster == nil {
				return "lock service", "", registry.Refuse("harness.Cluster", "backend %s is not a cluster whose leader fencecheck can stall", b.Name())
			}
			i, err := leader(ctx, b)
			if err != nil {
				return "lock service", "", err
			}
			if err := cluster.StallNode(ctx, i); err != nil {
				return node(i), "", err
			}
			stalled = nem.NodeLinks(i)
			for _, l := range stalled {
				l.Stall()
			}
			return node(i), fmt.Sprintf("leader node %d paused: its peer links and all %d client links stall", i, len(stalled)), nil
		},
		Heal: func(ctx context.Context) error {
			for _, l := range stalled {
				l.Pass()
			}
			return cluster.Heal(ctx)
		},
	}
}

// signalPause is node-pause on servers that are real processes: SIGSTOP to the leader's
// process group, SIGCONT when the pause heals. A stopped process stalls every link by
// itself; the detail names the PID and the signal.
func signalPause(kind string, b harness.Backend, pn harness.ProcessNodes) nemesis.Action {
	paused := -1
	var sig sent
	return nemesis.Action{
		Kind:      kind,
		Signalled: sig.get,
		Start: func(ctx context.Context, _ *nemesis.Nemesis, _ int) (string, string, error) {
			i, err := leader(ctx, b)
			if err != nil {
				return "lock service", "", err
			}
			pid := pn.NodePID(i)
			if err := pn.PauseNode(ctx, i); err != nil {
				return node(i), "", err
			}
			paused = i
			sig = sent{history.SignalStop, []int{pid}}
			return node(i), fmt.Sprintf("%s (pid %d) stopped with SIGSTOP to its process group; SIGCONT when the pause heals", serverRole(pn, i), pid), nil
		},
		Heal: func(ctx context.Context) error {
			if paused < 0 {
				return nil
			}
			return pn.ResumeNode(ctx, paused)
		},
	}
}

type crash struct{}

func (crash) Name() string { return Crash }
func (crash) Meaning() string {
	return "the lock service (a single server, or a cluster's leader; a server process: SIGKILL) crashes while the holder is paused, and restarts with its data (a single server: at once; a leader: when the pause heals); harness.Crasher"
}
func (f crash) Applies(t registry.Target) error {
	if err := ownService(f.Name(), t); err != nil {
		return err
	}
	if !t.Caps.Crasher {
		return registry.Refuse("harness.Crasher", "fault %q crashes the lock service and restarts it, which fencecheck cannot do to backend %s", f.Name(), t.Backend)
	}
	return nil
}

// ShapePause: a single server that forgets its leases when it crashes (its descriptor
// does not declare DurableLeases) frees the lock at once, so the holder need not outwait
// its TTL. It wakes right after the first write accepted after the crash, before any
// other client writes again: the worst moment.
func (crash) ShapePause(t registry.Target, s *nemesis.ClientFault) bool {
	if t.Caps.Cluster || t.Caps.DurableLeases {
		return false
	}
	s.MinHold = t.TTL / 20
	return true
}

func (f crash) Action(t registry.Target, b harness.Backend) nemesis.Action {
	crasher, _ := b.(harness.Crasher)
	if pn, ok := singleProcess(t, b); ok && crasher != nil {
		return processCrash(f.Name(), pn, crasher)
	}
	_, isCluster := b.(harness.Cluster)
	single := !isCluster
	var crashed int
	var sig sent
	return nemesis.Action{
		Kind:      f.Name(),
		Signalled: sig.get,
		Start: func(ctx context.Context, _ *nemesis.Nemesis, _ int) (string, string, error) {
			if crasher == nil {
				return "lock service", "", registry.Refuse("harness.Crasher", "backend %s cannot be crashed and restarted by fencecheck", b.Name())
			}
			i, err := leader(ctx, b)
			if err != nil {
				return "lock service", "", err
			}
			crashed = i
			pid := pidOf(b, i)
			killed, isProcess := b.(harness.ProcessNodes)
			var killedPID int
			if isProcess {
				killedPID = killed.NodePID(i)
			}
			if err := crasher.Crash(ctx, i); err != nil {
				return node(i), "", err
			}
			if isProcess {
				sig = sent{history.SignalKill, []int{killedPID}}
			}
			if single {
				// The only server: restart at once, so the lock is available again
				// while the holder is still paused — with whatever it kept on disk.
				if err := crasher.Restart(ctx, i, true); err != nil {
					return node(i), "", err
				}
				if pn, ok := b.(harness.ProcessNodes); ok {
					return node(i), fmt.Sprintf("the only server%s killed with SIGKILL and restarted at once with its data (pid %d)", pid, pn.NodePID(i)), nil
				}
				return node(i), "the only server crashed (Crash) and restarted at once with its data kept (Restart, keepData)", nil
			}
			if pid != "" {
				return node(i), fmt.Sprintf("leader node %d%s killed with SIGKILL; it restarts with its data when the pause heals", i, pid), nil
			}
			return node(i), fmt.Sprintf("leader node %d crashed; it restarts with its data when the pause heals", i), nil
		},
		Heal: func(ctx context.Context) error {
			if single || crasher == nil {
				return nil
			}
			return crasher.Restart(ctx, crashed, true)
		},
	}
}

type clusterCrash struct{}

func (clusterCrash) Name() string { return ClusterCrash }
func (clusterCrash) Meaning() string {
	return "every node of the lock service crashes while the holder is paused, and the whole service restarts at once from its durable state (a harness.ClusterCrasher)"
}
func (f clusterCrash) Applies(t registry.Target) error {
	if err := ownService(f.Name(), t); err != nil {
		return err
	}
	if !t.Caps.ClusterCrash {
		return registry.Refuse("harness.ClusterCrasher", "fault %q crashes every node at once and restarts the whole service from its durable state, which fencecheck cannot do to backend %s (one node or server at a time: crash)", f.Name(), t.Backend)
	}
	return nil
}
func (f clusterCrash) Action(_ registry.Target, b harness.Backend) nemesis.Action {
	cc, _ := b.(harness.ClusterCrasher)
	return nemesis.Action{
		Kind: f.Name(),
		Start: func(ctx context.Context, _ *nemesis.Nemesis, _ int) (string, string, error) {
			if cc == nil {
				return "lock service", "", registry.Refuse("harness.ClusterCrasher", "fencecheck cannot crash and restart every node of backend %s at once", b.Name())
			}
			// Restarted at once, so the lock is available again while the holder is
			// still paused; every node comes back with its durable state.
			if err := cc.CrashCluster(ctx); err != nil {
				return "lock service", "", err
			}
			return "lock service", fmt.Sprintf("all %d nodes crashed and restarted with their data", cc.Nodes()), nil
		},
	}
}

// singleProcess returns a backend's server processes when the target has
// Caps.SingleProcess (so the fault and its Applies agree).
func singleProcess(t registry.Target, b harness.Backend) (harness.ProcessNodes, bool) {
	pn, ok := b.(harness.ProcessNodes)
	if !ok || !t.Caps.SingleProcess() {
		return nil, false
	}
	return pn, true
}

// processPause stops the server process (independent servers: a majority, strikeNodes)
// with SIGSTOP for 2 × TTL, then continues it (SIGCONT) while the holder is still paused:
// its timers ran on the clock meanwhile.
func processPause(kind string, b harness.Backend, pn harness.ProcessNodes) nemesis.Action {
	hold := 2 * registry.DefaultTTL
	if lt, ok := b.(registry.LeaseTimed); ok {
		hold = 2 * lt.LeaseTTL()
	}
	nodes := strikeNodes(pn)
	var (
		mu    sync.Mutex
		timer *time.Timer
		sig   sent
	)
	resume := func(ctx context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		if timer != nil {
			timer.Stop()
		}
		var errs []error
		for _, i := range nodes {
			errs = append(errs, pn.ResumeNode(ctx, i))
		}
		return errors.Join(errs...)
	}
	return nemesis.Action{
		Kind: kind,
		Start: func(ctx context.Context, _ *nemesis.Nemesis, _ int) (string, string, error) {
			pids := pidsOf(pn, nodes)
			for _, i := range nodes {
				if err := pn.PauseNode(ctx, i); err != nil {
					return strikeTarget(nodes), "", errors.Join(err, resume(ctx))
				}
			}
			mu.Lock()
			timer = time.AfterFunc(hold, func() { _ = resume(context.Background()) })
			mu.Unlock()
			sig = sent{history.SignalStop, pids}
			return strikeTarget(nodes), fmt.Sprintf("SIGSTOP to %s for %s, then SIGCONT, while the holder is paused", pidWords(nodes, pids), history.Seconds(hold.Nanoseconds())), nil
		},
		Heal:      resume,
		Signalled: sig.get,
	}
}

// processCrash kills the server process (independent servers: a majority) with SIGKILL
// and restarts it at once on its data dir, so that the lock is free again while the
// holder is still paused if the server kept it only in memory.
func processCrash(kind string, pn harness.ProcessNodes, crasher harness.Crasher) nemesis.Action {
	nodes := strikeNodes(pn)
	var sig sent
	return nemesis.Action{
		Kind:      kind,
		Signalled: sig.get,
		Start: func(ctx context.Context, _ *nemesis.Nemesis, _ int) (string, string, error) {
			before := pidsOf(pn, nodes)
			for _, i := range nodes {
				if err := crasher.Crash(ctx, i); err != nil {
					return node(i), "", err
				}
			}
			sig = sent{history.SignalKill, before}
			t0 := time.Now()
			for _, i := range nodes {
				if err := crasher.Restart(ctx, i, true); err != nil {
					return node(i), "", err
				}
			}
			return strikeTarget(nodes), fmt.Sprintf("SIGKILL to %s, restarted at once with its data dir as %s (ready after %s)",
				pidWords(nodes, before), pidList(pn, nodes), history.Seconds(time.Since(t0).Nanoseconds())), nil
		},
	}
}

// strikeNodes are the servers a node fault strikes on independent server processes
// (harness.ProcessNodes, not a harness.Cluster): the only one, or a majority, so that a
// lock granted by a majority is really forgotten.
func strikeNodes(pn harness.ProcessNodes) []int {
	n := 1
	if pn.Nodes() > 1 {
		n = pn.Nodes()/2 + 1
	}
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func strikeTarget(nodes []int) string {
	if len(nodes) == 1 {
		return node(nodes[0])
	}
	return "lock service"
}

// pidList names nodes with their PIDs: "node 0 (pid 4589), node 1 (pid 4595)".
func pidList(pn harness.ProcessNodes, nodes []int) string {
	return pidWords(nodes, pidsOf(pn, nodes))
}

// pidsOf is the nodes' PIDs, in the nodes' order.
func pidsOf(pn harness.ProcessNodes, nodes []int) []int {
	pids := make([]int, len(nodes))
	for k, i := range nodes {
		pids[k] = pn.NodePID(i)
	}
	return pids
}

// pidWords says the nodes with their PIDs: "node 0 (pid 4711), node 1 (pid 4712)".
func pidWords(nodes, pids []int) string {
	parts := make([]string, len(nodes))
	for k, i := range nodes {
		parts[k] = fmt.Sprintf("node %d (pid %d)", i, pids[k])
	}
	return strings.Join(parts, ", ")
}

// sent is what an action signalled, for nemesis.Action.Signalled: set by its Start.
type sent struct {
	signal string
	pids   []int
}

func (s *sent) get() (string, []int) { return s.signal, s.pids }
