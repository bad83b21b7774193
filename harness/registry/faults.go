package registry

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/nemesis"
)

// Target is what a fault would be applied to.
type Target struct {
	// Backend is the backend's name (for messages) and Caps its capabilities.
	Backend string
	Caps    Caps
	// Resource is the protected resource's descriptor.
	Resource Resource
	// Policy is the clients' policy ("trusting" or "careful"); TTL the lease TTL.
	Policy string
	TTL    time.Duration
	// ClientFaults names the registry's client faults (for messages).
	ClientFaults []string
	// Random: the faults come from a random schedule, not targeted at the holder.
	Random bool
}

// Fault is a fault a user can name.
type Fault interface {
	Name() string
	Meaning() string
	// Applies says why the fault cannot run against the target, or nil.
	Applies(t Target) error
}

// ClientFault strikes the lock holder: the first client to reach a pause point inside
// its critical section.
type ClientFault interface {
	Fault
	// Strike is the nemesis fault for the target. riders are the service faults that
	// ride along (some change how long a pause lasts: PauseShaper).
	Strike(t Target, riders []ServiceFault) nemesis.ClientFault
}

// ServiceFault acts on the lock service (a node, the leader, a clock). It rides on a
// strike of the holder, so that the run contains a stale write to stop; given alone, it
// rides on a pause.
type ServiceFault interface {
	Fault
	// Action is the nemesis action against the started lock service (Service of the
	// started backend).
	Action(b harness.Backend) nemesis.Action
}

// PauseShaper is a service fault that changes the pause it rides on.
type PauseShaper interface {
	// ShapePause adjusts f and reports whether it did.
	ShapePause(t Target, f *nemesis.ClientFault) bool
}

// Faults returns the built-in faults, in the order `list` prints them.
func Faults() []Fault {
	return []Fault{
		pauseFault{}, pauseBeforeRead{}, delayFault{}, partitionFault{},
		leaderIsolation{}, nodePause{}, crashFault{}, clusterCrash{}, skewFault{}, clockJump{},
		clientCrash{},
	}
}

// strike is the common shape of a targeted strike.
func strike(kind string, t Target) nemesis.ClientFault {
	return nemesis.ClientFault{
		Kind:     kind,
		ArmAfter: max(t.TTL, 200*time.Millisecond),
		// Twice the TTL: the lease has surely expired on the server before the client
		// may go on, whatever the load.
		MinHold: 2 * t.TTL,
		MaxHold: max(20*t.TTL, 10*time.Second),
		// The struck client's late request lands right after the write that ended the
		// fault, before anyone else's: the same interleaving on every run.
		Exclusive: true,
	}
}

type pauseFault struct{}

func (pauseFault) Name() string { return "pause" }
func (pauseFault) Meaning() string {
	return "GC-like pause of the lock holder inside its critical section (after its read, before its write; for toctou between check and write), longer than the TTL"
}
func (pauseFault) Applies(Target) error { return nil }
func (f pauseFault) Strike(t Target, riders []ServiceFault) nemesis.ClientFault {
	s := strike(f.Name(), t)
	s.Point, s.StopWorker = harness.PauseAfterRead, true
	for _, r := range riders {
		if p, ok := r.(PauseShaper); ok && p.ShapePause(t, &s) {
			return s
		}
	}
	switch {
	case t.Policy == "careful":
		s.Point = harness.PauseAfterLeaseCheck
	case t.Resource.ChecksThenWrites:
		s.Point = harness.PauseAfterCheck
	}
	return s
}

type pauseBeforeRead struct{}

func (pauseBeforeRead) Name() string { return "pause-before-read" }
func (pauseBeforeRead) Meaning() string {
	return "GC-like pause of the lock holder right after acquiring, before its read, longer than the TTL"
}
func (pauseBeforeRead) Applies(Target) error { return nil }
func (f pauseBeforeRead) Strike(t Target, _ []ServiceFault) nemesis.ClientFault {
	s := strike(f.Name(), t)
	s.Point, s.StopWorker = harness.PauseAfterAcquire, true
	return s
}

type delayFault struct{}

func (delayFault) Name() string { return "delay" }
func (delayFault) Meaning() string {
	return "the holder's write is sent but held in the network (all its links stall) until its lease has expired and another write was accepted"
}
func (f delayFault) Applies(t Target) error {
	if t.Resource.Embedded != "" {
		return fmt.Errorf("fault %q holds a write in the network, and %s is embedded: there is no network between the client and %s (use pause, or a resource over the network)", f.Name(), t.Resource.Name, t.Resource.Embedded)
	}
	return nil
}
func (f delayFault) Strike(t Target, _ []ServiceFault) nemesis.ClientFault {
	s := strike(f.Name(), t)
	s.Point, s.StopWorker = harness.PauseInWrite, false
	return s
}

type partitionFault struct{}

func (partitionFault) Name() string { return "partition" }
func (partitionFault) Meaning() string {
	return "the holder is cut off from the lock service (its connections close) while it can still reach the resource, and stalls in its critical section"
}
func (partitionFault) Applies(Target) error { return nil }
func (f partitionFault) Strike(t Target, _ []ServiceFault) nemesis.ClientFault {
	s := strike(f.Name(), t)
	s.Point, s.StopWorker, s.Partition = harness.PauseAfterRead, true, true
	return s
}

// clientCrash kills the holder's own lock-client process (harness.ProcessClients: its
// Locker is a harness.CrashableProcess) and starts a fresh one; the worker, stopped as
// in a pause, writes later with the token the dead process held.
type clientCrash struct{}

func (clientCrash) Name() string { return "client-crash" }
func (clientCrash) Meaning() string {
	return "the holder's lock client process is killed with SIGKILL inside its critical section and a fresh one started; the application (the worker) writes with the old token after 2x TTL (exec backend)"
}
func (f clientCrash) Applies(t Target) error {
	if !t.Caps.ClientProcesses {
		return fmt.Errorf("fault %q kills a lock client that is a process of its own (a harness.ProcessClients backend: exec); %s's clients run inside fencecheck", f.Name(), t.Backend)
	}
	return nil
}
func (f clientCrash) Strike(t Target, _ []ServiceFault) nemesis.ClientFault {
	s := strike(f.Name(), t)
	s.Point, s.StopWorker, s.CrashProcess = harness.PauseAfterRead, true, true
	return s
}

// ownService refuses a service fault on servers fencecheck did not start.
func ownService(name string, t Target) error {
	if t.Caps.External == "" {
		return nil
	}
	return fmt.Errorf("fault %q needs a cluster fencecheck started itself; %s only takes client-side faults (%s)", name, t.Caps.External, strings.Join(t.ClientFaults, ", "))
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

func node(i int) string { return fmt.Sprintf("node-%d", i) }

// NodeName is how faults name node i in a history ("node-1").
func NodeName(i int) string { return node(i) }

func needCluster(name string, t Target) error {
	if err := ownService(name, t); err != nil {
		return err
	}
	if (!t.Caps.Cluster || t.Caps.Nodes < 3) && t.Caps.ProcessNodes && !t.Caps.SingleProcess { // a service that runs as a cluster too (ZooKeeper)
		return fmt.Errorf("fault %q needs a cluster of at least 3 %s servers (--members 3): a single server stopped or cut off grants nobody the lock, so the run could never show a stale write", name, t.Backend)
	}
	if !t.Caps.Cluster || t.Caps.Nodes < 3 {
		return fmt.Errorf("fault %q needs a lock-service cluster of at least 3 nodes (etcd or raft with --members 3)", name)
	}
	return nil
}

type leaderIsolation struct{}

func (leaderIsolation) Name() string { return "leader-isolation" }
func (leaderIsolation) Meaning() string {
	return "the lock service's leader is cut off from the other nodes, both ways, while the holder is paused (clusters of 3 or more)"
}
func (f leaderIsolation) Applies(t Target) error { return needCluster(f.Name(), t) }
func (f leaderIsolation) Action(b harness.Backend) nemesis.Action {
	cluster, _ := b.(harness.Cluster)
	return nemesis.Action{
		Kind: f.Name(),
		Start: func(ctx context.Context, _ *nemesis.Nemesis, _ int) (string, string, error) {
			if cluster == nil {
				return "lock service", "", fmt.Errorf("backend %s is not a cluster fencecheck controls", b.Name())
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

type nodePause struct{}

func (nodePause) Name() string { return "node-pause" }
func (nodePause) Meaning() string {
	return "the lock service stops: a cluster's leader (all its links, to peers and clients, stall; a server process: SIGSTOP until the pause heals; clusters of 3 or more), or a single server process that forgets idle sessions on its own (SIGSTOP, and SIGCONT after 2x TTL, while the holder is still paused: postgres-advisory, mariadb-lock)"
}
func (f nodePause) Applies(t Target) error {
	if t.Caps.SingleProcess {
		return ownService(f.Name(), t)
	}
	return needCluster(f.Name(), t)
}
func (f nodePause) Action(b harness.Backend) nemesis.Action {
	if pn, ok := singleProcess(b); ok {
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
				return "lock service", "", fmt.Errorf("backend %s is not a cluster fencecheck controls", b.Name())
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
	return nemesis.Action{
		Kind: kind,
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

type crashFault struct{}

func (crashFault) Name() string { return "crash" }
func (crashFault) Meaning() string {
	return "the lock service (a single server, or a cluster's leader; a server process: SIGKILL) crashes while the holder is paused, and restarts with its data (a single server: at once; a leader: when the pause heals)"
}
func (f crashFault) Applies(t Target) error {
	if err := ownService(f.Name(), t); err != nil {
		return err
	}
	if !t.Caps.Crasher {
		return fmt.Errorf("fault %q: backend %s cannot be crashed by fencecheck (it is not a harness.Crasher)", f.Name(), t.Backend)
	}
	return nil
}

// ShapePause: a single server forgets the lease at once when it crashes, so the holder
// need not outwait its TTL. It wakes right after the first write accepted after the
// crash, before any other client writes again: the worst moment.
func (crashFault) ShapePause(t Target, s *nemesis.ClientFault) bool {
	if t.Caps.Cluster || t.Caps.DurableLeases {
		return false
	}
	s.MinHold = t.TTL / 20
	return true
}

func (f crashFault) Action(b harness.Backend) nemesis.Action {
	crasher, _ := b.(harness.Crasher)
	if pn, ok := singleProcess(b); ok && crasher != nil {
		return processCrash(f.Name(), pn, crasher)
	}
	_, isCluster := b.(harness.Cluster)
	single := !isCluster
	var crashed int
	return nemesis.Action{
		Kind: f.Name(),
		Start: func(ctx context.Context, _ *nemesis.Nemesis, _ int) (string, string, error) {
			if crasher == nil {
				return "lock service", "", fmt.Errorf("backend %s cannot be crashed by fencecheck", b.Name())
			}
			i, err := leader(ctx, b)
			if err != nil {
				return "lock service", "", err
			}
			crashed = i
			pid := pidOf(b, i)
			if err := crasher.Crash(ctx, i); err != nil {
				return node(i), "", err
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
				return node(i), "lock server crashed and restarted at once: the lease it held in memory is gone (and an in-memory counter with it)", nil
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

func (clusterCrash) Name() string { return "cluster-crash" }
func (clusterCrash) Meaning() string {
	return "every raft node crashes while the holder is paused, and the whole lock service restarts at once with its logs (raft)"
}
func (f clusterCrash) Applies(t Target) error {
	if err := ownService(f.Name(), t); err != nil {
		return err
	}
	if !t.Caps.ClusterCrash {
		return fmt.Errorf("fault %q restarts a whole cluster fencecheck runs itself: the raft backend (naive: use crash; etcd: one member at a time)", f.Name())
	}
	return nil
}
func (f clusterCrash) Action(b harness.Backend) nemesis.Action {
	cc, _ := b.(harness.ClusterCrasher)
	return nemesis.Action{
		Kind: f.Name(),
		Start: func(ctx context.Context, _ *nemesis.Nemesis, _ int) (string, string, error) {
			if cc == nil {
				return "lock service", "", fmt.Errorf("backend %s cannot be crashed by fencecheck", b.Name())
			}
			for i := range cc.Nodes() {
				if err := cc.Crash(ctx, i); err != nil {
					return node(i), "", err
				}
			}
			// Restart at once, so the lock is available again while the holder is
			// still paused; every node comes back with its log and snapshot.
			for i := range cc.Nodes() {
				if err := cc.Restart(ctx, i, true); err != nil {
					return node(i), "", err
				}
			}
			return "lock service", fmt.Sprintf("all %d nodes crashed and restarted with their data", cc.Nodes()), nil
		},
	}
}

// SkewRate is how much faster a skewed lock-service clock runs.
const SkewRate = 20.0

func clocksNotOwned(name string, t Target) error {
	if t.Caps.FastClock {
		return fmt.Errorf("fault %q: %s's clock is its server process's, which fencecheck can only run fast from the start (skew), not step while it runs", name, t.Backend)
	}
	return fmt.Errorf("fault %q: %s's clocks cannot be skewed in-process (its server and client read time.Now directly); it applies to clocks fencecheck owns: the naive server's and the raft lock FSM's", name, t.Backend)
}

type skewFault struct{}

func (skewFault) Name() string { return "skew" }
func (skewFault) Meaning() string {
	return "the lock service's clock (naive: the server; raft: the leader's FSM stamps) runs 20x fast while the holder is briefly paused (less than its TTL by its own clock)"
}
func (f skewFault) Applies(t Target) error {
	if err := ownService(f.Name(), t); err != nil {
		return err
	}
	switch {
	case t.Caps.ServiceClock:
		return nil
	case !t.Caps.FastClock:
		return clocksNotOwned(f.Name(), t)
	case t.Random:
		return fmt.Errorf("fault %q: %s's server clock can only run fast from the server's start, for the whole run: give it as a targeted fault (--fault), not in a random schedule", f.Name(), t.Backend)
	}
	return nil
}

// ShapePause: a brief pause, shorter than the TTL by the client's clock: only the fast
// service clock makes it outlive the lease. A clock fast from the server's start runs
// slower than SkewRate (faster, it would expire every session, busy or not): at 2x the
// server forgets a silent session after TTL/2, so the pause may last up to 0.9 TTL.
func (skewFault) ShapePause(t Target, s *nemesis.ClientFault) bool {
	s.MinHold, s.MaxHold = t.TTL/20, t.TTL/2
	if !t.Caps.ServiceClock && t.Caps.ClockRate > 0 {
		s.MaxHold = t.TTL * 9 / 10
	}
	return true
}

func (f skewFault) Action(b harness.Backend) nemesis.Action {
	if fc, ok := b.(FastClocked); ok && fc.ClockRate() > 0 {
		if _, owned := b.(ServiceClocked); !owned {
			return fastClockSkew(f.Name(), b, fc)
		}
	}
	sc, _ := b.(ServiceClocked)
	var skewed *nemesis.Clock
	return nemesis.Action{
		Kind: f.Name(),
		Start: func(ctx context.Context, _ *nemesis.Nemesis, _ int) (string, string, error) {
			if sc == nil {
				return "lock service", "", fmt.Errorf("backend %s has no clock fencecheck owns", b.Name())
			}
			target, c, err := sc.ServiceClock(ctx)
			if err != nil {
				return target, "", err
			}
			skewed = c
			if err := c.SetRate(SkewRate); err != nil {
				return target, "", err
			}
			return target, fmt.Sprintf("%s's clock runs %gx fast (its leases expire %gx early in real time)", target, SkewRate, SkewRate), nil
		},
		Heal: func(context.Context) error {
			if skewed != nil {
				skewed.Reset(false) // runs at the right speed again; like a slewing NTP, it keeps the lead it gained
			}
			return nil
		},
	}
}

// fastClockSkew is skew on a clock that runs fast from the server's start: nothing to
// change when the fault starts; its detail says whose clock runs how fast.
func fastClockSkew(kind string, b harness.Backend, fc FastClocked) nemesis.Action {
	return nemesis.Action{
		Kind: kind,
		Start: func(ctx context.Context, _ *nemesis.Nemesis, _ int) (string, string, error) {
			i, err := leader(ctx, b)
			if err != nil {
				return "lock service", "", err
			}
			who := "the lock server"
			if pn, ok := b.(harness.ProcessNodes); ok {
				who = serverRole(pn, i) + pidOf(b, i)
				if pn.Nodes() > 1 {
					who = "every server, " + who + " among them,"
				}
			}
			rate := fc.ClockRate()
			return node(i), fmt.Sprintf("%s runs its clock %gx fast, wall and monotonic, since it started: it expires a silent session after 1/%g of its timeout in real time", who, rate, rate), nil
		},
	}
}

type clockJump struct{}

func (clockJump) Name() string { return "clock-jump" }
func (clockJump) Meaning() string {
	return "the lock server's wall clock steps back while the holder is paused (naive-wallclock: to between the last two grants, and stands still until healed; otherwise 1 h back)"
}
func (f clockJump) Applies(t Target) error {
	if err := ownService(f.Name(), t); err != nil {
		return err
	}
	if !t.Caps.WallClock {
		return clocksNotOwned(f.Name(), t)
	}
	return nil
}
func (f clockJump) Action(b harness.Backend) nemesis.Action {
	wc, _ := b.(WallClocked)
	return nemesis.Action{
		Kind: f.Name(),
		Start: func(_ context.Context, nem *nemesis.Nemesis, client int) (string, string, error) {
			if wc == nil {
				return "lock server", "", fmt.Errorf("backend %s has no wall clock fencecheck owns", b.Name())
			}
			c := wc.WallClock()
			if !wc.WallClockTokens() {
				c.Jump(-time.Hour)
				return "lock server", "wall clock stepped back 1 h (tokens from a counter and expiry on the monotonic clock do not notice)", nil
			}
			prev, held, ok := lastTokens(nem.History(), client)
			if !ok || held-prev < 2 {
				c.Jump(-time.Hour)
				return "lock server", "wall clock stepped back 1 h (no room between the last two grants to land in)", nil
			}
			at := time.Unix(0, prev+(held-prev)/2)
			c.Freeze(at)
			return "lock server", fmt.Sprintf("wall clock stepped back %s, to %s (between the last two grants, tokens %d and %d), and stands still",
				history.Seconds(time.Now().UnixNano()-at.UnixNano()), at.Format(time.RFC3339Nano), prev, held), nil
		},
		Heal: func(context.Context) error {
			if wc != nil {
				wc.WallClock().Reset(true)
			}
			return nil
		},
	}
}

// lastTokens returns the struck client's last granted token and the token its last read
// saw stored (the previous holder's): the two grants a stepped-back clock lands between.
func lastTokens(h *history.History, client int) (prev, held int64, ok bool) {
	var haveAcq, haveRead bool
	for i := len(h.Ops) - 1; i >= 0 && !(haveAcq && haveRead); i-- {
		o := h.Ops[i]
		if o.Client != client || o.Status != history.OK {
			continue
		}
		switch {
		case o.Kind == history.Read && !haveRead && !haveAcq:
			prev, haveRead = o.Token, true
		case o.Kind == history.Acquire && !haveAcq:
			held, haveAcq = o.Token, true
		}
	}
	return prev, held, haveAcq && haveRead
}

// LeaseTimed is implemented by backends that say their lease TTL; a process pause holds
// the server stopped for twice that.
type LeaseTimed interface {
	LeaseTTL() time.Duration
}

// singleProcess returns a backend's one server process when it has Caps.SingleProcess
// (CapsOf decides, so the fault and its Applies agree).
func singleProcess(b harness.Backend) (harness.ProcessNodes, bool) {
	pn, ok := b.(harness.ProcessNodes)
	if !ok || !CapsOf(b).SingleProcess {
		return nil, false
	}
	return pn, true
}

// processPause stops the server process (independent servers: a majority, strikeNodes)
// with SIGSTOP for 2 × TTL, then continues it (SIGCONT) while the holder is still paused:
// its timers ran on the clock meanwhile.
func processPause(kind string, b harness.Backend, pn harness.ProcessNodes) nemesis.Action {
	hold := 2 * DefaultTTL
	if lt, ok := b.(LeaseTimed); ok {
		hold = 2 * lt.LeaseTTL()
	}
	nodes := strikeNodes(pn)
	var (
		mu    sync.Mutex
		timer *time.Timer
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
			pids := pidList(pn, nodes)
			for _, i := range nodes {
				if err := pn.PauseNode(ctx, i); err != nil {
					return strikeTarget(nodes), "", errors.Join(err, resume(ctx))
				}
			}
			mu.Lock()
			timer = time.AfterFunc(hold, func() { _ = resume(context.Background()) })
			mu.Unlock()
			return strikeTarget(nodes), fmt.Sprintf("SIGSTOP to %s for %s, then SIGCONT, while the holder is paused", pids, history.Seconds(hold.Nanoseconds())), nil
		},
		Heal: resume,
	}
}

// processCrash kills the server process (independent servers: a majority) with SIGKILL
// and restarts it at once on its data dir, so the lock is available again while the
// holder is still paused if the server kept it only in memory.
func processCrash(kind string, pn harness.ProcessNodes, crasher harness.Crasher) nemesis.Action {
	nodes := strikeNodes(pn)
	return nemesis.Action{
		Kind: kind,
		Start: func(ctx context.Context, _ *nemesis.Nemesis, _ int) (string, string, error) {
			before := pidList(pn, nodes)
			for _, i := range nodes {
				if err := crasher.Crash(ctx, i); err != nil {
					return node(i), "", err
				}
			}
			t0 := time.Now()
			for _, i := range nodes {
				if err := crasher.Restart(ctx, i, true); err != nil {
					return node(i), "", err
				}
			}
			return strikeTarget(nodes), fmt.Sprintf("SIGKILL to %s, restarted at once with its data dir as %s (ready after %s)",
				before, pidList(pn, nodes), history.Seconds(time.Since(t0).Nanoseconds())), nil
		},
	}
}

// strikeNodes are the servers a node fault strikes on independent server processes: the
// only one, or a majority (Redlock's), so that the lock is really forgotten.
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
	parts := make([]string, len(nodes))
	for k, i := range nodes {
		parts[k] = fmt.Sprintf("node %d (pid %d)", i, pn.NodePID(i))
	}
	return strings.Join(parts, ", ")
}
