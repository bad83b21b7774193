// Package etcd is the "etcd" lock backend: a lease lock built on etcd's
// concurrency.Session and concurrency.Mutex, and an embedded etcd cluster (StartCluster)
// the harness can fault from the inside (peer partitions, stalls, crashes).
//
// # Why the lock key's CreateRevision is a valid fencing token
//
// concurrency.Mutex puts one key per waiter, "<LockKey>/<lease id>", attached to the
// waiter's session lease; the owner is the waiter whose key has the smallest
// CreateRevision. The token a Lease carries is that key's CreateRevision (the mutex's
// "myRev"), and it has every property fencing needs:
//   - strictly increasing from holder to holder: a waiter becomes owner only after every
//     key with a smaller CreateRevision was deleted, and any key created later gets a
//     larger revision, because etcd's revision is one counter bumped by every write;
//   - linearizable: the revision is assigned when the put is applied from the Raft log,
//     and the lock is granted by a linearizable read (or by the put's own transaction);
//   - durable: it is part of the replicated, fsynced key-value state, so it survives
//     crashes and leader changes (a member that loses its data is replaced, not reused);
//   - from the same Raft log as the lock itself, so no second source of truth can
//     disagree with the lock's own order.
//
// The header revision (TokenHeaderRevision) is the store's revision when the grant was
// observed; it is also strictly increasing from holder to holder (the next grant is
// observed after the previous holder's key was deleted, at a larger revision), but it
// does not identify the lock key, so the etcd-txn resource still compares CreateRevision.
//
// # What a leader change does to leases
//
// Lease expiry is decided by the leader's clock alone. When a member becomes leader it
// calls lessor.Promote(election timeout), which resets every lease's expiry to now + its
// full TTL (or its last checkpointed remainder, with the off-by-default LeaseCheckpoint
// feature) + the election timeout. So a leader change never shortens a lease and
// usually lengthens it well past what its holder's keep-alives last promised. The client's own belief (Lost) runs on the client's
// clock and fires when no keep-alive answer arrived for a TTL, so after a leader change
// a client may think its lease gone while the server still keeps it: mutual exclusion
// by lease is unsafe in both directions, and only the fencing token makes writes safe.
//
// The server raises any TTL below ceil(1.5 × election timeout) to that minimum (whole
// seconds), which is why Config rejects TTLs that are not whole seconds or below 1s.
package etcd
