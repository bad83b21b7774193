package redlock

import (
	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/harness/nemesis/faults"
	"github.com/fencecheck/fencecheck/spec"
)

// Scenarios are the catalogue's scenarios of Redlock over independent redis-servers:
// node faults strike a majority with real signals; without a token it has tokens
// violated by declaration (history.Run.NoToken) and runs only unfenced.
func Scenarios() []catalogue.Scenario {
	return []catalogue.Scenario{
		{
			Spec:   spec.Spec{Name: "redlock-unfenced-pause", Backend: "redlock", Resource: "unfenced", Faults: []string{faults.Pause}},
			About:  "Redlock over 3 redis-servers: the paused holder's keys expire on every node, the next holder writes, the late write overwrites it; no token could have stopped it",
			Expect: catalogue.NoToken(),
		},
		{
			Spec:   spec.Spec{Name: "redlock-unfenced-node-pause", Backend: "redlock", Resource: "unfenced", Faults: []string{faults.NodePause}},
			About:  "a majority of Redlock's servers is SIGSTOPped for 2×TTL while the holder is paused; on SIGCONT the key has expired on them, the next holder is granted the lock and the late write overwrites it",
			Expect: catalogue.NoToken(),
			Check:  catalogue.NodeFaultsSignalled,
		},
		{
			Spec:   spec.Spec{Name: "redlock-unfenced-crash", Backend: "redlock", Resource: "unfenced", Faults: []string{faults.Crash}},
			About:  "a majority of Redlock's servers (no persistence) is SIGKILLed and restarted while the holder is paused: they forget the lock and grant it again before the holder's validity ends",
			Expect: catalogue.NoToken(),
			Check:  catalogue.NodeFaultsSignalled,
		},
	}
}
