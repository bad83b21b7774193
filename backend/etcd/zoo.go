package etcd

import (
	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/harness/nemesis/faults"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/spec"
)

// Zoo is the etcd lock's entries in the bug zoo: what etcd users reported of
// concurrency.Mutex, reproduced on embedded etcd.
func Zoo() []catalogue.Bug {
	const software = "etcd v3.7.3, client v3 concurrency.Mutex"
	const source = "embedded in fencecheck (go.etcd.io/etcd/server/v3)"
	return []catalogue.Bug{
		{
			ID:  "etcd-11457",
			Ref: "etcd-io/etcd#11457", URL: "https://github.com/etcd-io/etcd/issues/11457",
			Pain:     "Jepsen's read-modify-write workload under a process pause lost updates through etcd's lock: the holder stalled past its lease, the next holder updated, the stalled one wrote back an old value",
			Software: software, Source: source,
			Affected: "every version: a lease lock cannot exclude a paused holder; etcd's docs since name the lock key's revision as the guard",
			ByOthers: true,
			Property: models.Updates,
			Spec:     spec.Spec{Backend: "etcd", Resource: "unfenced", Faults: []string{faults.Pause}},
			Control:  spec.Spec{Backend: "etcd", Resource: "etcd-txn", Faults: []string{faults.Pause}},
			ControlIs: "each write one etcd txn guarded on the lock key's CreateRevision, as etcd's documentation " +
				"recommends since this report",
			Shows: catalogue.LateWriteOfStruck(faults.Pause),
		},
		{
			ID:  "etcd-10811",
			Ref: "etcd-io/etcd#10811", URL: "https://github.com/etcd-io/etcd/issues/10811",
			Pain:     "a Mutex held by two clients after the holder's network to etcd broke: etcd expired its lease and granted the lock on, while the holder went on writing",
			Software: software, Source: source,
			Affected:  "every version (answered as expected behaviour: use the lock's revision as a fencing token)",
			ByOthers:  true,
			Property:  models.Register,
			Spec:      spec.Spec{Backend: "etcd", Resource: "unfenced", Faults: []string{faults.Partition}},
			Control:   spec.Spec{Backend: "etcd", Resource: "fenced", Faults: []string{faults.Partition}},
			ControlIs: "the resource fences on the lock key's CreateRevision",
			Shows:     catalogue.LateWriteOfStruck(faults.Partition),
		},
	}
}

// Untried is what etcd users reported that the zoo does not reproduce yet, and why.
func Untried() []catalogue.Untried {
	return []catalogue.Untried{
		{
			Ref: "etcd-io/etcd#11456", URL: "https://github.com/etcd-io/etcd/issues/11456",
			Pain: "concurrency.Mutex.Lock returned success without checking that its session's lease was still alive (client v3.4.3; found by Jepsen's pause nemesis)",
			Why:  "fixed in the client this backend embeds (v3.7.3); reproducing it needs the v3.4.3 client built in a module of its own as a client host, which is not built yet",
		},
		{
			Ref: "etcd-io/etcd#22082", URL: "https://github.com/etcd-io/etcd/issues/22082",
			Pain: "a retried Unlock whose first attempt had already succeeded deletes a newer lock key taken in the same session",
			Why:  "needs a fault that duplicates one client request (a retry after a lost reply); the fault proxy delays, drops and cuts connections but does not replay a request yet",
		},
	}
}
