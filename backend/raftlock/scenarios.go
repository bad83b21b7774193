package raftlock

import (
	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/harness/nemesis/faults"
	"github.com/fencecheck/fencecheck/spec"
)

// Scenarios are the catalogue's scenarios of the raft backend: each names a run and the verdicts
// it must give (the catalogue's test runs them; docs/expected-verdicts.md is generated
// from them).
func Scenarios() []catalogue.Scenario {
	unsafe := catalogue.Unsafe()
	safe := catalogue.Safe()
	return []catalogue.Scenario{
		{
			Spec:   spec.Spec{Name: "raft-fenced-cluster-crash", Backend: "raft", Resource: "fenced", Faults: []string{faults.ClusterCrash}},
			About:  "every raft node crashes while the holder is paused and the service restarts with its logs: leases and tokens survive, the paused holder is refused",
			Expect: safe,
		},
		// The TTL is the catalogue's SkewTTL: the takeover must fit in the careful holder's
		// own estimate, in real time.
		{
			Spec:   spec.Spec{Name: "raft-unfenced-careful-skew", Backend: "raft", Resource: "unfenced", Policy: spec.PolicyCareful, TTL: catalogue.SkewTTL, Faults: []string{faults.Skew}},
			About:  "the raft leader's clock runs fast: the lock FSM expires the lease while the careful client's own clock says there is time left",
			Expect: unsafe,
		},
		// raft: the hashicorp/raft lock service; token = log index of the acquire entry.
		{
			Spec:   spec.Spec{Name: "raft-unfenced-pause", Backend: "raft", Resource: "unfenced", Faults: []string{faults.Pause}},
			About:  "a raft lock holder pauses past its TTL; its late write overwrites the next holder's",
			Expect: unsafe,
		},
		{
			Spec:   spec.Spec{Name: "raft-fenced-pause", Backend: "raft", Resource: "fenced", Faults: []string{faults.Pause}},
			About:  "the same pause against a fenced register: the log-index token of the paused holder is older and refused",
			Expect: safe,
		},
		{
			Spec:   spec.Spec{Name: "raft-toctou-pause", Backend: "raft", Resource: "toctou", Faults: []string{faults.Pause}},
			About:  "check-then-write with raft tokens: the pause between check and write defeats the check",
			Expect: unsafe,
		},
		{
			Spec:   spec.Spec{Name: "raft-fenced-leader-isolation", Backend: "raft", Resource: "fenced", Faults: []string{faults.LeaderIsolation, faults.Pause}},
			About:  "3 raft nodes: the leader is cut off while the holder is paused; the new leader grants higher log indexes and the fence refuses the old holder",
			Expect: safe,
		},
		{
			Spec:   spec.Spec{Name: "raft-fenced-node-pause", Backend: "raft", Resource: "fenced", Faults: []string{faults.NodePause, faults.Pause}},
			About:  "3 raft nodes: the leader's links all stall while the holder is paused",
			Expect: safe,
		},
		{
			Spec:   spec.Spec{Name: "raft-fenced-crash", Backend: "raft", Resource: "fenced", Faults: []string{faults.Crash, faults.Pause}},
			About:  "3 raft nodes: the leader crashes while the holder is paused and restarts with its log; tokens keep increasing",
			Expect: safe,
		},
	}
}
