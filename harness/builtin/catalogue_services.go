package builtin

import (
	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/spec"
)

// serviceScenarios are the scenarios of the real-server lock services redis,
// redis-volatile, redis-notoken, redlock and nats (harness/lease/{redis,redlock,nats}):
// Debian's redis-server and nats-server, so node faults are real signals (SIGSTOP,
// SIGKILL) with PIDs in the fault's detail. The tests skip them when the server is not
// installed. A backend without a token (redis-notoken, redlock) has tokens catalogue.Violated by
// declaration (history.Run.NoToken) and runs only unfenced: fenced runs are refused.
func serviceScenarios() []catalogue.Scenario {
	unsafe := catalogue.Unsafe()
	safe := catalogue.Safe()
	return []catalogue.Scenario{
		{
			Spec:   spec.Spec{Name: "redis-unfenced-pause", Backend: "redis", Resource: "unfenced", Faults: []string{"pause"}},
			About:  "a real redis-server, SET NX PX: the paused holder's key expires, the next holder writes, the late write overwrites it",
			Expect: unsafe,
		},
		{
			Spec:   spec.Spec{Name: "redis-fenced-pause", Backend: "redis", Resource: "fenced", Faults: []string{"pause"}},
			About:  "the same pause against a fenced register: the INCR token taken with the grant is older, and the late write is refused",
			Expect: safe,
		},
		{
			Spec:   spec.Spec{Name: "redis-fenced-crash", Backend: "redis", Resource: "fenced", Faults: []string{"crash"}},
			About:  "redis-server is SIGKILLed and restarted with its AOF while the holder is paused: the lock key and the counter survive, tokens keep rising",
			Expect: safe,
		},
		{
			Spec:  spec.Spec{Name: "redis-volatile-fenced-crash", Backend: "redis-volatile", Resource: "fenced", Faults: []string{"crash"}},
			About: "redis-server without persistence (--save '') is SIGKILLed and restarted: the counter starts again at 1, tokens are reused, and the fence refuses every new holder",
			Expect: catalogue.Expect{
				Verdicts:        catalogue.Verdicts(catalogue.Held, catalogue.Any, catalogue.Violated, catalogue.Any),
				NoStaleAccepted: true,
			},
		},
		{
			Spec:   spec.Spec{Name: "redis-fenced-node-pause", Backend: "redis", Resource: "fenced", Faults: []string{"node-pause"}},
			About:  "redis-server is SIGSTOPped for 2×TTL while the holder is paused; on SIGCONT the key has expired by the wall clock and the next holder's token is newer",
			Expect: safe,
		},
		{
			Spec:   spec.Spec{Name: "redis-unfenced-node-pause", Backend: "redis", Resource: "unfenced", Faults: []string{"node-pause"}},
			About:  "redis-server is SIGSTOPped for 2×TTL while the holder is paused; on SIGCONT the key has expired by the wall clock, the next holder writes, the late write overwrites it",
			Expect: unsafe,
		},
		{
			Spec:  spec.Spec{Name: "redis-notoken-unfenced-pause", Backend: "redis-notoken", Resource: "unfenced", Faults: []string{"pause"}},
			About: "the redis lock with no token at all: nothing can fence the paused holder's late write",
			Expect: catalogue.Expect{
				Verdicts:         catalogue.Verdicts(catalogue.Violated, catalogue.Violated, catalogue.Violated, catalogue.Violated),
				MinStaleAccepted: 1,
			},
		},
		{
			Spec:   spec.Spec{Name: "nats-unfenced-pause", Backend: "nats", Resource: "unfenced", Faults: []string{"pause"}},
			About:  "a real nats-server, JetStream KV: the paused holder stops its Updates, the bucket's MaxAge expires the key, the next holder writes, the late write overwrites it",
			Expect: unsafe,
		},
		{
			Spec:   spec.Spec{Name: "nats-fenced-pause", Backend: "nats", Resource: "fenced", Faults: []string{"pause"}},
			About:  "the same pause against a fenced register: the key's revision at grant is older than the next holder's, and the late write is refused",
			Expect: safe,
		},
		{
			Spec:   spec.Spec{Name: "nats-fenced-crash", Backend: "nats", Resource: "fenced", Faults: []string{"crash"}},
			About:  "nats-server is SIGKILLed and restarted with its file store while the holder is paused: the stream sequence (the token) keeps rising",
			Expect: safe,
		},
		{
			Spec:   spec.Spec{Name: "nats-fenced-node-pause", Backend: "nats", Resource: "fenced", Faults: []string{"node-pause"}},
			About:  "nats-server is SIGSTOPped for 2×TTL while the holder is paused; on SIGCONT its keys are past their MaxAge and the next holder's revision is newer",
			Expect: safe,
		},
		{
			Spec:  spec.Spec{Name: "redlock-unfenced-pause", Backend: "redlock", Resource: "unfenced", Faults: []string{"pause"}},
			About: "Redlock over 3 redis-servers: the paused holder's keys expire on every node, the next holder writes, the late write overwrites it; no token could have stopped it",
			Expect: catalogue.Expect{
				Verdicts:         catalogue.Verdicts(catalogue.Violated, catalogue.Violated, catalogue.Violated, catalogue.Violated),
				MinStaleAccepted: 1,
			},
		},
		{
			Spec:  spec.Spec{Name: "redlock-unfenced-node-pause", Backend: "redlock", Resource: "unfenced", Faults: []string{"node-pause"}},
			About: "a majority of Redlock's servers is SIGSTOPped for 2×TTL while the holder is paused; on SIGCONT the key has expired on them, the next holder is granted the lock and the late write overwrites it",
			Expect: catalogue.Expect{
				Verdicts:         catalogue.Verdicts(catalogue.Violated, catalogue.Violated, catalogue.Violated, catalogue.Violated),
				MinStaleAccepted: 1,
			},
		},
		{
			Spec:  spec.Spec{Name: "redlock-unfenced-crash", Backend: "redlock", Resource: "unfenced", Faults: []string{"crash"}},
			About: "a majority of Redlock's servers (no persistence) is SIGKILLed and restarted while the holder is paused: they forget the lock and grant it again before the holder's validity ends",
			Expect: catalogue.Expect{
				Verdicts:         catalogue.Verdicts(catalogue.Violated, catalogue.Violated, catalogue.Violated, catalogue.Violated),
				MinStaleAccepted: 1,
			},
		},
	}
}
