// Package scenarios is the catalogue of named scenarios — a backend, a resource, a fault
// and the verdicts docs/expected-verdicts.md gives — and the code that runs one: resolve
// the names in a registry (harness/registry; the built-in one by default), start the
// servers, run the workload, save the evidence, check it. The CLI, `go test
// ./scenarios/...` and a user's own tests share it.
package scenarios

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/builtin"
	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/nemesis"
)

// Spec says what to run. Zero fields take defaults.
type Spec struct {
	// Name is recorded in the history; empty for an ad-hoc run.
	Name string
	// Backend and Resource are registry names (default: the first registered of each,
	// the naive backend and the fenced register).
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
}

// Defaults for a Spec.
const (
	DefaultClients = 3
	// DefaultTTL is the TTL of a backend whose descriptor sets none (etcd's: 1 s).
	DefaultTTL      = registry.DefaultTTL
	DefaultDuration = 2 * time.Second
)

// Named is a name a user types, with one line of meaning.
type Named struct {
	Name    string
	Meaning string
}

// BackendNames lists the built-in lock backends.
func BackendNames() []Named { return backendNames(builtin.Registry()) }

func backendNames(reg *registry.Registry) []Named {
	var out []Named
	for _, b := range reg.Backends() {
		out = append(out, Named{b.Name, b.Meaning})
	}
	return out
}

// ResourceNames lists the built-in protected resources.
func ResourceNames() []Named { return resourceNames(builtin.Registry()) }

func resourceNames(reg *registry.Registry) []Named {
	var out []Named
	for _, r := range reg.Resources() {
		out = append(out, Named{r.Name, r.Meaning})
	}
	return out
}

// FaultNames lists the built-in targeted faults.
func FaultNames() []Named { return faultNames(builtin.Registry()) }

func faultNames(reg *registry.Registry) []Named {
	var out []Named
	for _, f := range reg.Faults() {
		out = append(out, Named{f.Name(), f.Meaning()})
	}
	return out
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

// resolved is a validated spec with the descriptors its names resolve to.
type resolved struct {
	Spec
	reg      *registry.Registry
	backend  registry.Backend
	resource registry.Resource
	// settings are the backend's; resSettings the resource's.
	settings, resSettings registry.Settings
	target                registry.Target
}

// withDefaults fills zero fields and validates the spec against the built-in registry.
func (s Spec) withDefaults() (Spec, error) {
	r, err := resolve(nil, s)
	return r.Spec, err
}

// defaultRegistry is the registry used when none is given.
func defaultRegistry() *registry.Registry { return builtin.Registry() }

// resolve fills zero fields and validates the spec against reg (nil: the built-in one).
func resolve(reg *registry.Registry, s Spec) (resolved, error) {
	if reg == nil {
		reg = defaultRegistry()
	}
	r := resolved{reg: reg}
	fail := func(err error) (resolved, error) {
		r.Spec = s
		return r, err
	}
	if s.Backend == "" {
		s.Backend = defaultBackend(reg, s.Options)
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
	if !beOK {
		return fail(fmt.Errorf("unknown backend %q (known: %s)", s.Backend, names(backendNames(reg))))
	}
	res, ok := reg.Resource(s.Resource)
	if !ok {
		return fail(fmt.Errorf("unknown resource %q (known: %s)", s.Resource, names(resourceNames(reg))))
	}
	r.backend, r.resource = be, res
	if s.Fence != history.FenceStrict && s.Fence != history.FenceMonotonic {
		return fail(fmt.Errorf("unknown fence %q (want strict or monotonic)", s.Fence))
	}
	for _, f := range append(append([]string(nil), s.Faults...), s.RandomFaults...) {
		if _, ok := reg.Fault(f); !ok {
			return fail(fmt.Errorf("unknown fault %q (known: %s)", f, names(faultNames(reg))))
		}
	}
	if len(s.RandomFaults) > 0 {
		if len(s.Faults) > 0 {
			return fail(fmt.Errorf("give either targeted faults (--fault) or a random schedule (--faults), not both"))
		}
		if s.Interval == 0 {
			s.Interval = 2 * s.TTL
		}
		if s.Interval < 0 {
			return fail(fmt.Errorf("interval must be positive, got %v", s.Interval))
		}
		if s.Duration < 2*s.Interval {
			return fail(fmt.Errorf("a random schedule needs a duration of at least twice the interval (%v), got %v", 2*s.Interval, s.Duration))
		}
	}
	if s.Clients < 2 || s.Clients > 64 {
		return fail(fmt.Errorf("clients must be between 2 and 64 (a stale write needs a second client), got %d", s.Clients))
	}
	if s.TTL < 0 {
		return fail(fmt.Errorf("ttl must be positive, got %v", s.TTL))
	}
	if s.TTL < 50*time.Millisecond {
		return fail(fmt.Errorf("ttl %v is too short: below 50ms the timing noise of a loaded machine decides the verdicts", s.TTL))
	}
	if s.Duration < 0 {
		return fail(fmt.Errorf("duration must be positive, got %v", s.Duration))
	}
	opts, err := splitOptions(reg, s)
	if err != nil {
		return fail(err)
	}
	s.Options = opts.all
	r.settings = registry.Settings{TTL: s.TTL, Members: s.Members, Clients: s.Clients, Fence: s.Fence, Faults: s.Faults, Options: opts.backend}.WithOptions(be.Options)
	r.resSettings = registry.Settings{TTL: s.TTL, Members: s.Members, Clients: s.Clients, Fence: s.Fence, Options: opts.resource}.WithOptions(res.Options)
	if err := be.CheckSettings(r.settings); err != nil {
		return fail(err)
	}
	caps := be.PlanCaps(r.settings)
	if s.Policy == "" {
		s.Policy = "trusting"
	}
	if !known(Policies(), s.Policy) {
		return fail(fmt.Errorf("unknown client policy %q (known: %s)", s.Policy, names(Policies())))
	}
	if s.Policy == "careful" && !caps.ClientExpiry {
		return fail(fmt.Errorf("the careful policy needs a lease that knows its end by the client's clock: leases that implement harness.Expiring (ValidUntil), and backend %s's Shape.Lease does not", s.Backend))
	}
	if res.NativeOnly && !slices.Contains(be.Native, res.Name) {
		owners := reg.NativeOwners(res.Name)
		return fail(fmt.Errorf("resource %s needs the %s backend (got %q)", res.Name, strings.Join(owners, " or "), s.Backend))
	}
	if caps.NoToken != "" && res.NeedsToken {
		return fail(fmt.Errorf("%w (backend %s: %s; resource %s fences on tokens)", ErrNoToken, s.Backend, caps.NoToken, res.Name))
	}
	if err := checkKeys(s, be.Name, caps, res); err != nil { // keys.go
		return fail(err)
	}
	r.target = registry.Target{Backend: be.Name, Caps: caps, Resource: res, Policy: s.Policy, TTL: s.TTL, Random: len(s.RandomFaults) > 0}
	for _, f := range reg.Faults() {
		if _, ok := f.(registry.ClientFault); ok {
			r.target.ClientFaults = append(r.target.ClientFaults, f.Name())
		}
	}
	for _, f := range s.Faults {
		if err := r.applies(f); err != nil {
			return fail(err)
		}
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
			return fail(fmt.Errorf("no fault of --faults applies: %s", strings.Join(s.Skipped, "; ")))
		}
		s.RandomFaults = kinds
	}
	r.Spec = s
	return r, nil
}

// ErrNoToken marks a run of a backend without fencing tokens against a resource that
// fences on them: it cannot be made safe by fencing (a usage error, exit 2).
var ErrNoToken = errors.New("no fencing token: cannot be made safe by fencing")

// defaultBackend is the backend an option implies (--etcd-endpoints: etcd; an option
// of a family, like --zookeeper-servers, the family's first), else the first registered.
func defaultBackend(reg *registry.Registry, opts map[string]string) string {
	for name, v := range opts {
		if v == "" {
			continue
		}
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

// applies says why fault f cannot run against the spec, or nil.
func (r resolved) applies(f string) error {
	fault, ok := r.reg.Fault(f)
	if !ok {
		return fmt.Errorf("unknown fault %q", f)
	}
	return fault.Applies(r.target)
}

// isServiceFault reports whether a fault acts on the lock service rather than on a
// client.
func isServiceFault(reg *registry.Registry, f string) bool {
	fault, ok := reg.Fault(f)
	if !ok {
		return false
	}
	_, service := fault.(registry.ServiceFault)
	return service
}

// Policies lists the client policies.
func Policies() []Named {
	return []Named{
		{"trusting", "writes whenever its code path reaches the write (default)"},
		{"careful", "checks by its own clock that its lease is still valid, with a margin of TTL/10, right before writing (naive and raft backends)"},
	}
}

// clientFaults turns the spec's fault names into targeted faults against the started
// backend. Service faults ride along with the client fault (given alone, they ride on a
// pause of the holder, so that the run contains a stale write to stop).
func (r resolved) clientFaults(be harness.Backend) []nemesis.ClientFault {
	// The faults strike what started: its capabilities, no longer the Shape's.
	r.target.Caps = r.backend.RunCaps(r.settings, be)
	action := func(kind string) (nemesis.Action, bool) {
		f, ok := r.reg.Fault(kind)
		if !ok {
			return nemesis.Action{}, false
		}
		sf, ok := f.(registry.ServiceFault)
		if !ok {
			return nemesis.Action{}, false
		}
		// A service fault acts on the lock service, which a backend may wrap.
		return sf.Action(r.target, registry.Service(be)), true
	}
	if sched, ok := r.schedule(); ok {
		return sched.ClientFaults(func(it nemesis.Item) (nemesis.ClientFault, bool) {
			f, _ := r.reg.Fault(it.Kind)
			switch f := f.(type) {
			case registry.ClientFault:
				return f.Strike(r.target, nil), true
			case registry.ServiceFault:
				// Rides on the first pause point any client reaches, leaving its links alone.
				a, _ := action(it.Kind)
				return nemesis.ClientFault{AnyPoint: true, NoLinks: true, With: []nemesis.Action{a}}, true
			}
			return nemesis.ClientFault{}, false
		})
	}
	var with []nemesis.Action
	var strikes []registry.ClientFault
	for _, name := range r.Faults {
		f, _ := r.reg.Fault(name)
		switch f := f.(type) {
		case registry.ServiceFault:
			a, _ := action(name)
			with = append(with, a)
		case registry.ClientFault:
			strikes = append(strikes, f)
		}
	}
	if len(with) > 0 && len(strikes) == 0 {
		strikes = append(strikes, r.carrier())
	}
	// Riders in registry order, so that which one shapes the pause does not depend on
	// the order the user named them in.
	var riders []registry.ServiceFault
	for _, f := range r.reg.Faults() {
		if sf, ok := f.(registry.ServiceFault); ok && slices.Contains(r.Faults, f.Name()) {
			riders = append(riders, sf)
		}
	}
	var out []nemesis.ClientFault
	for _, cf := range strikes {
		f := cf.Strike(r.target, riders)
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

// carrier is the client fault a service fault given alone rides on: a pause, or the
// first client fault registered.
func (r resolved) carrier() registry.ClientFault {
	if f, ok := r.reg.Fault("pause"); ok {
		if cf, ok := f.(registry.ClientFault); ok {
			return cf
		}
	}
	for _, f := range r.reg.Faults() {
		if cf, ok := f.(registry.ClientFault); ok {
			return cf
		}
	}
	return nil
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
