package spec

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/harness/nemesis"
	"github.com/fencecheck/fencecheck/harness/nemesis/faults"
	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/models"
)

// Resolved is a spec resolved against a registry: the descriptors its names resolve
// to, their settings, the capabilities the run plans with and its faults. The later
// stages (trial, campaign) run from it and never look a name up again.
type Resolved struct {
	// Spec has every default filled in.
	Spec     Spec
	Backend  registry.Backend
	Resource registry.Resource
	// Settings are the backend's (its own options only); ResourceSettings the
	// resource's.
	Settings, ResourceSettings registry.Settings
	// Target is what the faults apply to, with the capabilities the backend's Shape
	// states (the started value's replace them when the faults strike).
	Target registry.Target
	// Faults are the spec's targeted faults, in registry order; Strikes those that
	// strike a client and Riders those that act on the service (given alone, they
	// ride on Carrier).
	Strikes []registry.ClientFault
	Riders  []registry.ServiceFault
	Carrier registry.ClientFault

	reg *registry.Registry
}

// Resolve fills the spec's defaults from the registry's descriptors and validates it,
// in one pass: names, settings, options, the descriptor's own checks, policy and token
// rules, keys, and every fault's Applies. Errors wrap ErrSpec and say what is wrong in
// one line.
func Resolve(reg *registry.Registry, s Spec) (*Resolved, error) {
	if reg == nil {
		return nil, fmt.Errorf("%w: no registry: build one with registry.New (or builtin.Registry for everything fencecheck ships)", ErrSpec)
	}
	r := &Resolved{reg: reg}
	if err := r.resolve(s); err != nil {
		return r, fmt.Errorf("%w: %w", ErrSpec, err)
	}
	return r, nil
}

func (r *Resolved) resolve(s Spec) error {
	reg := r.reg
	r.Spec = s // what is known so far, for a caller that reports the error
	if s.Backend == "" {
		s.Backend = DefaultBackend(reg, s.Options)
	}
	if s.Resource == "" && len(reg.Resources()) > 0 {
		s.Resource = reg.Resources()[0].Name
	}
	if s.Fence == "" {
		s.Fence = history.FenceStrict
	}
	if s.Clients == 0 {
		s.Clients = DefaultClients
	}
	if s.Seed == 0 {
		s.Seed = DefaultSeed
	}
	be, beOK := reg.Backend(s.Backend)
	def := be.Defaults(registry.Settings{Options: s.Options})
	if s.TTL == 0 {
		s.TTL = DefaultTTL
		if beOK && def.TTL > 0 {
			s.TTL = def.TTL
		}
	}
	if s.Members == 0 {
		s.Members = 1
		if beOK && def.Members > 0 {
			s.Members = def.Members
		}
	}
	if s.Duration == 0 {
		s.Duration = DefaultDuration
	}
	if s.Schedule != nil {
		// A given schedule's run lasts at least until its last fault healed, and a TTL.
		var end time.Duration
		for _, it := range s.Schedule.Items {
			end = max(end, it.At+it.Hold)
		}
		if end > 0 && s.Duration < end+s.TTL {
			s.Duration = end + s.TTL
		}
	}
	r.Spec = s
	if !beOK {
		return fmt.Errorf("unknown backend %q (known: %s; a backend of your own is added with Registry.AddBackend)", s.Backend, registry.Names(reg.BackendNames()))
	}
	res, ok := reg.Resource(s.Resource)
	if !ok {
		return fmt.Errorf("unknown resource %q (known: %s)", s.Resource, registry.Names(reg.ResourceNames()))
	}
	r.Backend, r.Resource = be, res
	if s.Fence != history.FenceStrict && s.Fence != history.FenceMonotonic {
		return fmt.Errorf("unknown fence %q (want strict or monotonic)", s.Fence)
	}
	for _, f := range slices.Concat(s.Faults, s.RandomFaults) {
		if _, ok := reg.Fault(f); !ok {
			return fmt.Errorf("unknown fault %q (known: %s)", f, registry.Names(reg.FaultNames()))
		}
	}
	if len(s.RandomFaults) > 0 {
		if len(s.Faults) > 0 {
			return fmt.Errorf("give either targeted faults (--fault) or a random schedule (--faults), not both")
		}
		if s.Interval == 0 {
			s.Interval = 2 * s.TTL
		}
		if s.Interval < 0 {
			return fmt.Errorf("interval must be positive, got %v", s.Interval)
		}
		if s.Duration < 2*s.Interval {
			return fmt.Errorf("a random schedule needs a duration of at least twice the interval (%v), got %v", 2*s.Interval, s.Duration)
		}
	}
	if s.Schedule != nil && (len(s.Faults) > 0 || len(s.RandomFaults) > 0) {
		return fmt.Errorf("give either a schedule or faults (targeted or random), not both")
	}
	switch {
	case s.Clients < 2 || s.Clients > 64:
		return fmt.Errorf("clients must be between 2 and 64 (a stale write needs a second client), got %d", s.Clients)
	case s.TTL < 0:
		return fmt.Errorf("ttl must be positive, got %v", s.TTL)
	case s.TTL < MinTTL:
		return fmt.Errorf("ttl %v is too short: below %v the timing noise of a loaded machine decides the verdicts", s.TTL, MinTTL)
	case s.TTL > def.LongestTTL():
		return fmt.Errorf("ttl %v is too long: at most %v for %s (a run would last at least %v: every wait of a run derives from the TTL)",
			s.TTL, def.LongestTTL(), s.Backend, leastRunTime(s))
	case s.Duration < 0:
		return fmt.Errorf("duration must be positive, got %v", s.Duration)
	case s.MinGrants < 0:
		return fmt.Errorf("min grants must not be negative, got %d", s.MinGrants)
	case s.MaxOps < 0:
		return fmt.Errorf("the operations cap must not be negative, got %d", s.MaxOps)
	}
	opts, err := splitOptions(reg, s)
	if err != nil {
		return err
	}
	s.Options = opts.all
	r.Spec = s
	r.Settings = registry.Settings{TTL: s.TTL, Members: s.Members, Clients: s.Clients, Fence: s.Fence, Faults: s.Faults, Options: opts.backend}.WithOptions(be.Options)
	if res.NeedsToken {
		r.Settings.TokenResource = res.Name
	}
	r.ResourceSettings = registry.Settings{TTL: s.TTL, Members: s.Members, Clients: s.Clients, Fence: s.Fence, Options: opts.resource}.WithOptions(res.Options)
	if err := be.CheckSettings(r.Settings); err != nil {
		return err
	}
	caps := be.PlanCaps(r.Settings)
	for _, p := range s.Check {
		if !slices.Contains(models.AllProperties, p) {
			return fmt.Errorf("unknown property %q to check (known: %s)", p, propertyNames())
		}
	}
	if s.Policy == "" {
		s.Policy = PolicyTrusting
	}
	if !slices.ContainsFunc(Policies(), func(n registry.Named) bool { return n.Name == s.Policy }) {
		return fmt.Errorf("unknown client policy %q (known: %s)", s.Policy, registry.Names(Policies()))
	}
	if s.Policy == PolicyCareful && !caps.ClientExpiry {
		return be.ShapeRefusal(r.Settings, registry.Refuse("harness.Expiring (its leases)", "the careful policy needs a lease that knows its end by the client's clock, and backend %s's leases do not", s.Backend))
	}
	if res.NativeOnly && !slices.Contains(be.Native, res.Name) {
		return registry.Refuse("registry.Backend.Native", "resource %s is native to the %s backend, not to %q", res.Name, strings.Join(reg.NativeOwners(res.Name), " or "), s.Backend)
	}
	if caps.NoToken != "" && res.NeedsToken {
		return fmt.Errorf("%w (backend %s: %s; resource %s fences on tokens)", ErrNoToken, s.Backend, caps.NoToken, res.Name)
	}
	if err := checkKeys(s, be.Name, caps, res); err != nil {
		if !caps.Keyed {
			err = be.ShapeRefusal(r.Settings, err)
		}
		return err
	}
	r.Target = registry.Target{Backend: be.Name, Caps: caps, Resource: res, Policy: s.Policy, Careful: s.Policy == PolicyCareful, TTL: s.TTL, Early: s.Early,
		Random: len(s.RandomFaults) > 0 || s.Schedule != nil, ClientFaults: reg.ClientFaultNames()}
	for _, f := range s.Faults {
		if err := r.applies(f); err != nil {
			// A descriptor without a Shape is refused for what it did not state.
			return be.ShapeRefusal(r.Settings, err)
		}
	}
	if err := r.checkSchedule(s); err != nil {
		return be.ShapeRefusal(r.Settings, err)
	}
	// A random schedule draws only from the kinds that apply to this backend.
	var kinds []string
	s.Skipped = nil
	for _, f := range s.RandomFaults {
		if err := r.applies(f); err != nil {
			s.Skipped = append(s.Skipped, err.Error())
			continue
		}
		kinds = append(kinds, f)
	}
	if len(s.RandomFaults) > 0 {
		if len(kinds) == 0 {
			return fmt.Errorf("no fault of --faults applies: %s", strings.Join(s.Skipped, "; "))
		}
		s.RandomFaults = kinds
	}
	r.Spec = s
	r.sortFaults()
	return nil
}

// checkSchedule checks a given schedule item by item: every kind known and applicable
// here, times and holds positive, clients among the run's. The error names the item.
func (r *Resolved) checkSchedule(s Spec) error {
	if s.Schedule == nil {
		return nil
	}
	if len(s.Schedule.Items) == 0 {
		return fmt.Errorf("the schedule has no item")
	}
	for i, it := range s.Schedule.Items {
		var err error
		switch {
		case it.Kind == "":
			err = fmt.Errorf("no fault kind")
		case it.At < 0:
			err = fmt.Errorf("at must not be negative, got %v", it.At)
		case it.Hold <= 0:
			err = fmt.Errorf("hold must be positive, got %v", it.Hold)
		case it.Client < 0 || it.Client >= s.Clients:
			err = fmt.Errorf("client %d is not one of the run's %d clients (0 to %d)", it.Client, s.Clients, s.Clients-1)
		default:
			if f, ok := r.reg.Fault(it.Kind); !ok {
				err = fmt.Errorf("unknown fault %q (known: %s)", it.Kind, registry.Names(r.reg.FaultNames()))
			} else if _, client := f.(registry.ClientFault); it.Takeover && !client {
				err = fmt.Errorf("takeover applies to a fault on a client, and %s acts on the lock service", it.Kind)
			} else {
				err = r.applies(it.Kind)
			}
		}
		if err != nil {
			return fmt.Errorf("schedule item %d (%s at %v): %w", i+1, it.Kind, it.At, err)
		}
	}
	return nil
}

// ScheduleKinds is the sorted set of fault kinds a schedule uses.
func ScheduleKinds(sched nemesis.Schedule) []string {
	var out []string
	for _, it := range sched.Items {
		if !slices.Contains(out, it.Kind) {
			out = append(out, it.Kind)
		}
	}
	slices.Sort(out)
	return out
}

// applies says why fault f cannot run against the spec, or nil.
func (r *Resolved) applies(f string) error {
	fault, ok := r.reg.Fault(f)
	if !ok {
		return fmt.Errorf("unknown fault %q", f)
	}
	return fault.Applies(r.Target)
}

// sortFaults sorts the targeted faults by kind, in registry order (so that which rider
// shapes a pause does not depend on the order the user named them in), and picks the
// strike a service fault given alone rides on: a pause, or the first client fault.
func (r *Resolved) sortFaults() {
	for _, f := range r.reg.Faults() {
		switch f := f.(type) {
		case registry.ServiceFault:
			if slices.Contains(r.Spec.Faults, f.Name()) {
				r.Riders = append(r.Riders, f)
			}
		case registry.ClientFault:
			if slices.Contains(r.Spec.Faults, f.Name()) {
				r.Strikes = append(r.Strikes, f)
			}
			if r.Carrier == nil || f.Name() == faults.Pause {
				r.Carrier = f
			}
		}
	}
	// Strikes in the order named: the first carries the riders.
	slices.SortStableFunc(r.Strikes, func(a, b registry.ClientFault) int {
		return slices.Index(r.Spec.Faults, a.Name()) - slices.Index(r.Spec.Faults, b.Name())
	})
}

// Normalize fills the spec's defaults and validates it without running anything. The
// error wraps ErrSpec.
func Normalize(reg *registry.Registry, s Spec) (Spec, error) {
	r, err := Resolve(reg, s)
	if err != nil {
		return r.spec(s), err
	}
	return r.Spec, nil
}

// spec is what the resolution knew of s when it failed.
func (r *Resolved) spec(s Spec) Spec {
	if r == nil {
		return s
	}
	return r.Spec
}

// External reports whether the run points its backend at servers fencecheck does not
// own (an External option is set).
func (r *Resolved) External() bool { return r.Backend.IsExternal(r.Settings) }

// Unavailable says why the run cannot go here (a program its backend or resource needs
// is missing, no server configured), or "".
func (r *Resolved) Unavailable() string {
	if why := r.Backend.Unavailability(r.Settings); why != "" {
		return why
	}
	return r.Resource.Unavailability(r.ResourceSettings)
}

// Unavailable says why a spec cannot run here, or "": also for a spec that does not
// resolve (a tokenless backend's fenced spec still says what it would need here), by
// its backend's and resource's names.
func Unavailable(reg *registry.Registry, s Spec) string {
	r, err := Resolve(reg, s)
	if err == nil {
		return r.Unavailable()
	}
	if reg == nil {
		return ""
	}
	set := registry.Settings{TTL: s.TTL, Members: max(s.Members, 1), Options: s.Options}
	if b, ok := reg.Backend(s.Backend); ok {
		if why := b.Unavailability(set); why != "" {
			return why
		}
	}
	if x, ok := reg.Resource(s.Resource); ok {
		return x.Unavailability(set)
	}
	return ""
}

// DefaultBackend is the backend an option implies (--etcd-endpoints: etcd; an option of
// a family, like --zookeeper-servers, the family's first), else the first registered.
func DefaultBackend(reg *registry.Registry, opts map[string]string) string {
	keys := make([]string, 0, len(opts))
	for k, v := range opts {
		if v != "" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, name := range keys {
		if owners, _ := reg.OptionOwners(name); len(owners) > 0 {
			return owners[0]
		}
	}
	if bs := reg.Backends(); len(bs) > 0 {
		return bs[0].Name
	}
	return ""
}

type splitOpts struct {
	// all are the options kept; backend and resource the ones each descriptor owns.
	all, backend, resource map[string]string
}

// splitOptions sorts a spec's options by owner. An option of another backend is an
// error (it would be silently ignored); one of another resource is dropped.
func splitOptions(reg *registry.Registry, s Spec) (splitOpts, error) {
	var o splitOpts
	be, _ := reg.Backend(s.Backend)
	res, _ := reg.Resource(s.Resource)
	keys := make([]string, 0, len(s.Options))
	for k := range s.Options {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	put := func(m *map[string]string, k, v string) {
		if *m == nil {
			*m = map[string]string{}
		}
		(*m)[k] = v
	}
	for _, k := range keys {
		v := s.Options[k]
		if v == "" {
			continue
		}
		inBackend, inResource := registry.HasOption(be.Options, k), registry.HasOption(res.Options, k)
		switch {
		case inBackend || inResource:
			put(&o.all, k, v)
			if inBackend {
				put(&o.backend, k, v)
			}
			if inResource {
				put(&o.resource, k, v)
			}
		default:
			backends, resources := reg.OptionOwners(k)
			switch {
			case len(backends) > 0:
				return o, fmt.Errorf("--%s is for the %s backend (got %q)", k, strings.Join(backends, " or "), s.Backend)
			case len(resources) == 0:
				return o, fmt.Errorf("unknown option --%s", k)
			}
		}
	}
	return o, nil
}

// checkKeys validates Spec.Keys: independent keys need a lock service and a resource
// that serve them (harness.KeyedLocker, harness.KeyedResourceClient).
func checkKeys(s Spec, backend string, caps registry.Caps, res registry.Resource) error {
	switch {
	case s.Keys < 0 || s.Keys > MaxKeys:
		return fmt.Errorf("keys must be between 1 and %d, got %d", MaxKeys, s.Keys)
	case s.Keys <= 1:
		return nil
	case !caps.Keyed:
		return registry.Refuse("harness.KeyedLocker (its lockers)", "backend %s does not support independent keys (--keys): its lock client holds one lock only", backend)
	case !res.Keyed:
		return registry.Refuse("registry.Resource.Keyed, with clients that are a harness.KeyedResourceClient", "resource %s does not support independent keys (--keys): it keeps one register only", res.Name)
	}
	return nil
}

// leastRunTime is the least a run of s lasts: its workload, which with a fault waits for
// it to strike (about a TTL) and heal (two TTLs at least), and a TTL's tail.
func leastRunTime(s Spec) time.Duration {
	work := s.Duration
	if len(s.Faults) > 0 {
		work = max(work, 3*s.TTL)
	}
	return work + s.TTL
}

func propertyNames() string {
	names := make([]string, len(models.AllProperties))
	for i, p := range models.AllProperties {
		names[i] = string(p)
	}
	return strings.Join(names, ", ")
}
