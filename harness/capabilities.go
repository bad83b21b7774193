package harness

// Optional capabilities of a started Backend, found by type assertion (like Cluster and
// Crasher): what a backend can undergo comes from the interfaces it implements, never
// from its name. The registry (harness/registry) reads them to decide which faults,
// policies and resources apply.

// KeyedBackend is implemented by backends whose Lockers are KeyedLockers (independent
// locks per key, for --keys runs).
type KeyedBackend interface {
	Backend
	// ServesKeys marks the capability; it does nothing.
	ServesKeys()
}

// ExpiringBackend is implemented by backends whose leases implement Expiring (they know
// their end by the client's clock), which a careful client needs.
type ExpiringBackend interface {
	Backend
	// LeasesExpire marks the capability; it does nothing.
	LeasesExpire()
}

// ClusterCrasher is implemented by clusters that can lose every node at once and come
// back from their durable state (the cluster-crash fault).
type ClusterCrasher interface {
	Cluster
	Crasher
	// CrashesWholeCluster marks the capability; it does nothing.
	CrashesWholeCluster()
}

// External is implemented by backends that use servers fencecheck did not start: only
// client-side faults reach them.
type External interface {
	Backend
	// External says how the user pointed at the servers, e.g. "an external cluster
	// (--etcd-endpoints)".
	External() string
}

// Tokenless is implemented by backends that hand out no fencing token (Lease.Token is
// meaningless): a resource that fences on tokens cannot be made safe with them.
type Tokenless interface {
	Backend
	// NoFencingToken says in a few words why there is no token; "" when the grants do
	// carry tokens after all (the exec backend knows only once its clients said so).
	NoFencingToken() string
}

// ServiceWrapper is implemented by backends that run their clients against another
// started backend (the exec backend: a user's lock clients against a service fencecheck
// started): faults that act on the lock service act on Unwrap's, and the service's
// capabilities (Cluster, Crasher, clocks) are its. Unwrap returns nil when there is no
// started service (an existing one given by address).
type ServiceWrapper interface {
	Backend
	Unwrap() Backend
}

// ProcessClients is implemented by backends whose Lockers are real processes of their
// own (PausableProcess and CrashableProcess): a pause stops the process with SIGSTOP,
// and the client-crash fault applies.
type ProcessClients interface {
	Backend
	// ClientsAreProcesses marks the capability; it does nothing.
	ClientsAreProcesses()
}

// DurableLeases is implemented by backends whose server keeps its leases across a crash
// and a restart with its data (ZooKeeper logs its sessions): a crash of a single server
// frees no lock before the TTL has run out.
type DurableLeases interface {
	Backend
	// LeasesSurviveRestart marks the capability; it does nothing.
	LeasesSurviveRestart()
}

// Configured is implemented by backends whose own settings decide when a lease ends on
// top of its TTL (client-go's RenewDeadline and RetryPeriod): the run records them in
// the history's run object, under "backend_settings", so the history says what ran.
type Configured interface {
	Backend
	BackendSettings() map[string]any
}
