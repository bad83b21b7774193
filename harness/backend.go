// Package harness runs a workload of lock clients against a lock backend and a fenced
// resource, with faults from the nemesis, and records the history. The interfaces here
// are where behaviour varies: a lock Backend (naive, etcd, raft, ...) and a protected
// Resource (register, database, ...). Implementations live in sub-packages.
package harness

import (
	"context"
	"errors"
	"time"
)

// ErrNoEffect marks an error after which the operation definitely had no effect (a
// refused connection, a lock that is busy, a request the server answered with a
// refusal). Wrap it with %w. Any other error is recorded as an unknown outcome, because
// the operation may have taken effect.
var ErrNoEffect = errors.New("definitely no effect")

// Backend is a lock service. It owns its servers (if any) and hands out one Locker per
// harness client. Each client reaches the service through its own fault-proxy links, so
// NewLocker receives the proxied addresses, one per entry of Endpoints, in the same order.
type Backend interface {
	// Name is the backend's name as users type it (e.g. "naive", "etcd").
	Name() string
	// Endpoints are the real server addresses (host:port) clients must reach.
	Endpoints() []string
	// NewLocker returns a lock client for harness client id that dials only the given
	// addresses (proxied Endpoints, same order).
	NewLocker(ctx context.Context, id int, addrs []string) (Locker, error)
	// Close stops every server the backend started. Safe to call twice.
	Close() error
}

// Locker is one client's handle on the lock service.
type Locker interface {
	// Acquire blocks until the lock is granted or ctx ends.
	Acquire(ctx context.Context) (Lease, error)
	// Close releases the client's resources (not the lock). Safe to call twice.
	Close() error
}

// SelfBoundedAcquirer is implemented by lockers whose every Acquire ends on its own:
// the lock client answers each acquire, with a grant or a refusal, within a bound of
// its own, and is declared broken (the run fails) if it does not. The worker then gives
// such an Acquire no deadline of its own (Worker.AcquireTimeout) and only cancels it when
// the run stops: a deadline a loaded machine outruns would abandon a request the client
// goes on serving, and the grant it then makes would be given back unrecorded, so the
// history would miss a grant the service really made (a reused token, say).
type SelfBoundedAcquirer interface {
	AcquireBoundsItself() bool
}

// Lease is a granted lock.
type Lease interface {
	// Token is the fencing token of this grant.
	Token() int64
	// TTL is the lease's time to live as granted.
	TTL() time.Duration
	// Lost is closed when the client notices that the lease is gone (a renewal was
	// refused or the session ended). A trusting client never looks at it.
	Lost() <-chan struct{}
	// Release gives the lock back. A second Release of the same lease returns an error
	// wrapping ErrNoEffect (there is nothing left to give back), as does a Release the
	// service refused or that ctx ended before anything was sent.
	Release(ctx context.Context) error
}

// LossReasoner is implemented by leases that can say why their Lost channel closed (a
// renewal refused, the session expired, the client process said so). The worker writes
// the reason into the history's lost record; "" when the lease does not know.
type LossReasoner interface {
	LossReason() string
}

// Expiring is implemented by leases that know when they end by the client's own clock
// (the TTL from the last confirmed grant or renewal). A careful client needs it.
type Expiring interface {
	ValidUntil() time.Time
}

// Resource is the protected resource: a server (or store) that accepts writes carrying a
// fencing token. Like Backend, each client reaches it through its own proxy links.
type Resource interface {
	// Name is the resource's name as users type it (e.g. "fenced", "unfenced").
	Name() string
	// Fence is the fence rule the resource claims to enforce: history.FenceStrict or
	// history.FenceMonotonic.
	Fence() string
	// Endpoints are the real server addresses clients must reach.
	Endpoints() []string
	// NewClient returns a client for harness client id dialling the proxied addresses.
	// gate is where a client with a check-then-write step must pause between the two
	// (PauseAfterCheck); clients with one atomic write never call it.
	NewClient(ctx context.Context, id int, addrs []string, gate Gate) (ResourceClient, error)
	// Close stops the resource's servers. Safe to call twice.
	Close() error
}

// ResourceClient reads and writes the protected data.
type ResourceClient interface {
	// Read returns the stored value and token.
	Read(ctx context.Context) (value string, token int64, err error)
	// Write stores value fenced by lease's token. accepted=false with a nil error means
	// the fence refused it (no effect).
	Write(ctx context.Context, lease Lease, value string) (accepted bool, err error)
	// Close is safe to call twice.
	Close() error
}

// PausePoint names a place in a client's critical section where a GC-like pause can stop it.
type PausePoint string

// Pause points, in the order a critical section reaches them.
const (
	// PauseAfterAcquire: the lease is granted, nothing read yet.
	PauseAfterAcquire PausePoint = "after-acquire"
	// PauseAfterRead: the value is read, the write not yet sent (Kleppmann's GC pause).
	PauseAfterRead PausePoint = "after-read"
	// PauseAfterLeaseCheck: a careful client has checked, by its own clock, that its
	// lease is still valid, and not yet written.
	PauseAfterLeaseCheck PausePoint = "after-lease-check"
	// PauseAfterCheck: a check-then-write resource has checked the token and not yet written.
	PauseAfterCheck PausePoint = "after-check"
	// PauseInWrite: the write is about to be sent; a "delay" fault lets it go and holds
	// its bytes in the network.
	PauseInWrite PausePoint = "in-write"
)

// Gate is where a client's worker may be stopped by the nemesis.
type Gate interface {
	// Pause returns at once unless a fault is armed for this point, in which case it
	// blocks until the fault heals or ctx ends.
	Pause(ctx context.Context, p PausePoint)
}

// LeaseReader is implemented by resources whose writes read more of a lease than its
// token (etcd-txn: its lock key and that key's revision), which a lease served by a
// client host (backend/clienthost) does not carry: their runs keep their lock clients
// inside fencecheck. ReadsLease says what is read.
type LeaseReader interface {
	ReadsLease() string
}
