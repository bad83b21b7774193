package redis

import (
	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/harness/nemesis/faults"
	"github.com/fencecheck/fencecheck/spec"
)

// Scenarios are the catalogue's scenarios of the redis backends (redis, redis-volatile,
// redis-notoken): Debian's redis-server, so node faults are real signals (SIGSTOP,
// SIGKILL) with PIDs in the fault's detail. A backend without a token (redis-notoken) has
// tokens violated by declaration (history.Run.NoToken) and runs only unfenced.
func Scenarios() []catalogue.Scenario {
	unsafe := catalogue.Unsafe()
	safe := catalogue.Safe()
	return []catalogue.Scenario{
		{
			Spec:   spec.Spec{Name: "redis-unfenced-pause", Backend: "redis", Resource: "unfenced", Faults: []string{faults.Pause}},
			About:  "a real redis-server, SET NX PX: the paused holder's key expires, the next holder writes, the late write overwrites it",
			Expect: unsafe,
		},
		{
			Spec:   spec.Spec{Name: "redis-fenced-pause", Backend: "redis", Resource: "fenced", Faults: []string{faults.Pause}},
			About:  "the same pause against a fenced register: the INCR token taken with the grant is older, and the late write is refused",
			Expect: safe,
		},
		{
			Spec:   spec.Spec{Name: "redis-fenced-crash", Backend: "redis", Resource: "fenced", Faults: []string{faults.Crash}},
			About:  "redis-server is SIGKILLed and restarted with its AOF while the holder is paused: the lock key and the counter survive, tokens keep rising",
			Expect: safe,
			Check:  catalogue.NodeFaultsSignalled,
		},
		{
			Spec:  spec.Spec{Name: "redis-volatile-fenced-crash", Backend: "redis-volatile", Resource: "fenced", Faults: []string{faults.Crash}},
			About: "redis-server without persistence (--save '') is SIGKILLed and restarted: the counter starts again at 1, tokens are reused, and the fence refuses every new holder",
			Expect: catalogue.Expect{
				Verdicts:        catalogue.Verdicts(catalogue.Held, catalogue.Any, catalogue.Violated, catalogue.Any),
				NoStaleAccepted: true,
			},
			Check: catalogue.NodeFaultsSignalled,
		},
		{
			Spec:   spec.Spec{Name: "redis-fenced-node-pause", Backend: "redis", Resource: "fenced", Faults: []string{faults.NodePause}},
			About:  "redis-server is SIGSTOPped for 2×TTL while the holder is paused; on SIGCONT the key has expired by the wall clock and the next holder's token is newer",
			Expect: safe,
			Check:  catalogue.NodeFaultsSignalled,
		},
		{
			Spec:   spec.Spec{Name: "redis-unfenced-node-pause", Backend: "redis", Resource: "unfenced", Faults: []string{faults.NodePause}},
			About:  "redis-server is SIGSTOPped for 2×TTL while the holder is paused; on SIGCONT the key has expired by the wall clock, the next holder writes, the late write overwrites it",
			Expect: unsafe,
			Check:  catalogue.NodeFaultsSignalled,
		},
		{
			Spec:   spec.Spec{Name: "redis-notoken-unfenced-pause", Backend: "redis-notoken", Resource: "unfenced", Faults: []string{faults.Pause}},
			About:  "the redis lock with no token at all: nothing can fence the paused holder's late write",
			Expect: catalogue.NoToken(),
		},
	}
}
