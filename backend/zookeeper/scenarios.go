package zookeeper

import (
	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/harness/nemesis/faults"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/spec"
)

// Scenarios are the catalogue's scenarios of Debian's ZooKeeper:
// real JVMs, so node faults are real signals (SIGSTOP, SIGKILL) and skew is a real fast
// server clock (libfaketime). The tests skip them when ZooKeeper is not installed.
// Mutex is left unchecked: as measured, these runs assert register, updates and tokens.
func Scenarios() []catalogue.Scenario {
	unsafe := catalogue.Unsafe().Unchecked(models.Mutex)
	safe := catalogue.Safe().Unchecked(models.Mutex)
	return []catalogue.Scenario{
		{
			Spec:   spec.Spec{Name: "zookeeper-unfenced-pause", Backend: "zookeeper", Resource: "unfenced", Faults: []string{faults.Pause}},
			About:  "a ZooKeeper lock holder pauses past its session timeout (its pings stall with it); the server deletes its ephemeral znode and its late write overwrites the next holder's",
			Expect: unsafe,
		},
		{
			Spec:   spec.Spec{Name: "zookeeper-fenced-pause", Backend: "zookeeper", Resource: "fenced", Faults: []string{faults.Pause}},
			About:  "the same pause against a fenced register: the paused holder's czxid is older and refused",
			Expect: safe,
		},
		{
			Spec:   spec.Spec{Name: "zookeeper-fenced-crash", Backend: "zookeeper", Resource: "fenced", Faults: []string{faults.Crash, faults.Pause}},
			About:  "the standalone server is killed (SIGKILL) while the holder is paused and restarts with its data: sessions and czxids survive, the fence refuses the old holder",
			Expect: catalogue.Expect{Verdicts: catalogue.Verdicts(catalogue.Held, catalogue.Any, catalogue.Held, catalogue.Any), MinStaleRejected: 1, NoStaleAccepted: true},
			// The fault names the server, its PID and the real signal (or the real fast clock).
			Check: catalogue.Detail(faults.Crash, "the only server (pid ", "SIGKILL", "restarted at once"),
		},
		{
			Spec:   spec.Spec{Name: "zookeeper-unfenced-skew", Backend: "zookeeper", Resource: "unfenced", Faults: []string{faults.Skew, faults.Pause}},
			About:  "the server's clock runs 2x fast (libfaketime): it expires the holder's session during a pause shorter than the timeout by the client's clock",
			Expect: catalogue.Expect{Verdicts: catalogue.Verdicts(catalogue.Violated, catalogue.Any, catalogue.Held, catalogue.Any), MinStaleAccepted: 1},
			// The fault names the server, its PID and the real signal (or the real fast clock).
			Check: catalogue.Detail(faults.Skew, "the only server (pid ", "2x fast"),
		},
		{
			Spec:   spec.Spec{Name: "zookeeper3-unfenced-node-pause", Backend: "zookeeper", Members: 3, Resource: "unfenced", Faults: []string{faults.NodePause, faults.Pause}},
			About:  "3 ZooKeeper servers: the leader's JVM is stopped (SIGSTOP) while the holder is paused; a new leader expires the session and the late write overwrites the next holder's",
			Expect: catalogue.Expect{Verdicts: catalogue.Verdicts(catalogue.Violated, catalogue.Any, catalogue.Held, catalogue.Any), MinStaleAccepted: 1},
			// The fault names the server, its PID and the real signal (or the real fast clock).
			Check: catalogue.Detail(faults.NodePause, "leader node ", "(pid ", "SIGSTOP", "SIGCONT"),
		},
		{
			Spec:   spec.Spec{Name: "zookeeper3-fenced-node-pause", Backend: "zookeeper", Members: 3, Resource: "fenced", Faults: []string{faults.NodePause, faults.Pause}},
			About:  "the same stopped leader against a fenced register: czxids carry the new leader's epoch, so the old holder's token is refused",
			Expect: safe,
			// The fault names the server, its PID and the real signal (or the real fast clock).
			Check: catalogue.Detail(faults.NodePause, "leader node ", "(pid ", "SIGSTOP"),
		},
		{
			Spec:   spec.Spec{Name: "zookeeper3-fenced-crash", Backend: "zookeeper", Members: 3, Resource: "fenced", Faults: []string{faults.Crash, faults.Pause}},
			About:  "3 ZooKeeper servers: the leader is killed (SIGKILL) while the holder is paused and restarts with its data when the pause heals; tokens keep increasing",
			Expect: safe,
			// The fault names the server, its PID and the real signal (or the real fast clock).
			Check: catalogue.Detail(faults.Crash, "leader node ", "(pid ", "SIGKILL"),
		},
		{
			Spec:   spec.Spec{Name: "zookeeper3-fenced-leader-isolation", Backend: "zookeeper", Members: 3, Resource: "fenced", Faults: []string{faults.LeaderIsolation, faults.Pause}},
			About:  "3 ZooKeeper servers: the leader is cut off from its peers while the holder is paused; a new leader grants the lock, and the fence refuses the old holder",
			Expect: safe,
		},
	}
}
