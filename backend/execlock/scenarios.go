package execlock

import (
	"time"

	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/harness/nemesis/faults"
	"github.com/fencecheck/fencecheck/spec"
)

// Scenarios run the exec backend (your own lock client as a process of its own)
// with the shipped clients (backend/execlock/examples, which every run finds in
// $FENCECHECK_EXAMPLES): the Python template against the naive lock server, and the
// lock libraries teams use — Curator's InterProcessMutex and kazoo's Lock against the
// ZooKeeper fencecheck starts, redis-py's Lock against its redis-server. Pauses are
// real: SIGSTOP of the client's process group; a client-crash is a real SIGKILL; a crash
// is a real SIGKILL of the lock server. The tests skip each without its interpreter,
// JDK, library or server, naming the Debian package.
func Scenarios() []catalogue.Scenario {
	unsafe, safe := catalogue.Unsafe(), catalogue.Safe()
	template := map[string]string{"client-cmd": `python3 "$FENCECHECK_EXAMPLES/naive_http.py"`}
	scenarios := []catalogue.Scenario{
		{
			Spec:   spec.Spec{Name: "exec-unfenced-pause", Backend: "exec", Options: template, Resource: "unfenced", Faults: []string{faults.Pause}},
			About:  "the holder's lock client process is stopped with SIGSTOP past its TTL (its renewals stop too); its late write overwrites the next holder's",
			Expect: unsafe,
		},
		{
			Spec:   spec.Spec{Name: "exec-fenced-pause", Backend: "exec", Options: template, Resource: "fenced", Faults: []string{faults.Pause}},
			About:  "the same SIGSTOP pause; the token the client reported is refused by the fence",
			Expect: safe,
		},
		{
			Spec:   spec.Spec{Name: "exec-unfenced-client-crash", Backend: "exec", Options: template, Resource: "unfenced", Faults: []string{faults.ClientCrash}},
			About:  "the holder's lock client is killed with SIGKILL and replaced; the application writes later with the dead client's token, and it gets through",
			Expect: unsafe,
		},
		{
			Spec:   spec.Spec{Name: "exec-fenced-client-crash", Backend: "exec", Options: template, Resource: "fenced", Faults: []string{faults.ClientCrash}},
			About:  "the same SIGKILL; the old token is refused by the fence",
			Expect: safe,
		},
		{
			Spec:  spec.Spec{Name: "exec-fenced-crash", Backend: "exec", Options: template, Resource: "fenced", Faults: []string{faults.Crash}},
			About: "the naive lock server behind the exec clients crashes while the holder is paused and restarts with its counter back at 0: node faults reach the wrapped service; reused tokens are refused",
			Expect: catalogue.Expect{
				Verdicts:         catalogue.Verdicts(catalogue.Held, catalogue.Held, catalogue.Violated, catalogue.Violated),
				MinStaleRejected: 1, NoStaleAccepted: true,
			},
		},
	}
	return append(scenarios, libraryScenarios()...)
}

// libraryScenarios: what Curator's, kazoo's and redis-py's locks are worth, as measured
// (backend/execlock/doc.md). Curator and kazoo report the lock node's czxid; redis-py's
// Lock has no token and says so ("no_token"), so its tokens are violated by declaration
// and a fenced run of it is refused.
func libraryScenarios() []catalogue.Scenario {
	unsafe, safe := catalogue.Unsafe(), catalogue.Safe()
	// The examples as --client-cmd. The ZooKeeper clients run at a 1 s session timeout,
	// which a JVM's and kazoo's pings keep on a loaded machine (at the ZooKeeper
	// backend's 500 ms a client stalled by the load alone may lose its session).
	curatorClient := map[string]string{"client-cmd": `sh "$FENCECHECK_EXAMPLES/curator_lock.sh"`, "lock-service": "zookeeper"}
	kazooClient := map[string]string{"client-cmd": `/usr/bin/python3 "$FENCECHECK_EXAMPLES/kazoo_lock.py"`, "lock-service": "zookeeper"}
	redisPyClient := map[string]string{"client-cmd": `/usr/bin/python3 "$FENCECHECK_EXAMPLES/redis_lock.py"`, "lock-service": "redis"}
	redisPyIncr := map[string]string{"client-cmd": `/usr/bin/python3 "$FENCECHECK_EXAMPLES/redis_lock.py" --token incr`, "lock-service": "redis"}
	zk := func(name string, opts map[string]string, resource string, faults []string) spec.Spec {
		return spec.Spec{Name: name, Backend: "exec", Options: opts, Resource: resource, Faults: faults, TTL: time.Second}
	}
	return []catalogue.Scenario{
		{
			Spec:   zk("exec-curator-unfenced-pause", curatorClient, "unfenced", []string{faults.Pause}),
			About:  "Curator's InterProcessMutex: the holder's JVM is stopped (SIGSTOP) past its session timeout; ZooKeeper deletes its lock node, the next client gets the lock, and the paused holder's late write overwrites the next holder's",
			Expect: unsafe,
		},
		{
			Spec:   zk("exec-curator-fenced-pause", curatorClient, "fenced", []string{faults.Pause}),
			About:  "the same stopped JVM against a fenced register: its lock node's czxid is older than the next holder's and refused",
			Expect: safe,
		},
		{
			Spec:   zk("exec-curator-fenced-crash", curatorClient, "fenced", []string{faults.Crash}),
			About:  "Curator's clients while the ZooKeeper server is killed (SIGKILL) and restarted with its data during the holder's pause: czxids keep increasing, the fence refuses the old holder",
			Expect: safe,
		},
		{
			Spec:   zk("exec-kazoo-unfenced-pause", kazooClient, "unfenced", []string{faults.Pause}),
			About:  "kazoo's Lock: the holder's Python process is stopped past its session timeout; its late write overwrites the next holder's",
			Expect: unsafe,
		},
		{
			Spec:   zk("exec-kazoo-fenced-pause", kazooClient, "fenced", []string{faults.Pause}),
			About:  "the same against a fenced register: the czxid kazoo's example now reports is refused when stale",
			Expect: safe,
		},
		{
			Spec:   zk("exec-kazoo-fenced-crash", kazooClient, "fenced", []string{faults.Crash}),
			About:  "kazoo's clients while the ZooKeeper server is killed and restarted with its data: czxids keep increasing",
			Expect: safe,
		},
		{
			Spec:   spec.Spec{Name: "exec-redispy-unfenced-pause", Backend: "exec", Options: redisPyClient, Resource: "unfenced", Faults: []string{faults.Pause}},
			About:  "redis-py's Lock (SET NX PX, renewed by reacquire): the stopped holder's key expires, the next client gets the lock and the late write gets through; the client grants with \"no_token\", so tokens are violated by its declaration",
			Expect: catalogue.NoToken(),
		},
		{
			Spec:   spec.Spec{Name: "exec-redispy-incr-fenced-pause", Backend: "exec", Options: redisPyIncr, Resource: "fenced", Faults: []string{faults.Pause}},
			About:  "redis-py's Lock with an INCR in its acquire script (redis_lock.py --token incr): the counter is a token, and the fence refuses the stopped holder's late write",
			Expect: safe,
		},
	}
}
