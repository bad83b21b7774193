package harness

import "context"

// Optional capabilities of a started Backend, found by type assertion (like Cluster and
// Crasher): what a backend can undergo comes from the interfaces it implements, never
// from its name. The registry (harness/registry) reads them to decide which faults,
// policies and resources apply; before anything starts, it reads them from the values
// of a descriptor's Shape. Those of its lockers and leases (KeyedLocker,
// CrashableProcess, Expiring) are on the lockers and leases themselves.

// ClusterCrasher is implemented by clusters that can lose every node at once and come
// back from their durable state (the cluster-crash fault).
type ClusterCrasher interface {
	Cluster
	// CrashCluster crashes every node at once, then restarts them all from their
	// durable state, and returns when the service is up again.
	CrashCluster(ctx context.Context) error
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
	// NoFencingToken says in a few words why there is no token. (A backend that learns
	// it only as it runs is a TokenlessReporter instead.)
	NoFencingToken() string
}

// TokenlessReporter is implemented by backends that learn only while they run that
// their grants carry no fencing token (the exec backend: a client grants with
// "no_token"); the run records the reason in its history. A backend that knows before it
// starts is Tokenless.
type TokenlessReporter interface {
	Backend
	// ReportedNoToken is the reason the clients gave for granting without a token, or ""
	// (no such grant yet).
	ReportedNoToken() string
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

// Configured is implemented by backends whose own settings decide when a lease ends on
// top of its TTL (client-go's RenewDeadline and RetryPeriod): the run records them in
// the history's run object, under "backend_settings", so the history says what ran.
type Configured interface {
	Backend
	BackendSettings() map[string]any
}

// ServerVersioner is implemented by backends that can ask their server for its version
// over the service's own protocol (etcd Status, Redis INFO, SELECT version()), including
// a server fencecheck did not start. The trial asks once after start and records it in
// the history's run ("server_version"); without it, or when the server will not say
// (a refused four-letter word), the descriptor's Version (the binary's --version) is
// recorded instead.
type ServerVersioner interface {
	Backend
	ServerVersion(ctx context.Context) (string, error)
}

// SessionTimeouter is implemented by backends whose lock lives as long as a server
// session: the server settings that end such a session when its client goes quiet
// (PostgreSQL idle_session_timeout, MariaDB wait_timeout), by name, as the server
// reports them. The trial records them in the history's run ("session_timeouts").
type SessionTimeouter interface {
	Backend
	SessionTimeouts(ctx context.Context) (map[string]string, error)
}

// NotHostable says why a backend's lock clients cannot run as processes of their own (a
// client host): the run then keeps them in-process and records why.
type NotHostable struct{ Why string }

func (e *NotHostable) Error() string { return e.Why }

// ClientLibraryReporter is implemented by backends whose lock clients say which lock
// library (and version) they are: an exec client's "library" (docs/exec-protocol.md), a
// client host's Go module. The trial records it in the history's run
// ("client_library") after the workload.
type ClientLibraryReporter interface {
	Backend
	// ClientLibrary is what the clients said, e.g. "kazoo 2.10.0" (distinct reports
	// joined with ", "), or "" when none said.
	ClientLibrary() string
}

// ClientModuler is implemented by built-in backends whose lock client is a Go module
// linked into fencecheck (etcd's clientv3, redigo, pgx, ...): its module path. The
// client library recorded is that module with the version this binary was built with
// (ModuleVersion), in-process or in a client host.
type ClientModuler interface {
	Backend
	ClientModule() string
}
