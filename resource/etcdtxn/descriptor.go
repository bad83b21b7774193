package etcdtxn

import (
	"context"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/registry"
)

// Descriptor returns the registry entry of the etcd-txn resource: native to the etcd
// backend (it lists it in its Native resources), on that backend's own servers.
func Descriptor() registry.Resource {
	return registry.Resource{
		Name:       "etcd-txn",
		Meaning:    "etcd itself is the store: one txn writes only while the lock key's CreateRevision is still the writer's token (etcd backend only)",
		NeedsToken: true,
		NativeOnly: true,
		Advice:     "With etcd as the store (etcd-txn), guard each write in the same transaction on the lock key's CreateRevision still being the writer's.",
		Start: func(_ context.Context, env registry.ResourceEnv) (harness.Resource, error) {
			r := New(env.Backend.Endpoints())
			if p, ok := env.Backend.(interface{ KeyPrefix() string }); ok {
				r.Prefix = p.KeyPrefix() // the backend's Close deletes the register with the lock
			}
			return r, nil
		},
	}
}
