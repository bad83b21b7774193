// Package spec says what a run is and resolves it: a Spec names a backend, a resource
// and faults with settings; Resolve looks every name up in a registry (harness/registry),
// fills the defaults from the descriptors, sorts the options to their owners, checks the
// settings and asks every fault whether it applies — once, in that order — and returns
// the Resolved value the later stages run from: the descriptors, their settings, the
// capabilities the run plans with and the faults as nemesis strikes.
package spec

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/fencecheck/fencecheck/harness/nemesis"
	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/models"
)

// Spec says what to run. Zero fields take defaults.
type Spec struct {
	// Name is recorded in the history; empty for an ad-hoc run.
	Name string
	// Backend and Resource are registry names (default: the backend an option given
	// implies, else the first registered of each).
	Backend  string
	Resource string
	// Fence is the fence rule: "strict" (default) or "monotonic".
	Fence string
	// Faults are targeted fault names (the registry's).
	Faults   []string
	Clients  int
	TTL      time.Duration
	Duration time.Duration
	// MinGrants, if set, bounds the workload by events as well: it goes on past Duration
	// until that many acquires were granted, but no longer than MinGrantsCeiling past
	// it, so that a run that needs N grants (a 32-bit counter that must wrap, figures
	// over enough grants) has them however slow the machine. Omitted from JSON when 0,
	// so that a plan's identity stays what it was for the runs that do not set it.
	MinGrants int `json:",omitempty"`
	// Seed of the workload and of a random schedule (0: DefaultSeed).
	Seed int64
	// RandomFaults, if set, replaces targeted faults with a random schedule drawn from
	// these kinds by the seed, one fault at a time, Interval apart on average, over
	// Duration (Jepsen-style exploration: verdicts are reported, not expected).
	RandomFaults []string
	Interval     time.Duration
	// Schedule, if set, is the run's fault schedule as given (a schedule file's, or one
	// explore drew): the run uses it instead of drawing one, and Resolve checks every
	// item. Omitted from JSON when nil, so that a plan's identity stays what it was for
	// the runs that do not set it.
	Schedule *nemesis.Schedule `json:",omitempty"`
	// Skipped says which RandomFaults did not apply to the backend and were left out
	// (set by Resolve).
	Skipped []string
	// Policy is the clients' policy: "trusting" (default: writes whenever its code
	// reaches the write) or "careful" (checks by its own clock that its lease is still
	// valid, with a margin, right before writing).
	Policy string
	// Members is the size of the lock-service cluster (default: the backend's).
	Members int
	// Options are the backend's and the resource's own options by name (e.g.
	// "etcd-endpoints", "postgres-dsn"; see registry.Option). An option of another
	// backend is an error; one of another resource is ignored (a DSN given for a run
	// that uses no database).
	Options map[string]string
	// Keys > 1 runs that many independent locks and register cells; each critical
	// section picks one (seeded). Backends and resources that serve keys only.
	Keys int
	// Check asks the run's check for these opt-in properties too (models.Property.OptIn,
	// such as heed), beside those every history gets: a scenario that is about one says
	// so itself, and every command that runs it checks it. Omitted from JSON when empty,
	// so that a plan's identity stays what it was for the runs that do not set it.
	Check []models.Property `json:",omitempty"`
	// Early arms a targeted strike on the holder at the run's first critical sections
	// (three grants, no time) instead of after a TTL, and heals it as soon as another
	// client's write is accepted (its minimum hold is TTL/20, not 2×TTL): the stale
	// write comes about one TTL into the run, not three. Soak runs this way; a report
	// of one run shows some normal critical sections first without it. A strike that
	// carries a fault on the lock service keeps its usual arming (a token counter that
	// restarts must first have handed out tokens above the first). Omitted from
	// JSON when false, so that a plan's identity stays what it was without it.
	Early bool `json:",omitempty"`
	// MaxOps, if set, ends the workload once that many operations were called and every
	// fault has fired and healed, without waiting for Duration or a TTL more: a shrunk
	// schedule's run is as short as its failure allows. Omitted from JSON when 0.
	MaxOps int `json:",omitempty"`
}

// Selection is asked plus the spec's own Check: the opt-in properties its run's check
// asks for, and that its exit follows.
func (s Spec) Selection(asked []models.Property) []models.Property {
	out := slices.Clone(asked)
	for _, p := range s.Check {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// Defaults for a Spec.
const (
	DefaultClients = 3
	// DefaultTTL is the TTL of a backend whose descriptor sets none.
	DefaultTTL = registry.DefaultTTL
	// MinTTL and MaxTTL bound a run's TTL: below MinTTL the timing noise of a loaded
	// machine decides the verdicts; above MaxTTL (or a backend's own MaxTTL) a run
	// lasts for ever, as every wait of it derives from the TTL.
	MinTTL          = 50 * time.Millisecond
	MaxTTL          = registry.MaxTTL
	DefaultDuration = 2 * time.Second
	// MinGrantsCeiling is how long past its Duration a run with MinGrants waits for
	// them: generous, for a loaded machine, and spent only when the grants do not come.
	MinGrantsCeiling = time.Minute
	// DefaultSeed is every run's seed when none is given: an ad-hoc run, a matrix
	// cell and an evaluation run alike.
	DefaultSeed int64 = 1
	// MaxKeys bounds Spec.Keys.
	MaxKeys = 1024
)

// ErrSpec marks a spec that cannot run (bad name, bad value): a usage error.
var ErrSpec = errors.New("invalid scenario")

// ErrNoToken marks a run of a backend without fencing tokens against a resource that
// fences on them: it cannot be made safe by fencing (a usage error, exit 2). It is
// registry.ErrNoToken, which a backend that learns it while running (exec) returns.
var ErrNoToken = registry.ErrNoToken

// The client policies' names (Spec.Policy).
const (
	PolicyTrusting = "trusting"
	PolicyCareful  = "careful"
	PolicyHeeding  = "heeding"
)

// Policies lists the client policies.
func Policies() []registry.Named {
	return []registry.Named{
		{Name: PolicyTrusting, Meaning: "writes whenever its code path reaches the write (default)"},
		{Name: PolicyCareful, Meaning: "checks by its own clock that its lease is still valid, with a margin of TTL/10, right before writing (leases that are harness.Expiring)"},
		{Name: PolicyHeeding, Meaning: "skips the write once its lock client has told it that the lease was lost (the lease's Lost signal), checked right before writing: what a leader must do on OnStoppedLeading; a lock that never signals a loss gives it nothing to heed"},
	}
}

// Error is a usage error whose message is only its cause's: it matches ErrSpec and
// the cause.
type Error struct{ Err error }

func (e Error) Error() string   { return e.Err.Error() }
func (e Error) Unwrap() []error { return []error{ErrSpec, e.Err} }

// Input turns a descriptor's input error (registry.ErrInput) into a spec error (exit
// 2); any other error is returned as it is.
func Input(err error) error {
	if err != nil && errors.Is(err, registry.ErrInput) && !errors.Is(err, ErrSpec) {
		return fmt.Errorf("%w: %w", ErrSpec, err)
	}
	return err
}
