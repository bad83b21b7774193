package etcd

import (
	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/harness/nemesis/faults"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/spec"
)

// Scenarios are the catalogue's scenarios of the etcd backend (and its native resource, etcd-txn): each names a run and the verdicts
// it must give (the catalogue's test runs them; docs/expected-verdicts.md is generated
// from them).
func Scenarios() []catalogue.Scenario {
	unsafe := catalogue.Unsafe()
	safe := catalogue.Safe()
	return []catalogue.Scenario{
		// etcd: concurrency.Mutex on an embedded cluster; token = the lock key's CreateRevision.
		{
			Spec:   spec.Spec{Name: "etcd-unfenced-pause", Backend: "etcd", Resource: "unfenced", Faults: []string{faults.Pause}},
			About:  "an etcd lock holder pauses past its lease's TTL (keep-alives stall with it); its late write overwrites the next holder's",
			Expect: unsafe,
		},
		{
			Spec:   spec.Spec{Name: "etcd-fenced-pause", Backend: "etcd", Resource: "fenced", Faults: []string{faults.Pause}},
			About:  "the same pause against a fenced register: the CreateRevision token of the paused holder is older and refused",
			Expect: safe,
		},
		{
			Spec:   spec.Spec{Name: "etcd-toctou-pause", Backend: "etcd", Resource: "toctou", Faults: []string{faults.Pause}},
			About:  "check-then-write with etcd tokens: the pause between check and write defeats the check",
			Expect: unsafe,
		},
		{
			Spec:   spec.Spec{Name: "etcd-txn-pause", Backend: "etcd", Resource: "etcd-txn", Faults: []string{faults.Pause}},
			About:  "etcd as the store, each write one txn guarded on the lock key's CreateRevision: the paused holder's write fails its guard",
			Expect: safe,
		},
		{
			Spec:   spec.Spec{Name: "etcd-fenced-delay", Backend: "etcd", Resource: "fenced", Faults: []string{faults.Delay}},
			About:  "an etcd holder's write is held in the network past its lease; the fence refuses it on arrival",
			Expect: catalogue.Safe().Unchecked(models.Mutex),
		},
		{
			Spec:   spec.Spec{Name: "etcd-unfenced-delay", Backend: "etcd", Resource: "unfenced", Faults: []string{faults.Delay}},
			About:  "the delayed write lands after the next etcd holder's write and overwrites it",
			Expect: catalogue.Unsafe().Unchecked(models.Mutex),
		},
		{
			Spec:   spec.Spec{Name: "etcd3-fenced-leader-isolation", Backend: "etcd", Members: 3, Resource: "fenced", Faults: []string{faults.LeaderIsolation, faults.Pause}},
			About:  "3 etcd members: the leader is cut off while the holder is paused; a new leader grants the lock, and the fence still refuses the old holder",
			Expect: safe,
		},
		{
			Spec:   spec.Spec{Name: "etcd3-fenced-node-pause", Backend: "etcd", Members: 3, Resource: "fenced", Faults: []string{faults.NodePause, faults.Pause}},
			About:  "3 etcd members: the leader's links all stall while the holder is paused; tokens stay monotonic across the leader change",
			Expect: safe,
		},
	}
}
