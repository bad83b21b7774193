package registry

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/nemesis"
)

// ServiceClocked is implemented by backends whose service clock fencecheck owns and can
// skew (the skew fault).
type ServiceClocked interface {
	harness.Backend
	// ServiceClock returns the clock that decides lease expiry now (the server's, or
	// the current leader's) and names what it belongs to ("lock server", "node-1").
	ServiceClock(ctx context.Context) (target string, c *nemesis.Clock, err error)
}

// WallClocked is implemented by backends whose server wall clock fencecheck owns and
// can step (the clock-jump fault).
type WallClocked interface {
	harness.Backend
	WallClock() *nemesis.Clock
	// WallClockTokens reports whether the tokens are read from that wall clock.
	WallClockTokens() bool
}

// FastClocked is implemented by backends whose service clock runs fast for the whole run,
// from the server's start (libfaketime preloaded into a server process): the skew fault
// on a clock fencecheck cannot change while the server runs.
type FastClocked interface {
	harness.Backend
	// ClockRate is how many times fast the service's clocks run (0: real time).
	ClockRate() float64
}

// Shape is what a descriptor says, before anything starts, about the values a run will
// get: values of the types its Start, its lockers' NewLocker and their Acquire return,
// which are never used but for the interfaces they implement (typically nil pointers,
// e.g. (*Server)(nil)). Plans read the capabilities from them (which faults apply, the
// careful policy, --keys) exactly as a run reads them from the started values; stating
// the types is the only declaration, and the contract suite (harnesstest) checks that
// the started values agree.
//
// Only type assertions are made on a Shape's values, never a method called, but for
// harness.ServiceWrapper's Unwrap: a wrapper's shape must return its service's shape.
type Shape struct {
	Backend harness.Backend
	// Locker and Lease may be nil: then they implement none of the optional interfaces
	// (harness.KeyedLocker, harness.CrashableProcess; harness.Expiring).
	Locker harness.Locker
	Lease  harness.Lease
}

// Caps are what a backend can undergo: read from the interfaces of its values, plus the
// facts its descriptor states (DurableLeases).
type Caps struct {
	// Cluster: harness.Cluster, of Nodes nodes.
	Cluster bool
	Nodes   int
	// Crasher: harness.Crasher; ClusterCrash: harness.ClusterCrasher.
	Crasher      bool
	ClusterCrash bool
	// Keyed: the lockers are harness.KeyedLockers; ClientExpiry: the leases are
	// harness.Expiring.
	Keyed        bool
	ClientExpiry bool
	// ServiceClock: ServiceClocked; WallClock: WallClocked.
	ServiceClock bool
	WallClock    bool
	// FastClock: FastClocked (its clock can be started fast), ClockRate its rate in
	// this run (0: real time, or not started yet).
	FastClock bool
	ClockRate float64
	// ProcessNodes: harness.ProcessNodes (node faults are real signals to server
	// processes).
	ProcessNodes bool
	// DurableLeases: the descriptor's DurableLeases.
	DurableLeases bool
	// External says how the user pointed the backend at servers fencecheck did not start
	// (harness.External; before start, the option that did); "" for a service
	// fencecheck runs.
	External string
	// NoToken says why there is no fencing token (harness.Tokenless; before start, the
	// descriptor's Token); "" for a backend with tokens.
	NoToken string
	// ClientProcesses: the lockers are processes of their own (harness.CrashableProcess).
	ClientProcesses bool
}

// SingleProcess: server processes (harness.ProcessNodes), not a cluster, that forget
// their leases when they stop or crash (no DurableLeases): one server, or independent
// ones without a leader, of which node faults strike a majority. node-pause is a timed
// SIGSTOP, crash a SIGKILL and restart at once.
func (c Caps) SingleProcess() bool { return c.ProcessNodes && !c.Cluster && !c.DurableLeases }

// Service is the backend that serves the locks: b, or the service b wraps
// (harness.ServiceWrapper). Service faults act on it.
func Service(b harness.Backend) harness.Backend {
	if w, ok := b.(harness.ServiceWrapper); ok && w.Unwrap() != nil {
		return w.Unwrap()
	}
	return b
}

// CapsOf reads a started backend's capabilities from its interfaces: the lock
// service's (Cluster, Crasher, clocks) from Service(b), the clients' from b itself. Its
// lockers and leases are not there yet: their capabilities (Keyed, ClientExpiry,
// ClientProcesses) are checked on the real values as the run uses them.
func CapsOf(b harness.Backend) Caps {
	c := interfaces(b)
	if cl, ok := Service(b).(harness.Cluster); ok {
		c.Nodes = cl.Nodes()
	}
	if fc, ok := Service(b).(FastClocked); ok {
		c.ClockRate = fc.ClockRate()
	}
	if e, ok := b.(harness.External); ok {
		c.External = e.External()
	} else if e, ok := Service(b).(harness.External); ok {
		c.External = e.External()
	}
	if t, ok := b.(harness.Tokenless); ok {
		c.NoToken = t.NoFencingToken()
	}
	return c
}

// interfaces reads which capability interfaces b (a started value or a Shape's) and the
// service it wraps implement, by type assertion only.
func interfaces(b harness.Backend) Caps {
	var c Caps
	if b == nil {
		return c
	}
	svc := Service(b)
	_, c.Cluster = svc.(harness.Cluster)
	_, c.Crasher = svc.(harness.Crasher)
	_, c.ClusterCrash = svc.(harness.ClusterCrasher)
	_, c.ServiceClock = svc.(ServiceClocked)
	_, c.WallClock = svc.(WallClocked)
	_, c.FastClock = svc.(FastClocked)
	_, c.ProcessNodes = svc.(harness.ProcessNodes)
	return c
}

// lockerCaps reads what a locker and a lease can do, by type assertion only.
func lockerCaps(c *Caps, l harness.Locker, le harness.Lease) {
	_, c.Keyed = l.(harness.KeyedLocker)
	_, c.ClientProcesses = l.(harness.CrashableProcess)
	_, c.ClientExpiry = le.(harness.Expiring)
}

// ShapeOf returns the descriptor's Shape for settings (the zero Shape without one).
func (b Backend) ShapeOf(s Settings) Shape {
	if b.Shape == nil {
		return Shape{}
	}
	return b.Shape(s.WithOptions(b.Options))
}

// ShapeMissing says, in words, that the descriptor states no capabilities with settings
// (it has no Shape, or its Shape gives no Backend value) and how to state them; "" when
// its Shape gives a Backend. Without one a plan reads none of the optional
// capabilities, whatever interfaces the started values implement.
func (b Backend) ShapeMissing(s Settings) string {
	var what string
	switch {
	case b.Shape == nil:
		what = "has no Shape"
	case b.ShapeOf(s).Backend == nil:
		what = "has a Shape that gives no Backend value"
	default:
		return ""
	}
	return fmt.Sprintf("backend %s's descriptor %s, so fencecheck plans it as a backend with none of the optional capabilities: "+
		"set its Shape to return values of the types its Start, NewLocker and Acquire return (nil pointers will do, e.g. (*Server)(nil)), "+
		"from whose interfaces fencecheck reads them", b.Name, what)
}

// ShapeRefusal is refusal — a fault, policy or setting refused for a capability the plan
// read from the descriptor's Shape — restated when the descriptor states no Shape
// (ShapeMissing): its values may well have the capability, and the missing Shape is
// what to fix. It carries "registry.Backend.Shape" before refusal's own Go names. An
// error that is not a refusal (no Go names), or a descriptor with a Shape, leaves
// refusal as it is.
func (b Backend) ShapeRefusal(s Settings, refusal error) error {
	if refusal == nil || len(GoNames(refusal)) == 0 {
		return refusal
	}
	missing := b.ShapeMissing(s)
	if missing == "" {
		return refusal
	}
	return Refuse("registry.Backend.Shape", "%s; as planned without it, %w", missing, refusal)
}

// PlanCaps are the capabilities a run of the backend will have with settings, read
// before anything starts from its Shape (a cluster's Nodes are its Members) and its
// facts.
func (b Backend) PlanCaps(s Settings) Caps {
	s = s.WithOptions(b.Options)
	sh := b.ShapeOf(s)
	c := interfaces(sh.Backend)
	if c.Cluster {
		c.Nodes = s.Members
	}
	lockerCaps(&c, sh.Locker, sh.Lease)
	c.DurableLeases = b.Defaults(s).DurableLeases
	if _, ok := sh.Backend.(harness.External); ok {
		c.External = b.externalWords(s)
	}
	if _, ok := sh.Backend.(harness.Tokenless); ok {
		c.NoToken = b.Token
		if c.NoToken == "" {
			c.NoToken = "its grants carry no fencing token"
		}
	}
	return c
}

// RunCaps are the capabilities of the started backend: its interfaces (CapsOf), its
// lockers' and leases' as its Shape states them, and its descriptor's facts. The faults
// of a run strike with them.
func (b Backend) RunCaps(s Settings, started harness.Backend) Caps {
	s = s.WithOptions(b.Options)
	c := CapsOf(started)
	sh := b.ShapeOf(s)
	lockerCaps(&c, sh.Locker, sh.Lease)
	c.DurableLeases = b.Defaults(s).DurableLeases
	return c
}

// externalWords names the options that point the backend at servers fencecheck did not
// start, as a run planned with settings gives them.
func (b Backend) externalWords(s Settings) string {
	var given []string
	for _, o := range b.Options {
		if o.External && s.Option(o.Name) != "" {
			given = append(given, "--"+o.Name)
		}
	}
	if len(given) == 0 {
		return "servers fencecheck did not start"
	}
	return "servers given by " + strings.Join(given, ", ")
}

// ShapeDiff compares the capabilities a Shape states with those of real values — a
// started backend, one of its lockers and a lease it granted (a nil locker or lease is
// not compared) — and returns the differing fields on one line, e.g. "Crasher: Shape
// false, started true; Nodes: Shape 1, started 3", or "" when they agree.
func ShapeDiff(shape Shape, members int, started harness.Backend, l harness.Locker, le harness.Lease) string {
	want, got := flagsOf(shape.Backend, shape.Locker, shape.Lease), flagsOf(started, l, le)
	if want.Cluster {
		want.Nodes = members
	}
	if cl, ok := Service(started).(harness.Cluster); ok {
		got.Nodes = cl.Nodes()
	}
	if l == nil {
		got.KeyedLocker, got.CrashableProcess = want.KeyedLocker, want.CrashableProcess
	}
	if le == nil {
		got.Expiring = want.Expiring
	}
	return diffFields(want, got)
}

// capFlags are the capabilities a Shape states: which interfaces its values implement.
type capFlags struct {
	Cluster                                              bool
	Nodes                                                int
	Crasher, ClusterCrasher, ServiceClocked, WallClocked bool
	FastClocked, ProcessNodes, External, Tokenless       bool
	KeyedLocker, CrashableProcess, Expiring              bool
}

func flagsOf(b harness.Backend, l harness.Locker, le harness.Lease) capFlags {
	c := interfaces(b)
	lockerCaps(&c, l, le)
	f := capFlags{
		Cluster: c.Cluster, Crasher: c.Crasher, ClusterCrasher: c.ClusterCrash, ServiceClocked: c.ServiceClock,
		WallClocked: c.WallClock, FastClocked: c.FastClock, ProcessNodes: c.ProcessNodes,
		KeyedLocker: c.Keyed, CrashableProcess: c.ClientProcesses, Expiring: c.ClientExpiry,
	}
	_, f.External = b.(harness.External)
	if !f.External {
		_, f.External = Service(b).(harness.External)
	}
	_, f.Tokenless = b.(harness.Tokenless)
	return f
}

// diffFields lists the fields in which a Shape's flags and the started values' differ.
func diffFields(want, got capFlags) string {
	va, vb := reflect.ValueOf(want), reflect.ValueOf(got)
	var out []string
	for i := range va.NumField() {
		x, y := va.Field(i).Interface(), vb.Field(i).Interface()
		if x != y {
			out = append(out, fmt.Sprintf("%s: Shape %v, started %v", va.Type().Field(i).Name, x, y))
		}
	}
	return strings.Join(out, "; ")
}

// CheckSettings validates settings: a backend that is not MultiMember runs one member,
// then the descriptor's Check. Errors are the user's input.
func (b Backend) CheckSettings(s Settings) error {
	s = s.WithOptions(b.Options)
	if !b.MultiMember && s.Members != 1 {
		return Refuse("registry.Backend.MultiMember", "backend %s runs one member only here: --members must be 1, got %d", b.Name, s.Members)
	}
	if b.Check != nil {
		return b.Check(s)
	}
	return nil
}

// SetupOf describes the service for settings.
func (b Backend) SetupOf(s Settings) string {
	if b.Setup != nil {
		return b.Setup(s.WithOptions(b.Options))
	}
	return b.Name + ": " + b.Meaning
}

// Defaults is the backend whose TTL, Members, NodeFaultMembers and DurableLeases are
// the defaults with these settings: b, or the one its DefaultsFrom names.
func (b Backend) Defaults(s Settings) Backend {
	if b.DefaultsFrom != nil {
		if d, ok := b.DefaultsFrom(s.WithOptions(b.Options)); ok {
			return d
		}
	}
	return b
}

// LongestTTL is the longest lease TTL a run of the backend takes: its MaxTTL, at most
// MaxTTL.
func (b Backend) LongestTTL() time.Duration {
	if b.MaxTTL > 0 && b.MaxTTL < MaxTTL {
		return b.MaxTTL
	}
	return MaxTTL
}

// IsExternal reports whether settings point the backend at servers fencecheck does not
// own (an External option is set).
func (b Backend) IsExternal(s Settings) bool {
	for _, o := range b.Options {
		if o.External && s.Options[o.Name] != "" {
			return true
		}
	}
	return false
}
