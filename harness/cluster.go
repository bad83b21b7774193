package harness

import "context"

// Cluster is implemented by backends whose lock service is a cluster of nodes the harness
// started itself (embedded etcd, the raft lock service). The harness finds it by type
// assertion; a backend without it (an external service) cannot take node faults, and the
// harness refuses them with a clear error instead of skipping them.
//
// Node i is the server behind Endpoints()[i]. Links between clients and nodes are the
// harness's own proxies; Cluster only controls the links between nodes.
type Cluster interface {
	// Nodes is the number of nodes.
	Nodes() int
	// Leader returns the index of the current leader, waiting (until ctx ends) for one.
	Leader(ctx context.Context) (int, error)
	// Isolate cuts every link between node i and the other nodes, both ways.
	Isolate(ctx context.Context, i int) error
	// StallNode holds every message to and from node i's peers (a paused process: its
	// peers see silence, nothing is lost).
	StallNode(ctx context.Context, i int) error
	// Heal restores every link between nodes.
	Heal(ctx context.Context) error
}

// Crasher is implemented by backends whose nodes can be crashed and restarted.
type Crasher interface {
	// Crash stops node i abruptly. keepData=false also loses its durable state.
	Crash(ctx context.Context, i int) error
	// Restart starts node i again on the same address.
	Restart(ctx context.Context, i int, keepData bool) error
}

// ProcessNodes is implemented by backends whose nodes are real server processes that
// fencecheck started (redis-server, nats-server, ZooKeeper's JVM). Their node faults
// are real signals: PauseNode stops node i's process group with SIGSTOP, ResumeNode
// continues it with SIGCONT, and Crasher.Crash sends SIGKILL. The PID goes into the
// fault's detail in the history.
type ProcessNodes interface {
	// Nodes is the number of server processes; node i serves Endpoints()[i].
	Nodes() int
	// NodePID is the process id of node i's server (its process group id).
	NodePID(i int) int
	// PauseNode sends SIGSTOP to node i's process group.
	PauseNode(ctx context.Context, i int) error
	// ResumeNode sends SIGCONT to node i's process group.
	ResumeNode(ctx context.Context, i int) error
}

// PausableProcess is implemented by Lockers whose client is a real process of its own
// (the exec backend: a user's lock client in any language). The nemesis finds it by type
// assertion: a pause then stops the client's process group with SIGSTOP, as well as its
// worker and links, and continues it with SIGCONT when the pause heals, so the client's
// own heartbeats and keep-alives stop as in a real GC pause.
type PausableProcess interface {
	// PauseProcess sends SIGSTOP to the client's process group and returns its id.
	PauseProcess() (pid int, err error)
	// ResumeProcess sends SIGCONT to the group PauseProcess stopped.
	ResumeProcess() error
}

// CrashableProcess is implemented by Lockers whose client is a real process that can be
// replaced (the exec backend). The nemesis's client-crash fault finds it by type
// assertion: it kills the client's process group with SIGKILL — the lease it held dies
// with it — and starts a fresh process of the same command in its place.
type CrashableProcess interface {
	CrashProcess(ctx context.Context) (oldPID, newPID int, err error)
}

// Failing is implemented by backends whose clients can break in a way that must end the
// run at once (the exec backend: a user's lock client broke the protocol or died). The
// runner stops the workload when Failed is closed and returns Err along with the
// history recorded so far.
type Failing interface {
	Failed() <-chan struct{}
	Err() error
}

// Hostable is implemented by backends whose lockers can run in a client host: the
// fencecheck binary started as a process of its own that builds the same in-process
// Locker from HostConfig and serves it over the exec protocol (backend/clienthost), so
// that a pause stops the whole lock client — its library's goroutines, timers and
// keep-alives — with SIGSTOP.
type Hostable interface {
	// HostConfig is what a host needs to build this run's lockers, or an error saying
	// why they must run inside fencecheck.
	HostConfig() (HostConfig, error)
}

// HostConfig is a backend's serialisable locker configuration.
type HostConfig struct {
	// Kind names the constructor that reads Config (builtin's HostLockers).
	Kind string `json:"kind"`
	// Config is the constructor's input (JSON).
	Config []byte `json:"config"`
	// Expiring says that the leases implement Expiring: the host reports their ends.
	Expiring bool `json:"expiring,omitempty"`
	// NoToken is the backend's reason its grants carry no fencing token ("" when they
	// do): the host grants with "no_token".
	NoToken string `json:"no_token,omitempty"`
	// Module is the lock client's Go module (harness.ClientModuler): the host reports
	// it with its version as the client's "library". Set by the client host's parent.
	Module string `json:"module,omitempty"`
}

// LockerMaker makes the lockers of a client host from a HostConfig's Config.
type LockerMaker interface {
	NewLocker(ctx context.Context, id int, addrs []string) (Locker, error)
	Close() error
}
