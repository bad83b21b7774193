package registry

import (
	"context"
	"fmt"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/nemesis"
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

// Caps are a backend's capabilities, as the interfaces of its started value say.
type Caps struct {
	// Cluster: harness.Cluster, of Nodes nodes.
	Cluster bool
	Nodes   int
	// Crasher: harness.Crasher; ClusterCrash: harness.ClusterCrasher.
	Crasher      bool
	ClusterCrash bool
	// Keyed: harness.KeyedBackend; ClientExpiry: harness.ExpiringBackend.
	Keyed        bool
	ClientExpiry bool
	// ServiceClock: ServiceClocked; WallClock: WallClocked.
	ServiceClock bool
	WallClock    bool
	// FastClock: FastClocked (its clock can be started fast), ClockRate its rate in
	// this run (0: real time).
	FastClock bool
	ClockRate float64
	// ProcessNodes: harness.ProcessNodes (node faults are real signals to server
	// processes); DurableLeases: harness.DurableLeases.
	ProcessNodes  bool
	DurableLeases bool
	// External is harness.External's description ("" for a service fencecheck runs).
	External string
	// NoToken is harness.Tokenless's reason ("" for a backend with fencing tokens).
	NoToken string
	// ClientProcesses: harness.ProcessClients (each client is a process of its own).
	ClientProcesses bool
	// SingleProcess: harness.ProcessNodes, not a cluster, whose server forgets its
	// leases when it stops or crashes (not harness.DurableLeases): one server process, or
	// independent ones without a leader (Redlock's), of which node faults strike a
	// majority. node-pause is a timed SIGSTOP, crash a SIGKILL and restart at once.
	SingleProcess bool
}

// Service is the backend that serves the locks: b, or the service b wraps
// (harness.ServiceWrapper). Service faults act on it.
func Service(b harness.Backend) harness.Backend {
	if w, ok := b.(harness.ServiceWrapper); ok && w.Unwrap() != nil {
		return w.Unwrap()
	}
	return b
}

// CapsOf reads a started backend's capabilities: the lock service's (Cluster, Crasher,
// clocks) from Service(b), the clients' and leases' from b itself.
func CapsOf(b harness.Backend) Caps {
	c := serviceCaps(Service(b))
	_, c.Keyed = b.(harness.KeyedBackend)
	_, c.ClientExpiry = b.(harness.ExpiringBackend)
	if e, ok := b.(harness.External); ok {
		c.External = e.External()
	}
	if t, ok := b.(harness.Tokenless); ok {
		c.NoToken = t.NoFencingToken()
	}
	_, c.ClientProcesses = b.(harness.ProcessClients)
	return c
}

// serviceCaps reads what a lock service can undergo.
func serviceCaps(b harness.Backend) Caps {
	var c Caps
	if cl, ok := b.(harness.Cluster); ok {
		c.Cluster, c.Nodes = true, cl.Nodes()
	}
	_, c.Crasher = b.(harness.Crasher)
	_, c.ClusterCrash = b.(harness.ClusterCrasher)
	_, c.ServiceClock = b.(ServiceClocked)
	_, c.WallClock = b.(WallClocked)
	if fc, ok := b.(FastClocked); ok {
		c.FastClock, c.ClockRate = true, fc.ClockRate()
	}
	_, c.ProcessNodes = b.(harness.ProcessNodes)
	_, c.DurableLeases = b.(harness.DurableLeases)
	if e, ok := b.(harness.External); ok {
		c.External = e.External()
	}
	if _, ok := b.(harness.ProcessNodes); ok && !c.Cluster && !c.DurableLeases {
		c.SingleProcess = true
	}
	return c
}

// DeclaredCaps are the capabilities a descriptor states for settings.
func (b Backend) DeclaredCaps(s Settings) Caps {
	if b.Caps == nil {
		return Caps{}
	}
	return b.Caps(s.WithOptions(b.Options))
}

// CheckStarted fails when a started backend's capabilities differ from its
// descriptor's: plans made from the descriptor would offer faults that cannot run, or
// miss some that can.
func (b Backend) CheckStarted(s Settings, started harness.Backend) error {
	want, got := b.DeclaredCaps(s), CapsOf(started)
	if want != got {
		return fmt.Errorf("backend %s: its descriptor declares capabilities %+v, the started backend has %+v", b.Name, want, got)
	}
	return nil
}

// CheckSettings validates settings with the descriptor's Check (a single server when
// nil). Errors are the user's input.
func (b Backend) CheckSettings(s Settings) error {
	s = s.WithOptions(b.Options)
	if b.Check != nil {
		return b.Check(s)
	}
	if s.Members != 1 {
		return fmt.Errorf("backend %s is a single server: --members must be 1, got %d", b.Name, s.Members)
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

// IsExternal reports whether settings point the backend at servers fencecheck does not
// own (an External option is set).
// Defaults is the backend whose TTL, Members and NodeFaultMembers are the defaults with
// these settings: b, or the one its DefaultsFrom names.
func (b Backend) Defaults(s Settings) Backend {
	if b.DefaultsFrom != nil {
		if d, ok := b.DefaultsFrom(s.WithOptions(b.Options)); ok {
			return d
		}
	}
	return b
}

func (b Backend) IsExternal(s Settings) bool {
	for _, o := range b.Options {
		if o.External && s.Options[o.Name] != "" {
			return true
		}
	}
	return false
}
