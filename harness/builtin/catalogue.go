package builtin

import (
	"slices"
	"time"

	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/spec"
)

// Catalogue returns every named scenario of the built-in backends and resources, in a
// stable order.
func Catalogue() catalogue.Catalogue {
	unsafe := catalogue.Unsafe()
	safe := catalogue.Safe()
	return append([]catalogue.Scenario{
		{
			Spec:   spec.Spec{Name: "naive-unfenced-pause", Backend: "naive", Resource: "unfenced", Faults: []string{"pause"}},
			About:  "the holder pauses after its read for longer than the TTL; its late write overwrites the next holder's (Kleppmann's GC pause)",
			Expect: unsafe,
		},
		{
			Spec:   spec.Spec{Name: "naive-fenced-pause", Backend: "naive", Resource: "fenced", Faults: []string{"pause"}},
			About:  "the same pause against a fenced register: the late write carries an old token and is refused",
			Expect: safe,
		},
		{
			Spec:   spec.Spec{Name: "naive-fenced-monotonic-pause", Backend: "naive", Resource: "fenced", Fence: "monotonic", Faults: []string{"pause"}},
			About:  "the pause against a register that accepts token >= stored: the older token is still refused",
			Expect: safe,
		},
		{
			Spec:   spec.Spec{Name: "naive-toctou-pause", Backend: "naive", Resource: "toctou", Faults: []string{"pause"}},
			About:  "the holder checks the token, pauses between check and write, then writes unconditionally: the check was stale",
			Expect: unsafe,
		},
		{
			Spec:  spec.Spec{Name: "naive-unfenced-pause-before-read", Backend: "naive", Resource: "unfenced", Faults: []string{"pause-before-read"}},
			About: "the holder pauses before its read: its write goes back in token order (register broken) but it read the newest value, so no update is lost",
			Expect: catalogue.Expect{
				Verdicts:         catalogue.Verdicts(catalogue.Violated, catalogue.Held, catalogue.Held, catalogue.Violated),
				MinStaleAccepted: 1,
			},
		},
		{
			Spec:   spec.Spec{Name: "naive-fenced-delay", Backend: "naive", Resource: "fenced", Faults: []string{"delay"}},
			About:  "the holder's write is held in the network until its lease expired and another write was accepted; the fence refuses it on arrival",
			Expect: catalogue.Expect{Verdicts: catalogue.Verdicts(catalogue.Held, catalogue.Held, catalogue.Held, catalogue.Any), MinStaleRejected: 1, NoStaleAccepted: true},
		},
		{
			Spec:   spec.Spec{Name: "naive-unfenced-delay", Backend: "naive", Resource: "unfenced", Faults: []string{"delay"}},
			About:  "the delayed write lands after the next holder's write and overwrites it",
			Expect: catalogue.Expect{Verdicts: catalogue.Verdicts(catalogue.Violated, catalogue.Violated, catalogue.Held, catalogue.Any), MinStaleAccepted: 1},
		},

		// Crashes, clocks and narrow counters: the lock service itself goes wrong.
		{
			Spec:  spec.Spec{Name: "naive-fenced-monotonic-crash", Backend: "naive", Resource: "fenced", Fence: "monotonic", Faults: []string{"crash"}},
			About: "the lock server crashes while the holder is paused and restarts with its in-memory counter back at 0; under a token >= stored fence a reused token overwrites an update",
			Expect: catalogue.Expect{
				Verdicts:         catalogue.Verdicts(catalogue.Held, catalogue.Violated, catalogue.Violated, catalogue.Violated),
				MinStaleRejected: 1,
			},
		},
		{
			Spec:  spec.Spec{Name: "naive-fenced-crash", Backend: "naive", Resource: "fenced", Faults: []string{"crash"}},
			About: "the same crash under a token > stored fence: reused tokens are refused, so the data is safe, but writes are refused until the counter catches up",
			Expect: catalogue.Expect{
				Verdicts:         catalogue.Verdicts(catalogue.Held, catalogue.Held, catalogue.Violated, catalogue.Violated),
				MinStaleRejected: 2, NoStaleAccepted: true,
			},
		},
		{
			Spec:   spec.Spec{Name: "naive-persisted-fenced-crash", Backend: "naive-persisted", Resource: "fenced", Faults: []string{"crash"}},
			About:  "the counter is persisted with fsync before each grant: after the crash tokens go on increasing and the paused holder's write is refused",
			Expect: catalogue.Expect{Verdicts: catalogue.Verdicts(catalogue.Held, catalogue.Held, catalogue.Held, catalogue.Any), MinStaleRejected: 1, NoStaleAccepted: true},
		},
		{
			Spec:   spec.Spec{Name: "naive-wallclock-fenced-clock-jump", Backend: "naive-wallclock", Resource: "fenced", Faults: []string{"clock-jump"}},
			About:  "tokens are the server's wall clock; it steps back while the holder is paused, so the next holder gets an older token than the paused one, whose late write then overwrites it",
			Expect: catalogue.Expect{Verdicts: catalogue.Verdicts(catalogue.Held, catalogue.Violated, catalogue.Violated, catalogue.Any)},
		},
		{
			Spec:   spec.Spec{Name: "naive-32bit-fenced", Backend: "naive-32bit", Resource: "fenced"},
			About:  "a 32-bit token counter wraps: every later token is older than the stored one, so the fence refuses every write from then on",
			Expect: catalogue.Expect{Verdicts: catalogue.Verdicts(catalogue.Held, catalogue.Held, catalogue.Violated, catalogue.Any), MinStaleRejected: 1, NoStaleAccepted: true},
		},
		{
			Spec:   spec.Spec{Name: "naive-unfenced-careful-pause", Backend: "naive", Resource: "unfenced", Policy: "careful", Faults: []string{"pause"}},
			About:  "a careful client checks its lease by its own clock right before writing, then pauses between the check and the write",
			Expect: unsafe,
		},
		{
			Spec:   spec.Spec{Name: "naive-fenced-careful-pause", Backend: "naive", Resource: "fenced", Policy: "careful", Faults: []string{"pause"}},
			About:  "the same careful client against a fenced register: the fence catches what the check missed",
			Expect: safe,
		},
		{
			Spec:   spec.Spec{Name: "naive-unfenced-careful-skew", Backend: "naive", Resource: "unfenced", Policy: "careful", TTL: time.Second, Faults: []string{"skew"}},
			About:  "the lock server's clock runs fast: it expires the lease while the careful client's own clock says there is time left",
			Expect: unsafe,
		},
		{
			Spec:   spec.Spec{Name: "raft-fenced-cluster-crash", Backend: "raft", Resource: "fenced", Faults: []string{"cluster-crash"}},
			About:  "every raft node crashes while the holder is paused and the service restarts with its logs: leases and tokens survive, the paused holder is refused",
			Expect: safe,
		},
		{
			Spec:   spec.Spec{Name: "raft-unfenced-careful-skew", Backend: "raft", Resource: "unfenced", Policy: "careful", TTL: time.Second, Faults: []string{"skew"}},
			About:  "the raft leader's clock runs fast: the lock FSM expires the lease while the careful client's own clock says there is time left",
			Expect: unsafe,
		},

		// etcd: concurrency.Mutex on an embedded cluster; token = the lock key's CreateRevision.
		{
			Spec:   spec.Spec{Name: "etcd-unfenced-pause", Backend: "etcd", Resource: "unfenced", Faults: []string{"pause"}},
			About:  "an etcd lock holder pauses past its lease's TTL (keep-alives stall with it); its late write overwrites the next holder's",
			Expect: unsafe,
		},
		{
			Spec:   spec.Spec{Name: "etcd-fenced-pause", Backend: "etcd", Resource: "fenced", Faults: []string{"pause"}},
			About:  "the same pause against a fenced register: the CreateRevision token of the paused holder is older and refused",
			Expect: safe,
		},
		{
			Spec:   spec.Spec{Name: "etcd-toctou-pause", Backend: "etcd", Resource: "toctou", Faults: []string{"pause"}},
			About:  "check-then-write with etcd tokens: the pause between check and write defeats the check",
			Expect: unsafe,
		},
		{
			Spec:   spec.Spec{Name: "etcd-txn-pause", Backend: "etcd", Resource: "etcd-txn", Faults: []string{"pause"}},
			About:  "etcd as the store, each write one txn guarded on the lock key's CreateRevision: the paused holder's write fails its guard",
			Expect: safe,
		},
		{
			Spec:   spec.Spec{Name: "etcd-fenced-delay", Backend: "etcd", Resource: "fenced", Faults: []string{"delay"}},
			About:  "an etcd holder's write is held in the network past its lease; the fence refuses it on arrival",
			Expect: catalogue.Expect{Verdicts: catalogue.Verdicts(catalogue.Held, catalogue.Held, catalogue.Held, catalogue.Any), MinStaleRejected: 1, NoStaleAccepted: true},
		},
		{
			Spec:   spec.Spec{Name: "etcd-unfenced-delay", Backend: "etcd", Resource: "unfenced", Faults: []string{"delay"}},
			About:  "the delayed write lands after the next etcd holder's write and overwrites it",
			Expect: catalogue.Expect{Verdicts: catalogue.Verdicts(catalogue.Violated, catalogue.Violated, catalogue.Held, catalogue.Any), MinStaleAccepted: 1},
		},
		{
			Spec:   spec.Spec{Name: "etcd3-fenced-leader-isolation", Backend: "etcd", Members: 3, Resource: "fenced", Faults: []string{"leader-isolation", "pause"}},
			About:  "3 etcd members: the leader is cut off while the holder is paused; a new leader grants the lock, and the fence still refuses the old holder",
			Expect: safe,
		},
		{
			Spec:   spec.Spec{Name: "etcd3-fenced-node-pause", Backend: "etcd", Members: 3, Resource: "fenced", Faults: []string{"node-pause", "pause"}},
			About:  "3 etcd members: the leader's links all stall while the holder is paused; tokens stay monotonic across the leader change",
			Expect: safe,
		},

		// raft: the hashicorp/raft lock service; token = log index of the acquire entry.
		{
			Spec:   spec.Spec{Name: "raft-unfenced-pause", Backend: "raft", Resource: "unfenced", Faults: []string{"pause"}},
			About:  "a raft lock holder pauses past its TTL; its late write overwrites the next holder's",
			Expect: unsafe,
		},
		{
			Spec:   spec.Spec{Name: "raft-fenced-pause", Backend: "raft", Resource: "fenced", Faults: []string{"pause"}},
			About:  "the same pause against a fenced register: the log-index token of the paused holder is older and refused",
			Expect: safe,
		},
		{
			Spec:   spec.Spec{Name: "raft-toctou-pause", Backend: "raft", Resource: "toctou", Faults: []string{"pause"}},
			About:  "check-then-write with raft tokens: the pause between check and write defeats the check",
			Expect: unsafe,
		},
		{
			Spec:   spec.Spec{Name: "raft-fenced-leader-isolation", Backend: "raft", Resource: "fenced", Faults: []string{"leader-isolation", "pause"}},
			About:  "3 raft nodes: the leader is cut off while the holder is paused; the new leader grants higher log indexes and the fence refuses the old holder",
			Expect: safe,
		},
		{
			Spec:   spec.Spec{Name: "raft-fenced-node-pause", Backend: "raft", Resource: "fenced", Faults: []string{"node-pause", "pause"}},
			About:  "3 raft nodes: the leader's links all stall while the holder is paused",
			Expect: safe,
		},
		{
			Spec:   spec.Spec{Name: "raft-fenced-crash", Backend: "raft", Resource: "fenced", Faults: []string{"crash", "pause"}},
			About:  "3 raft nodes: the leader crashes while the holder is paused and restarts with its log; tokens keep increasing",
			Expect: safe,
		},
	}, slices.Concat(databaseScenarios(), // sqlite and postgres: catalogue_db.go
		zookeeperScenarios(), // catalogue_zookeeper.go
		serviceScenarios(),   // redis, redlock, nats: catalogue_services.go
		execScenarios(),      // your own lock client: catalogue_exec.go
		dbLockScenarios(),    // database locks: catalogue_dblocks.go
		kubeScenarios())...)  // Kubernetes leases: catalogue_kube.go
}
