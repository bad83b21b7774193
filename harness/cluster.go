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

// Tokenless is implemented by backends (or backend options) that hand out no fencing
// token, such as Redlock's random value or a Redis lock without a counter. A fenced
// resource cannot be made safe with them: the harness refuses such a run with
// NoFencingToken's reason instead of pretending. Their leases' Token is the order in
// which the backend's lockers saw grants returned (1, 2, ...): the checker needs an
// order to tell stale writes, and an unfenced resource stores it without checking it.
type Tokenless interface {
	// NoFencingToken says why this backend's grants carry no usable fencing token. A
	// backend whose token is an option returns "" when the configured option does hand
	// out one (redis with its INCR counter).
	NoFencingToken() string
}
