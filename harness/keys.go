package harness

import (
	"context"
	"fmt"
)

// Independent keys (Jepsen's "independent" workloads): with Worker.Keys > 1 each
// critical section picks one of K keys, and takes that key's lock and writes that key's
// register cell, so one run drives K independent locks and registers and records many
// more critical sections. Support is optional: a Locker or ResourceClient that serves
// keys implements the interfaces below, found by type assertion; the core Backend,
// Locker, Resource and ResourceClient interfaces are unchanged, and a backend or
// resource without them refuses a multi-key run (CheckKeyed).

// KeyedLocker is a Locker that serves one independent lock per key.
type KeyedLocker interface {
	Locker
	// AcquireKey is Acquire on key's lock; key "" is the lock Acquire takes.
	AcquireKey(ctx context.Context, key string) (Lease, error)
}

// KeyedResourceClient is a ResourceClient that addresses one independent cell per key.
type KeyedResourceClient interface {
	ResourceClient
	// ReadKey is Read of key's cell; key "" is the cell Read reads.
	ReadKey(ctx context.Context, key string) (value string, token int64, err error)
	// WriteKey is Write to key's cell, fenced by lease's token.
	WriteKey(ctx context.Context, key string, lease Lease, value string) (accepted bool, err error)
}

// KeyName is the name of key i of a multi-key run, as recorded in histories.
func KeyName(i int) string { return fmt.Sprintf("k%d", i) }

// CheckKeyed reports whether a client's locker and resource client both serve keys.
func CheckKeyed(backend string, l Locker, resource string, r ResourceClient) error {
	if _, ok := l.(KeyedLocker); !ok {
		return fmt.Errorf("backend %s does not support independent keys", backend)
	}
	if _, ok := r.(KeyedResourceClient); !ok {
		return fmt.Errorf("resource %s does not support independent keys", resource)
	}
	return nil
}
