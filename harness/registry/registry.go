// Package registry holds the descriptor types of what fencecheck can run — lock
// backends (Backend, with its Options and Shape), protected resources (Resource) and
// faults (Fault, ClientFault, ServiceFault) — and the Registry value they are
// registered in. Every stage (spec, trial, campaign, the CLI, the fencecheck front)
// works in a Registry it is given and never reads a global one: a user's test builds
// one with fencecheck.Registry (fencecheck's faults and register resources, and its
// own backends), the CLI with builtin. Adding a backend is a package that
// exports its descriptor and one registration.
//
// What a backend can undergo is read from the interfaces its values implement
// (harness.Crasher, harness.Cluster, harness.KeyedLocker, harness.Expiring, ...),
// never from its name or a list: before anything starts, from the values of the
// descriptor's Shape (typed nil pointers of the types Start, NewLocker and Acquire
// return); once it runs, from the started values. The contract suite
// (harnesstest) checks that the two agree. A refusal says in words what
// cannot be done here and carries the Go name that would lift it (Refuse, GoNames,
// WithGoNames).
package registry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/proc"
)

// Defaults every descriptor may override.
const (
	DefaultTTL = 500 * time.Millisecond
	// MaxTTL is the longest lease TTL a run takes (Backend.MaxTTL may lower it): every
	// wait of a run derives from the TTL (a pause holds the lock two TTLs), so a longer
	// one makes a run of hours that proves nothing a shorter one would not.
	MaxTTL = time.Minute
)

// Option is one of a descriptor's own settings, given on the command line as
// --NAME=value and in a Spec's Options map.
type Option struct {
	// Name is the flag name, e.g. "etcd-endpoints".
	Name  string
	Usage string
	// Env, if set, is the environment variable read when the option is not given.
	Env string
	// External marks an option that points the backend at servers fencecheck does not
	// own: a run with it is labelled "-external" and matches no catalogue scenario.
	External bool
	// Secret marks an option whose value carries credentials (a DSN's password, a
	// kubeconfig's token): the CLI masks them in everything it prints and writes.
	Secret bool
}

// Settings are what a descriptor's functions see of a run.
type Settings struct {
	TTL     time.Duration
	Members int
	Clients int
	// Fence is the resource's fence rule (history.FenceStrict or FenceMonotonic).
	Fence string
	// Faults are the run's targeted faults: a backend whose clock runs fast from its
	// start (FastClocked) must know before it starts.
	Faults []string
	// TokenResource names the run's resource when its safety rests on fencing tokens
	// (Resource.NeedsToken), else "": a backend that learns only while it runs that its
	// grants carry no token (exec: the client says so) then ends the run with ErrNoToken.
	TokenResource string
	// Options are the descriptor's own options as given (not yet the Env defaults).
	Options map[string]string
	// opts are the descriptor's declared options, for Option's Env defaults.
	opts []Option
}

// Option returns an option's value: as given, else its environment variable's.
func (s Settings) Option(name string) string {
	if v := s.Options[name]; v != "" {
		return v
	}
	for _, o := range s.opts {
		if o.Name == name && o.Env != "" {
			return os.Getenv(o.Env)
		}
	}
	return ""
}

// List returns a comma-separated option's values.
func (s Settings) List(name string) []string {
	var out []string
	for _, p := range strings.Split(s.Option(name), ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// WithOptions returns s for a descriptor declaring opts (so that Option reads their
// environment defaults).
func (s Settings) WithOptions(opts []Option) Settings {
	s.opts = opts
	return s
}

// Env is what a backend's Start gets from the harness.
type Env struct {
	Settings
	// RunID names the run (also in the history's run object): a backend whose store
	// outlives the run keeps the run's keys under it and removes them when it closes.
	RunID string
	// ClientClock returns the reader of client i's clock, owned by the harness (a
	// careful client checks its lease on it).
	ClientClock func(client int) func() time.Time
	// TempDir makes a directory removed when the run ends.
	TempDir func() (string, error)
	// LogFile creates name in the run's evidence folder for the service's logs; without
	// a folder it returns io.Discard and an empty path.
	LogFile func(name string) (io.Writer, string, error)
	// Logger is the run's log (run.log; -v copies it to stderr), for what a backend's
	// clients say as they go (an exec client's stderr); nil: discard.
	Logger *slog.Logger
}

// Backend describes a lock backend: its name and options, and three groups (promoted,
// so b.TTL reads b.Facts.TTL) a new field joins instead of widening this struct.
type Backend struct {
	Name    string
	Meaning string
	// Token says in a few words where the fencing tokens come from.
	Token string
	// Options are the backend's own settings.
	Options []Option
	// Facts are what the service is and does that no interface can show.
	Facts
	// Lifecycle is how a run checks the settings, starts the service and learns of it.
	Lifecycle
	// Listing is where the backend appears: matrix rows, its service, compare.
	Listing
}

// Facts are a backend's defaults and the facts of its service a run or a
// comparison needs before anything starts.
type Facts struct {
	// TTL is the default lease TTL (0: DefaultTTL); Members the default cluster size
	// (0: 1).
	TTL     time.Duration
	Members int
	// MaxTTL is the longest TTL the service takes (0 or more than MaxTTL: MaxTTL).
	MaxTTL time.Duration
	// NodeFaultMembers, if set, is the cluster size matrix and evaluate cells use when
	// a fault acts on the lock service (a leader to isolate needs followers).
	NodeFaultMembers int
	// Native lists resources native to the backend (the service's own store).
	Native []string
	// TokensResetOnCrash: the token counter is lost when the server crashes, so tokens
	// go back (the expected verdicts of derived cells say so).
	TokensResetOnCrash bool
	// DurableLeases: the server keeps its leases across a crash and a restart with its
	// data (it logs its sessions), so a crash of a single server frees no lock before
	// the TTL has run out. A fact of the service no interface can show.
	DurableLeases bool
	// MultiMember: the backend can run with more than one member (--members), and Check
	// says which sizes it takes. Without it a run's Members must be 1, whatever Check
	// says.
	MultiMember bool
	// Pool, if set, says what shares server sessions among the clients (a connection
	// pooler): a session lock then belongs to a pooled server connection, not to the
	// client that took it. A fact of the setup no interface can show.
	Pool string
	// TokenFromClock: the tokens are readings of a clock rather than a counter, so a
	// clock that steps back, or two grants within one tick, give a token that is not
	// newer. A fact no interface can show before the service starts.
	TokenFromClock bool
	// ClientClockExpiry: each client's own clock decides when the lock it takes expires
	// (the grant compares the taker's clock with the holder's), so a client whose clock
	// runs ahead takes a lock that is still held.
	ClientClockExpiry bool
	// SilentHolder, if set, says what frees a lock whose holder went quiet without
	// closing its connections (silent-partition), and the setting a team must make for
	// it to happen within about a TTL: the fact a comparison's paragraph names.
	SilentHolder string
	// Configuration, if set, names what a team must set on the service or its client for
	// a run's result to hold in production (Redis appendfsync always, PostgreSQL
	// idle_session_timeout, the ZooKeeper session timeout, ...): the settings the runs
	// relied on, which a default install may lack. A comparison's paragraph names it.
	Configuration string
}

// Lifecycle holds the functions a run calls on a backend's descriptor, from checking
// its settings to starting it.
type Lifecycle struct {
	// DefaultsFrom, if set, names the backend whose TTL, Members, NodeFaultMembers and
	// DurableLeases a run takes with these settings (the exec backend: its lock
	// service's, so that --lock-service etcd runs at etcd's 1 s).
	DefaultsFrom func(Settings) (Backend, bool)
	// Check validates the settings before anything starts (TTL, options, the sizes of
	// a MultiMember backend). Errors are the user's input.
	Check func(Settings) error
	// Shape returns values of the types Start, NewLocker and Acquire will return with
	// these settings (see Shape): plans read the capabilities from their interfaces
	// before anything starts. nil: none of the optional capabilities.
	Shape func(Settings) Shape
	// Setup describes the service for a scorecard; nil: "<Name>: <Meaning>".
	Setup func(Settings) string
	// GrantedTTL, if set, asks the service which lease TTL it grants when asked for
	// s.TTL (an existing cluster may raise a short one). Every timing of a run derives
	// from the TTL, so a run uses the granted one or is refused. nil: granted as asked.
	GrantedTTL func(ctx context.Context, s Settings) (time.Duration, error)
	// Needs lists what the machine must have to run the service with these settings
	// (programs, files, Debian packages or build scripts); nil: nothing. A run, a test or
	// `soak all` whose needs are missing says which, in one line, and skips.
	Needs func(Settings) []proc.Need
	// Unavailable says why the service cannot run here for a reason Needs does not
	// cover, or "" when it can; nil: no such reason.
	Unavailable func(Settings) string
	// Start starts the service. Wrap errors that are the user's input with Input.
	Start func(ctx context.Context, env Env) (harness.Backend, error)
	// Version, if set, says which version of the service these settings run ("etcd
	// 3.6.5 (embedded)", "Redis server v=7.0.15"), learned from the program or the
	// linked module; "" when it cannot be learned (an existing server).
	Version func(ctx context.Context, s Settings) string
	// Shared: Start returns one value that every run shares, a backend its caller
	// started and will close (fencecheck.Config.Started): no run closes it, and a
	// campaign runs one run at a time.
	Shared bool
}

// Listing says where a backend appears among the others.
type Listing struct {
	// Matrix puts the backend in matrix's default rows.
	Matrix bool
	// Service names the lock service this backend is a variant of (several backends
	// run one service with another token, persistence or client: redis, redis-volatile
	// and redis-notoken are the service "redis"); "": the backend is a service of its
	// own, named Name.
	Service string
	// Recommended marks the variant of its service a team should adopt: `compare` runs
	// it for the service. Of a service with several variants exactly one says so; the
	// only backend of a service is its recommended variant whether it says so or not.
	Recommended bool
}

// TokenWords is the descriptor's Token, or words naming the backend's token when it
// states none.
func (b Backend) TokenWords() string {
	if b.Token != "" {
		return b.Token
	}
	return b.Name + "'s lease token"
}

// ServiceName is the lock service the backend is a variant of: Service, or Name.
func (b Backend) ServiceName() string {
	if b.Service != "" {
		return b.Service
	}
	return b.Name
}

// VersionOf is what the descriptor's Version says with settings ("" without one).
func (b Backend) VersionOf(ctx context.Context, s Settings) string {
	if b.Version == nil {
		return ""
	}
	return b.Version(ctx, s.WithOptions(b.Options))
}

// ResourceEnv is what a resource's Start gets.
type ResourceEnv struct {
	Settings
	// RunID names the run (see Env.RunID).
	RunID string
	// Backend is the started lock backend (a native resource uses its endpoints).
	Backend harness.Backend
	TempDir func() (string, error)
}

// Resource describes a protected resource.
type Resource struct {
	Name    string
	Meaning string
	// Unfenced: lets a stale write through by design (no fence, or a check-then-write
	// over separate requests).
	Unfenced bool
	// ChecksThenWrites: clients check the token and write in separate steps and pause
	// between them (harness.PauseAfterCheck).
	ChecksThenWrites bool
	// Embedded, when set, names the store clients use in-process, without a network
	// between them (no endpoints to delay), e.g. "SQLite".
	Embedded string
	// Keyed: clients are harness.KeyedResourceClients (--keys).
	Keyed bool
	// NeedsToken: the resource's safety rests on fencing tokens; a Tokenless backend
	// cannot be made safe with it.
	NeedsToken bool
	// NativeOnly: only backends listing it in Backend.Native can use it.
	NativeOnly bool
	// Advice, for a native resource, is the condition a scorecard adds for using it.
	Advice  string
	Options []Option
	// Needs and Unavailable: as a Backend's (e.g. no server configured).
	Needs       func(Settings) []proc.Need
	Unavailable func(Settings) string
	// Start starts the resource. Wrap errors that are the user's input with Input.
	Start func(ctx context.Context, env ResourceEnv) (harness.Resource, error)
}

// Registry holds the descriptors, in registration order (the order `list` prints).
type Registry struct {
	backends  []Backend
	resources []Resource
	faults    []Fault
}

// New returns an empty registry.
func New() *Registry { return &Registry{} }

// AddBackend registers backends. A duplicate or empty name, or no Start, is an error.
func (r *Registry) AddBackend(bs ...Backend) error {
	for _, b := range bs {
		switch {
		case b.Name == "" || b.Start == nil:
			return fmt.Errorf("registry: backend %q needs a name and a Start function", b.Name)
		case slices.ContainsFunc(r.backends, func(x Backend) bool { return x.Name == b.Name }):
			return fmt.Errorf("registry: backend %q registered twice", b.Name)
		}
		if err := r.checkOptions(b.Options); err != nil {
			return err
		}
		r.backends = append(r.backends, b)
	}
	return nil
}

// AddResource registers resources.
func (r *Registry) AddResource(rs ...Resource) error {
	for _, x := range rs {
		switch {
		case x.Name == "" || x.Start == nil:
			return fmt.Errorf("registry: resource %q needs a name and a Start function", x.Name)
		case slices.ContainsFunc(r.resources, func(y Resource) bool { return y.Name == x.Name }):
			return fmt.Errorf("registry: resource %q registered twice", x.Name)
		}
		if err := r.checkOptions(x.Options); err != nil {
			return err
		}
		r.resources = append(r.resources, x)
	}
	return nil
}

// AddFault registers faults.
func (r *Registry) AddFault(fs ...Fault) error {
	for _, f := range fs {
		_, client := f.(ClientFault)
		_, service := f.(ServiceFault)
		switch {
		case f.Name() == "" || client == service:
			return fmt.Errorf("registry: fault %q must be a ClientFault or a ServiceFault", f.Name())
		case slices.ContainsFunc(r.faults, func(x Fault) bool { return x.Name() == f.Name() }):
			return fmt.Errorf("registry: fault %q registered twice", f.Name())
		}
		r.faults = append(r.faults, f)
	}
	return nil
}

// checkOptions refuses an option name another descriptor already declared with another
// meaning; a family of resources may share one (the postgres DSN).
func (r *Registry) checkOptions(opts []Option) error {
	for _, o := range opts {
		if o.Name == "" {
			return errors.New("registry: an option needs a name")
		}
		if prev, ok := r.Option(o.Name); ok && prev != o {
			return fmt.Errorf("registry: option --%s declared twice with different settings", o.Name)
		}
	}
	return nil
}

// Backends returns the backend descriptors in registration order.
func (r *Registry) Backends() []Backend { return slices.Clone(r.backends) }

// Resources returns the resource descriptors in registration order.
func (r *Registry) Resources() []Resource { return slices.Clone(r.resources) }

// Faults returns the faults in registration order.
func (r *Registry) Faults() []Fault { return slices.Clone(r.faults) }

// Backend looks a backend up by name.
func (r *Registry) Backend(name string) (Backend, bool) {
	i := slices.IndexFunc(r.backends, func(b Backend) bool { return b.Name == name })
	if i < 0 {
		return Backend{}, false
	}
	return r.backends[i], true
}

// Resource looks a resource up by name.
func (r *Registry) Resource(name string) (Resource, bool) {
	i := slices.IndexFunc(r.resources, func(x Resource) bool { return x.Name == name })
	if i < 0 {
		return Resource{}, false
	}
	return r.resources[i], true
}

// Fault looks a fault up by name.
func (r *Registry) Fault(name string) (Fault, bool) {
	i := slices.IndexFunc(r.faults, func(f Fault) bool { return f.Name() == name })
	if i < 0 {
		return nil, false
	}
	return r.faults[i], true
}

// Options lists every option of every descriptor once, backends first, in
// registration order: the CLI declares one flag for each.
func (r *Registry) Options() []Option {
	var out []Option
	add := func(opts []Option) {
		for _, o := range opts {
			if !slices.ContainsFunc(out, func(x Option) bool { return x.Name == o.Name }) {
				out = append(out, o)
			}
		}
	}
	for _, b := range r.backends {
		add(b.Options)
	}
	for _, x := range r.resources {
		add(x.Options)
	}
	return out
}

// Option looks an option up by name.
func (r *Registry) Option(name string) (Option, bool) {
	i := slices.IndexFunc(r.Options(), func(o Option) bool { return o.Name == name })
	if i < 0 {
		return Option{}, false
	}
	return r.Options()[i], true
}

// OptionOwners names the backends and the resources that declare an option.
func (r *Registry) OptionOwners(name string) (backends, resources []string) {
	for _, b := range r.backends {
		if slices.ContainsFunc(b.Options, func(o Option) bool { return o.Name == name }) {
			backends = append(backends, b.Name)
		}
	}
	for _, x := range r.resources {
		if slices.ContainsFunc(x.Options, func(o Option) bool { return o.Name == name }) {
			resources = append(resources, x.Name)
		}
	}
	return backends, resources
}

// NativeOwners names the backends a native resource belongs to.
func (r *Registry) NativeOwners(resource string) []string {
	var out []string
	for _, b := range r.backends {
		if slices.Contains(b.Native, resource) {
			out = append(out, b.Name)
		}
	}
	return out
}

// HasOption reports whether opts declares name.
func HasOption(opts []Option, name string) bool {
	return slices.ContainsFunc(opts, func(o Option) bool { return o.Name == name })
}

// inputError marks an error that is the user's input (a bad setting, an unreachable
// server they named).
type inputError struct{ err error }

func (e inputError) Error() string        { return e.err.Error() }
func (e inputError) Unwrap() error        { return e.err }
func (e inputError) Is(target error) bool { return target == ErrInput }

// ErrInput matches errors wrapped by Input.
var ErrInput = errors.New("bad input")

// ErrNoToken marks a run of a backend without fencing tokens against a resource that
// fences on them: it cannot be made safe by fencing (a usage error, exit 2).
var ErrNoToken = errors.New("no fencing token: cannot be made safe by fencing")

// Input marks err as the user's input: the CLI exits 2 for it. The message is err's.
func Input(err error) error {
	if err == nil {
		return nil
	}
	return inputError{err}
}

// Unavailability says why the backend cannot run here with settings (a missing need
// first), or "" when it can.
func (b Backend) Unavailability(s Settings) string {
	return unavailability(s.WithOptions(b.Options), b.Needs, b.Unavailable)
}

// NeedsOf lists what the backend needs with settings.
func (b Backend) NeedsOf(s Settings) []proc.Need {
	if b.Needs == nil {
		return nil
	}
	return b.Needs(s.WithOptions(b.Options))
}

// Unavailability says why the resource cannot run here with settings, or "".
func (r Resource) Unavailability(s Settings) string {
	return unavailability(s.WithOptions(r.Options), r.Needs, r.Unavailable)
}

// NeedsOf lists what the resource needs with settings.
func (r Resource) NeedsOf(s Settings) []proc.Need {
	if r.Needs == nil {
		return nil
	}
	return r.Needs(s.WithOptions(r.Options))
}

func unavailability(s Settings, needs func(Settings) []proc.Need, other func(Settings) string) string {
	if needs != nil {
		if why := proc.Missing(needs(s)...); why != "" {
			return why
		}
	}
	if other != nil {
		return other(s)
	}
	return ""
}

// Recommended returns the recommended variant of every service, in registration order:
// the one that says so, or a service's only backend.
func (r *Registry) Recommended() []Backend {
	var out []Backend
	for _, b := range r.backends {
		if r.IsRecommended(b.Name) {
			out = append(out, b)
		}
	}
	return out
}

// IsRecommended reports whether the named backend is the recommended variant of its
// service: it says so, or it is the service's only backend.
func (r *Registry) IsRecommended(name string) bool {
	b, ok := r.Backend(name)
	if !ok {
		return false
	}
	return b.Recommended || len(r.Variants(b.ServiceName())) == 1
}

// Variants returns the backends of a service, in registration order.
func (r *Registry) Variants(service string) []Backend {
	var out []Backend
	for _, b := range r.backends {
		if b.ServiceName() == service {
			out = append(out, b)
		}
	}
	return out
}

// CheckServices says which service of several variants has no recommended variant, or
// which service has more than one (nil when each has exactly one): a registry's
// consistency, checked by the built-in registry's tests and a user's own.
func (r *Registry) CheckServices() error {
	var services []string
	for _, b := range r.backends {
		if !slices.Contains(services, b.ServiceName()) {
			services = append(services, b.ServiceName())
		}
	}
	for _, svc := range services {
		var rec []string
		for _, b := range r.Variants(svc) {
			if b.Recommended {
				rec = append(rec, b.Name)
			}
		}
		switch len(rec) {
		case 1:
		case 0:
			if len(r.Variants(svc)) == 1 {
				continue // its only backend
			}
			return fmt.Errorf("registry: service %q has no recommended variant (set Recommended on one of its backends)", svc)
		default:
			return fmt.Errorf("registry: service %q has %d recommended variants (%s); set Recommended on one", svc, len(rec), strings.Join(rec, ", "))
		}
	}
	return nil
}

// Named is a name a user types, with one line of meaning.
type Named struct {
	Name    string
	Meaning string
}

// BackendNames lists the backends, in registration order.
func (r *Registry) BackendNames() []Named {
	out := make([]Named, 0, len(r.backends))
	for _, b := range r.backends {
		out = append(out, Named{b.Name, b.Meaning})
	}
	return out
}

// ResourceNames lists the resources, in registration order.
func (r *Registry) ResourceNames() []Named {
	out := make([]Named, 0, len(r.resources))
	for _, x := range r.resources {
		out = append(out, Named{x.Name, x.Meaning})
	}
	return out
}

// FaultNames lists the faults, in registration order.
func (r *Registry) FaultNames() []Named {
	out := make([]Named, 0, len(r.faults))
	for _, f := range r.faults {
		out = append(out, Named{f.Name(), f.Meaning()})
	}
	return out
}

// ActsOnService reports whether the named fault acts on the lock service (a
// ServiceFault) rather than striking a client.
func (r *Registry) ActsOnService(fault string) bool {
	f, ok := r.Fault(fault)
	if !ok {
		return false
	}
	_, service := f.(ServiceFault)
	return service
}

// ClientFaultNames names the faults that strike a client, in registration order.
func (r *Registry) ClientFaultNames() []string {
	var out []string
	for _, f := range r.faults {
		if _, ok := f.(ClientFault); ok {
			out = append(out, f.Name())
		}
	}
	return out
}

// Names joins the names of a list: "a, b, c".
func Names(list []Named) string {
	s := make([]string, len(list))
	for i, n := range list {
		s[i] = n.Name
	}
	return strings.Join(s, ", ")
}
