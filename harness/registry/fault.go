package registry

import (
	"strconv"
	"time"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/nemesis"
)

// Target is what a fault would be applied to.
type Target struct {
	// Backend is the backend's name (for messages) and Caps its capabilities.
	Backend string
	Caps    Caps
	// Resource is the protected resource's descriptor.
	Resource Resource
	// Policy is the clients' policy ("trusting" or "careful"); TTL the lease TTL.
	Policy string
	// Careful: the policy is the careful one (spec.PolicyCareful), said here so that a
	// fault need not import spec, which resolves the faults, to learn it.
	Careful bool
	TTL     time.Duration
	// ClientFaults names the registry's client faults (for messages).
	ClientFaults []string
	// Random: the faults come from a random schedule, not targeted at the holder.
	Random bool
	// Early: a strike on the holder arms at the run's first critical sections and heals
	// on the takeover, with no minimum hold to speak of (spec.Spec.Early).
	Early bool
}

// Fault is a fault a user can name.
type Fault interface {
	Name() string
	Meaning() string
	// Applies says why the fault cannot run against the target, naming the interface
	// or descriptor field that would make it apply, or nil.
	Applies(t Target) error
}

// ClientFault strikes the lock holder: the first client to reach a pause point inside
// its critical section.
type ClientFault interface {
	Fault
	// Strike is the nemesis fault for the target. riders are the service faults that
	// ride along (some change how long a pause lasts: PauseShaper). In a random
	// schedule (t.Random) the schedule sets when it strikes, whom and for how long.
	Strike(t Target, riders []ServiceFault) nemesis.ClientFault
}

// ServiceFault acts on the lock service (a node, the leader, a clock). It rides on a
// strike of the holder, so that the run contains a stale write to stop; given alone, it
// rides on a pause.
type ServiceFault interface {
	Fault
	// Action is the nemesis action against the started lock service b (Service of the
	// started backend); t has the started backend's capabilities.
	Action(t Target, b harness.Backend) nemesis.Action
}

// PauseShaper is a service fault that changes the pause it rides on.
type PauseShaper interface {
	// ShapePause adjusts f and reports whether it settled its shape (true: the strike
	// takes f as it is, its pause point included; false: the strike still picks the
	// point, keeping what ShapePause set).
	ShapePause(t Target, f *nemesis.ClientFault) bool
}

// LeaseTimed is implemented by backends that say their lease TTL; a process pause holds
// the server stopped for twice that.
type LeaseTimed interface {
	LeaseTTL() time.Duration
}

// NodeName is how faults name node i in a history ("node-1").
func NodeName(i int) string { return "node-" + strconv.Itoa(i) }
