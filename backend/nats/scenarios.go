package nats

import (
	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/harness/nemesis/faults"
	"github.com/fencecheck/fencecheck/spec"
)

// Scenarios are the catalogue's scenarios of the nats backend: Debian's nats-server with
// JetStream, so node faults are real signals (SIGSTOP, SIGKILL) with PIDs in the fault's
// detail.
func Scenarios() []catalogue.Scenario {
	unsafe := catalogue.Unsafe()
	safe := catalogue.Safe()
	return []catalogue.Scenario{
		{
			Spec:   spec.Spec{Name: "nats-unfenced-pause", Backend: "nats", Resource: "unfenced", Faults: []string{faults.Pause}},
			About:  "a real nats-server, JetStream KV: the paused holder stops its Updates, the bucket's MaxAge expires the key, the next holder writes, the late write overwrites it",
			Expect: unsafe,
		},
		{
			Spec:   spec.Spec{Name: "nats-fenced-pause", Backend: "nats", Resource: "fenced", Faults: []string{faults.Pause}},
			About:  "the same pause against a fenced register: the key's revision at grant is older than the next holder's, and the late write is refused",
			Expect: safe,
		},
		{
			Spec:   spec.Spec{Name: "nats-fenced-crash", Backend: "nats", Resource: "fenced", Faults: []string{faults.Crash}},
			About:  "nats-server is SIGKILLed and restarted with its file store while the holder is paused: the stream sequence (the token) keeps rising",
			Expect: safe,
			Check:  catalogue.NodeFaultsSignalled,
		},
		{
			Spec:   spec.Spec{Name: "nats-fenced-node-pause", Backend: "nats", Resource: "fenced", Faults: []string{faults.NodePause}},
			About:  "nats-server is SIGSTOPped for 2×TTL while the holder is paused; on SIGCONT its keys are past their MaxAge and the next holder's revision is newer",
			Expect: safe,
			Check:  catalogue.NodeFaultsSignalled,
		},
	}
}
