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

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/nemesis"
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
	// RandomFaults, if set, replaces targeted faults with a random schedule drawn from
	// these kinds by the seed, one fault at a time, Interval apart on average, over
	// Duration (Jepsen-style exploration: verdicts are reported, not expected).
	RandomFaults []string
	Interval     time.Duration
	// Skipped says which RandomFaults did not apply to the backend and were left out
	// (set by validation).
	Skipped []string
	// Policy is the clients' policy: "trusting" (default: writes whenever its code
	// reaches the write) or "careful" (checks by its own clock that its lease is still
	// valid, with a margin, right before writing).
	Policy string
	// Members is the size of an embedded etcd cluster (default 1) or of the raft lock
	// service (default 3).
	Members int
	// EtcdEndpoints points the etcd backend at an existing cluster instead of starting
	// an embedded one. Only client-side faults apply to it.
	EtcdEndpoints []string
	// PostgresDSN is the PostgreSQL server of the postgres resources (default:
	// $FENCECHECK_POSTGRES_DSN; see build_db.go).
	PostgresDSN string
	// RedisAddrs points the redis backends at an existing server (build_services.go).
	RedisAddrs []string
	// NatsURL points the nats backend at an existing server (build_services.go).
	NatsURL string
	// Keys > 1 runs that many independent locks and register cells; each critical
	// section picks one (seeded). Naive backends and register resources only (keys.go).
	Keys int
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
	return append([]Named{
		{"naive", "a TTL lock server with an in-memory token counter (lost on restart)"},
		{"naive-persisted", "the naive lock server with a token counter persisted to a file (fsync before each grant)"},
		{"naive-wallclock", "the naive lock server whose token is its wall clock in ns (not linearizable)"},
		{"naive-32bit", "the naive lock server with a 32-bit token counter started near its limit (wraps)"},
		{"etcd", "embedded etcd (--members 1 or 3) or an existing cluster (--etcd-endpoints); concurrency.Mutex, token = lock key's CreateRevision"},
		{"raft", "a hashicorp/raft lock service (--members 3 or 5); token = log index of the committed acquire"},
	}, serviceBackendNames()...) // redis, redlock, nats: build_services.go (temporary wiring)
}

// ResourceNames lists the protected resources.
func ResourceNames() []Named {
	return append([]Named{
		{"fenced", "register with one atomic conditional write (accept iff token passes the fence)"},
		{"unfenced", "register that accepts every write; the token is stored, never checked"},
		{"toctou", "register guarded by check-then-write: read the token, compare, then write in a second request"},
		{"etcd-txn", "etcd itself is the store: one txn writes only while the lock key's CreateRevision is still the writer's token (etcd backend only)"},
	}, databaseResourceNames()...) // sqlite*, postgres*: build_db.go
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
		{"cluster-crash", "every raft node crashes while the holder is paused, and the whole lock service restarts at once with its logs (raft)"},
		{"skew", "the lock service's clock (naive: the server; raft: the leader's FSM stamps) runs 20x fast while the holder is briefly paused (less than its TTL by its own clock)"},
		{"clock-jump", "the lock server's wall clock steps back while the holder is paused (naive-wallclock: to between the last two grants, and stands still until healed; otherwise 1 h back)"},
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
		if s.Backend == "raft" || s.Backend == "redlock" {
			s.Members = 3
		}
		if s.Backend == "redlock" && len(s.RedisAddrs) > 0 {
			s.Members = len(s.RedisAddrs)
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
	for _, f := range append(append([]string(nil), s.Faults...), s.RandomFaults...) {
		if !known(FaultNames(), f) {
			return s, fmt.Errorf("unknown fault %q (known: %s)", f, names(FaultNames()))
		}
	}
	if len(s.RandomFaults) > 0 {
		if len(s.Faults) > 0 {
			return s, fmt.Errorf("give either targeted faults (--fault) or a random schedule (--faults), not both")
		}
		if s.Interval == 0 {
			s.Interval = 2 * s.TTL
		}
		if s.Interval < 0 {
			return s, fmt.Errorf("interval must be positive, got %v", s.Interval)
		}
		if s.Duration < 2*s.Interval {
			return s, fmt.Errorf("a random schedule needs a duration of at least twice the interval (%v), got %v", 2*s.Interval, s.Duration)
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
	case s.Backend == "redlock" && len(s.RedisAddrs) == 0 && s.Members != 3 && s.Members != 5:
		return s, fmt.Errorf("redlock: --members must be 3 or 5 independent redis-servers, got %d", s.Members)
	case s.Backend == "redlock" && len(s.RedisAddrs) > 0 && s.Members != len(s.RedisAddrs):
		return s, fmt.Errorf("redlock: --members %d does not match the %d --redis-addrs", s.Members, len(s.RedisAddrs))
	case s.Backend != "etcd" && s.Backend != "raft" && s.Backend != "redlock" && s.Members != 1:
		return s, fmt.Errorf("backend %s is a single server: --members must be 1, got %d", s.Backend, s.Members)
	}
	if s.Backend == "etcd" && (s.TTL < time.Second || s.TTL%time.Second != 0) {
		return s, fmt.Errorf("etcd leases are whole seconds, at least 1s (and at least 1.5x the election timeout): --ttl %v will not do", s.TTL)
	}
	if s.Policy == "" {
		s.Policy = "trusting"
	}
	if !known(Policies(), s.Policy) {
		return s, fmt.Errorf("unknown client policy %q (known: %s)", s.Policy, names(Policies()))
	}
	if s.Policy == "careful" && s.Backend == "etcd" {
		return s, fmt.Errorf("the careful policy needs a lease that knows its end by the client's clock (naive or raft); etcd's session does not expose one")
	}
	if s.Resource == "etcd-txn" && s.Backend != "etcd" {
		return s, fmt.Errorf("resource etcd-txn needs the etcd backend (got %q)", s.Backend)
	}
	if len(s.EtcdEndpoints) > 0 && s.Backend != "etcd" {
		return s, fmt.Errorf("--etcd-endpoints is for the etcd backend (got %q)", s.Backend)
	}
	if err := s.checkKeys(); err != nil { // keys.go
		return s, err
	}
	if err := s.checkServiceSpec(); err != nil { // build_services.go
		return s, err
	}
	for _, f := range s.Faults {
		if err := s.applicable(f); err != nil {
			return s, err
		}
	}
	// A random schedule draws only from the kinds that apply to this backend.
	var kinds []string
	s.Skipped = nil
	for _, f := range s.RandomFaults {
		if err := s.applicable(f); err != nil {
			s.Skipped = append(s.Skipped, err.Error())
			continue
		}
		kinds = append(kinds, f)
	}
	if len(s.RandomFaults) > 0 {
		if len(kinds) == 0 {
			return s, fmt.Errorf("no fault of --faults applies: %s", strings.Join(s.Skipped, "; "))
		}
		s.RandomFaults = kinds
	}
	return s, nil
}

// applicable says why fault f cannot run against the spec's backend, or nil.
func (s Spec) applicable(f string) error {
	if isService(s.Backend) {
		return s.serviceApplicable(f) // build_services.go
	}
	switch {
	case len(s.EtcdEndpoints) > 0 && isNodeFault(f):
		return fmt.Errorf("fault %q needs a cluster fencecheck started itself; an external cluster (--etcd-endpoints) only takes client-side faults (pause, pause-before-read, delay, partition)", f)
	case (f == "leader-isolation" || f == "node-pause") && (s.Backend != "etcd" && s.Backend != "raft" || s.Members < 3):
		return fmt.Errorf("fault %q needs a lock-service cluster of at least 3 nodes (etcd or raft with --members 3)", f)
	case f == "skew" && s.Backend == "etcd", f == "clock-jump" && (s.Backend == "etcd" || s.Backend == "raft"):
		return fmt.Errorf("fault %q: %s's clocks cannot be skewed in-process (its server and client read time.Now directly); it applies to clocks fencecheck owns: the naive server's and the raft lock FSM's", f, s.Backend)
	case f == "cluster-crash" && s.Backend != "raft":
		return fmt.Errorf("fault %q restarts a whole cluster fencecheck runs itself: the raft backend (naive: use crash; etcd: one member at a time)", f)
	case f == "delay" && strings.HasPrefix(s.Resource, "sqlite"):
		return fmt.Errorf("fault %q holds a write in the network, and %s is embedded: there is no network between the client and SQLite (use pause, or a postgres resource)", f, s.Resource)
	}
	return nil
}

// isNodeFault reports whether a fault acts on the lock service rather than on a client.
func isNodeFault(f string) bool {
	switch f {
	case "leader-isolation", "node-pause", "crash", "cluster-crash", "skew", "clock-jump":
		return true
	}
	return false
}

// Policies lists the client policies.
func Policies() []Named {
	return []Named{
		{"trusting", "writes whenever its code path reaches the write (default)"},
		{"careful", "checks by its own clock that its lease is still valid, with a margin of TTL/10, right before writing (naive and raft backends)"},
	}
}

// clientFaults turns the spec's fault names into targeted faults. Node faults ride along
// with the client fault (given alone, they ride on a pause of the holder, so that the
// run contains a stale write to stop): node is how they act on the lock service.
func (s Spec) clientFaults(node nodeFaults) []nemesis.ClientFault {
	if sched, ok := s.schedule(); ok {
		return sched.ClientFaults(func(kind string) (nemesis.Action, bool) { return node.action(kind), true })
	}
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
	skew := slices.Contains(s.Faults, "skew")
	for _, name := range names {
		f := nemesis.ClientFault{
			Kind:     name,
			ArmAfter: arm,
			// Twice the TTL: the lease has surely expired on the server before the
			// client may go on, whatever the load.
			MinHold: 2 * s.TTL,
			MaxHold: max(20*s.TTL, 10*time.Second),
			// The struck client's late request lands right after the write that ended
			// the fault, before anyone else's: the same interleaving on every run.
			Exclusive: true,
		}
		switch name {
		case "pause":
			f.Point, f.StopWorker = harness.PauseAfterRead, true
			switch {
			case slices.Contains(s.Faults, "crash") && s.Backend != "etcd" && s.Backend != "raft":
				// The crash forgets the lease at once, so the holder need not outwait
				// its TTL. It wakes right after the first write accepted after the
				// crash, before any other client writes again: the worst moment.
				f.MinHold = s.TTL / 20
			case skew:
				// A brief pause, shorter than the TTL by the client's clock: only the
				// fast server clock makes it outlive the lease.
				f.MinHold, f.MaxHold = s.TTL/20, s.TTL/2
			case s.Policy == "careful":
				f.Point = harness.PauseAfterLeaseCheck
			case s.Resource == "toctou" || checksThenWrites(s.Resource):
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
			if len(with) > 0 {
				// A paused or isolated leader can hold clients up for a while: etcd's
				// clients notice a silent member only through gRPC keep-alives, which
				// gRPC will not send more often than every 10 s.
				f.MaxHold = max(f.MaxHold, 45*time.Second)
			}
		}
		out = append(out, f)
	}
	return out
}

// schedule draws the spec's random schedule, if it has one. The spec is validated.
func (s Spec) schedule() (nemesis.Schedule, bool) {
	if len(s.RandomFaults) == 0 {
		return nemesis.Schedule{}, false
	}
	sched, err := nemesis.Generate(nemesis.ScheduleConfig{
		Seed: s.Seed, Kinds: s.RandomFaults, Clients: s.Clients, Total: s.Duration, Interval: s.Interval, TTL: s.TTL,
	})
	if err != nil {
		return nemesis.Schedule{}, false
	}
	return sched, true
}

// Schedule returns the random fault schedule a spec will run (after defaults), so it
// can be printed before the run, and why any requested kinds were left out. ok is false
// for a spec with targeted faults.
func Schedule(s Spec) (sched nemesis.Schedule, skipped []string, ok bool, err error) {
	s, err = s.withDefaults()
	if err != nil {
		return nemesis.Schedule{}, nil, false, fmt.Errorf("%w: %w", ErrSpec, err)
	}
	sched, ok = s.schedule()
	return sched, s.Skipped, ok, nil
}
