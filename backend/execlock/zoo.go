package execlock

import (
	"time"

	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/harness/nemesis/faults"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/spec"
)

// Zoo is the exec backend's entries in the bug zoo: what users of the lock libraries
// whose examples ship with it reported, on the real library and server.
func Zoo() []catalogue.Bug {
	curator := map[string]string{"client-cmd": `sh "$FENCECHECK_EXAMPLES/curator_lock.sh"`, "lock-service": "zookeeper"}
	run := func(policy string) spec.Spec {
		return spec.Spec{Backend: "exec", Options: curator, Resource: "unfenced", Policy: policy, Faults: []string{faults.Partition}, TTL: time.Second}
	}
	return []catalogue.Bug{
		{
			ID:  "curator-727",
			Ref: "apache/curator#727 (CURATOR-206)", URL: "https://github.com/apache/curator/issues/727",
			Pain: "two clients held the same InterProcessMutex: the holder's network was cut until its session expired, " +
				"and its thread was not interrupted — it went on as the holder while another client acquired the lock",
			Software: "Apache Curator 5.4.0 InterProcessMutex (Java 17) against ZooKeeper 3.8.0",
			Source:   "Debian libcurator-recipes-java, openjdk-17-jdk-headless and zookeeper",
			Affected: "every Curator version: by design the lock does not interrupt its holder; the application must act on the connection state (SUSPENDED, LOST)",
			ByOthers: true,
			Property: models.Heed,
			Spec:     run(""),
			Control:  run(spec.PolicyHeeding),
			ControlIs: "the application stops acting once Curator's connection state says SUSPENDED or LOST " +
				"(the heeding client), as Curator's documentation asks",
			Shows: catalogue.WroteAfterToldLost,
		},
	}
}

// Untried is what users of these libraries reported that the zoo does not reproduce
// yet, and why.
func Untried() []catalogue.Untried {
	return []catalogue.Untried{
		{
			Ref: "apache/curator#1121 (CURATOR-604)", URL: "https://github.com/apache/curator/issues/1121",
			Pain: "after its session expired and it reconnected with a new one, a client's acquire trusted the previous session's lock node, which the server had not deleted yet: two holders",
			Why:  "a race between the server's deletion of an expired session's nodes and the client's next acquire; no fault here makes the client acquire inside that window on purpose, and a schedule that hits it by chance is not a reproduction",
		},
		{
			Ref: "apache/curator#1193 (CURATOR-678)", URL: "https://github.com/apache/curator/issues/1193",
			Pain: "a release() that met a connection loss forgot the lock locally but left its node in ZooKeeper: every later acquire blocked (open in Curator 5.4.0, the version here)",
			Why:  "a liveness bug (the lock stays unobtainable with its holder gone), which none of fencecheck's properties checks yet, and it needs the connection cut during the release, where no fault strikes yet",
		},
	}
}
