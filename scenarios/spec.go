// Package scenarios is the catalogue of named scenarios — a backend, a resource, a fault
// and the verdicts the design brief expects — and the code that runs one: build the
// servers, run the workload, save the evidence, check it. The CLI and `go test
// ./scenarios/...` share it.
package scenarios

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"fencecheck/harness"
	"fencecheck/harness/history"
	"fencecheck/nemesis"
)

// Spec says what to run. Zero fields take defaults.
type Spec struct {
	// Name is recorded in the history; empty for an ad-hoc run.
	Name     string
	Backend  string
	Resource string
	// Fence is the fence rule: "strict" (default) or "monotonic".
	Fence string
	// Faults are targeted fault names (see FaultNames).
	Faults   []string
	Clients  int
	TTL      time.Duration
	Duration time.Duration
	Seed     int64
	// Members is the size of an embedded etcd cluster (default 1) or of the raft lock
	// service (default 3).
	Members int
	// EtcdEndpoints points the etcd backend at an existing cluster instead of starting
	// an embedded one. Only client-side faults apply to it.
	EtcdEndpoints []string
}

// Defaults for a Spec.
const (
	DefaultClients = 3
	DefaultTTL     = 500 * time.Millisecond
	// DefaultEtcdTTL: etcd leases are whole seconds, at least 1.
	DefaultEtcdTTL  = time.Second
	DefaultDuration = 2 * time.Second
)

// Named is a name a user types, with one line of meaning.
type Named struct {
	Name    string
	Meaning string
}

// BackendNames lists the lock backends.
func BackendNames() []Named {
	return []Named{
		{"naive", "a TTL lock server with an in-memory token counter (lost on restart)"},
		{"naive-persisted", "the naive lock server with a token counter persisted to a file (fsync before each grant)"},
		{"naive-wallclock", "the naive lock server whose token is its wall clock in ns (not linearizable)"},
		{"naive-32bit", "the naive lock server with a 32-bit token counter started near its limit (wraps)"},
		{"etcd", "embedded etcd (--members 1 or 3) or an existing cluster (--etcd-endpoints); concurrency.Mutex, token = lock key's CreateRevision"},
		{"raft", "a hashicorp/raft lock service (--members 3 or 5); token = log index of the committed acquire"},
	}
}

// ResourceNames lists the protected resources.
func ResourceNames() []Named {
	return []Named{
		{"fenced", "register with one atomic conditional write (accept iff token passes the fence)"},
		{"unfenced", "register that accepts every write; the token is stored, never checked"},
		{"toctou", "register guarded by check-then-write: read the token, compare, then write in a second request"},
		{"etcd-txn", "etcd itself is the store: one txn writes only while the lock key's CreateRevision is still the writer's token (etcd backend only)"},
	}
}

// FaultNames lists the targeted faults.
func FaultNames() []Named {
	return []Named{
		{"pause", "GC-like pause of the lock holder inside its critical section (after its read, before its write; for toctou between check and write), longer than the TTL"},
		{"pause-before-read", "GC-like pause of the lock holder right after acquiring, before its read, longer than the TTL"},
		{"delay", "the holder's write is sent but held in the network (all its links stall) until its lease has expired and another write was accepted"},
		{"partition", "the holder is cut off from the lock service (its connections close) while it can still reach the resource, and stalls in its critical section"},
		{"leader-isolation", "the lock service's leader is cut off from the other nodes, both ways, while the holder is paused (etcd/raft clusters)"},
		{"node-pause", "the lock service's leader stops: all its links, to peers and clients, stall while the holder is paused (etcd/raft clusters)"},
		{"crash", "the lock service (naive: the server; etcd/raft: the leader) crashes while the holder is paused, and restarts with its data (naive: at once; etcd/raft: when the pause heals)"},
	}
}

func known(list []Named, name string) bool {
	return slices.ContainsFunc(list, func(n Named) bool { return n.Name == name })
}

func names(list []Named) string {
	s := make([]string, len(list))
	for i, n := range list {
		s[i] = n.Name
	}
	return strings.Join(s, ", ")
}

// withDefaults fills zero fields and validates the spec.
func (s Spec) withDefaults() (Spec, error) {
	if s.Backend == "" {
		s.Backend = "naive"
	}
	if s.Resource == "" {
		s.Resource = "fenced"
	}
	if s.Fence == "" {
		s.Fence = history.FenceStrict
	}
	if s.Clients == 0 {
		s.Clients = DefaultClients
	}
	if s.TTL == 0 {
		s.TTL = DefaultTTL
		if s.Backend == "etcd" {
			s.TTL = DefaultEtcdTTL
		}
	}
	if s.Members == 0 {
		s.Members = 1
		if s.Backend == "raft" {
			s.Members = 3
		}
	}
	if s.Duration == 0 {
		s.Duration = DefaultDuration
	}
	if !known(BackendNames(), s.Backend) {
		return s, fmt.Errorf("unknown backend %q (known: %s)", s.Backend, names(BackendNames()))
	}
	if !known(ResourceNames(), s.Resource) {
		return s, fmt.Errorf("unknown resource %q (known: %s)", s.Resource, names(ResourceNames()))
	}
	if s.Fence != history.FenceStrict && s.Fence != history.FenceMonotonic {
		return s, fmt.Errorf("unknown fence %q (want strict or monotonic)", s.Fence)
	}
	for _, f := range s.Faults {
		if !known(FaultNames(), f) {
			return s, fmt.Errorf("unknown fault %q (known: %s)", f, names(FaultNames()))
		}
	}
	if s.Clients < 2 || s.Clients > 64 {
		return s, fmt.Errorf("clients must be between 2 and 64 (a stale write needs a second client), got %d", s.Clients)
	}
	if s.TTL < 0 {
		return s, fmt.Errorf("ttl must be positive, got %v", s.TTL)
	}
	if s.TTL < 50*time.Millisecond {
		return s, fmt.Errorf("ttl %v is too short: below 50ms the timing noise of a loaded machine decides the verdicts", s.TTL)
	}
	if s.Duration < 0 {
		return s, fmt.Errorf("duration must be positive, got %v", s.Duration)
	}
	switch {
	case s.Backend == "etcd" && s.Members != 1 && s.Members != 3:
		return s, fmt.Errorf("etcd: --members must be 1 or 3, got %d", s.Members)
	case s.Backend == "raft" && (s.Members < 1 || s.Members > 7):
		return s, fmt.Errorf("raft: --members must be between 1 and 7, got %d", s.Members)
	case s.Backend != "etcd" && s.Backend != "raft" && s.Members != 1:
		return s, fmt.Errorf("backend %s is a single server: --members must be 1, got %d", s.Backend, s.Members)
	}
	if s.Backend == "etcd" && (s.TTL < time.Second || s.TTL%time.Second != 0) {
		return s, fmt.Errorf("etcd leases are whole seconds, at least 1s (and at least 1.5x the election timeout): --ttl %v will not do", s.TTL)
	}
	if s.Resource == "etcd-txn" && s.Backend != "etcd" {
		return s, fmt.Errorf("resource etcd-txn needs the etcd backend (got %q)", s.Backend)
	}
	if len(s.EtcdEndpoints) > 0 {
		if s.Backend != "etcd" {
			return s, fmt.Errorf("--etcd-endpoints is for the etcd backend (got %q)", s.Backend)
		}
		for _, f := range s.Faults {
			if isNodeFault(f) {
				return s, fmt.Errorf("fault %q needs a cluster fencecheck started itself; an external cluster (--etcd-endpoints) only takes client-side faults (pause, pause-before-read, delay, partition)", f)
			}
		}
	}
	for _, f := range s.Faults {
		if (f == "leader-isolation" || f == "node-pause") && (s.Backend != "etcd" && s.Backend != "raft" || s.Members < 3) {
			return s, fmt.Errorf("fault %q needs a lock-service cluster of at least 3 nodes (etcd or raft with --members 3)", f)
		}
	}
	return s, nil
}

// isNodeFault reports whether a fault acts on the lock service rather than on a client.
func isNodeFault(f string) bool {
	return f == "leader-isolation" || f == "node-pause" || f == "crash"
}

// clientFaults turns the spec's fault names into targeted faults. Node faults ride along
// with the client fault (given alone, they ride on a pause of the holder, so that the
// run contains a stale write to stop): node is how they act on the lock service.
func (s Spec) clientFaults(node nodeFaults) []nemesis.ClientFault {
	var out []nemesis.ClientFault
	var with []nemesis.Action
	arm := max(s.TTL, 200*time.Millisecond)
	names := []string{}
	for _, name := range s.Faults {
		if isNodeFault(name) {
			with = append(with, node.action(name))
			continue
		}
		names = append(names, name)
	}
	if len(with) > 0 && len(names) == 0 {
		names = []string{"pause"}
	}
	for _, name := range names {
		f := nemesis.ClientFault{
			Kind:     name,
			ArmAfter: arm,
			// Twice the TTL: the lease has surely expired on the server before the
			// client may go on, whatever the load.
			MinHold: 2 * s.TTL,
			MaxHold: max(20*s.TTL, 10*time.Second),
		}
		switch name {
		case "pause":
			f.Point, f.StopWorker = harness.PauseAfterRead, true
			if s.Resource == "toctou" {
				f.Point = harness.PauseAfterCheck
			}
		case "pause-before-read":
			f.Point, f.StopWorker = harness.PauseAfterAcquire, true
		case "delay":
			f.Point, f.StopWorker = harness.PauseInWrite, false
		case "partition":
			f.Point, f.StopWorker, f.Partition = harness.PauseAfterRead, true, true
		}
		if len(out) == 0 {
			f.With = with
		}
		out = append(out, f)
	}
	return out
}
