// Package fencecheck is the small front of fencecheck for a Go test: run one scenario
// or an evaluation against a lock backend of your own — a registry.Backend descriptor,
// or a harness.Backend value you started — with the options in one Config.
//
//	res, err := fencecheck.Run(ctx, fencecheck.Config{Backend: mylock.Descriptor(), Store: t.TempDir()})
//	ev, err := fencecheck.Evaluate(ctx, fencecheck.Config{Backend: mylock.Descriptor(), Store: t.TempDir()})
//	p, err := fencecheck.Plan(ctx, fencecheck.Config{Backend: mylock.Descriptor()}) // runs nothing
//
// reports.Summary(t.Output(), res.History, res.Report) and
// reports.PrintScorecard(t.Output(), ev.Scorecard) print a run and a scorecard to the
// test's log. It links the harness, fencecheck's faults and its register resources, and no backend
// it is not given: the built-in backends are in builtin, which only the CLI
// imports. docs/go-api.md walks through the whole path (a backend, the contract suite
// in harnesstest, a run, an evaluation, the evidence).
package fencecheck

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/campaign"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/nemesis/faults"
	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/judge"
	"github.com/fencecheck/fencecheck/resource/register"
	"github.com/fencecheck/fencecheck/spec"
	"github.com/fencecheck/fencecheck/trial"
)

// Registry returns a registry of fencecheck's faults and its register resources
// (fenced, unfenced, toctou) with backends added: what a run of those backends needs,
// and nothing else. An error names a descriptor that cannot be registered.
func Registry(backends ...registry.Backend) (*registry.Registry, error) {
	r := registry.New()
	if err := r.AddResource(register.Descriptors()...); err != nil {
		return nil, err
	}
	if err := r.AddFault(faults.All()...); err != nil {
		return nil, err
	}
	if err := r.AddBackend(backends...); err != nil {
		return nil, err
	}
	return r, nil
}

// Config says what to run against which backend. Zero fields take the defaults their
// comments give; Validate names the fields that are unset or do not fit together.
type Config struct {
	// Backend is the backend's descriptor: each run starts it (Backend.Start) and closes
	// it. With only a Name, it names a backend of Registry.
	//
	// With Started, Backend may be zero or give what a started value cannot tell: its
	// Token words, Meaning, DurableLeases, Options; its Name must then be Started's,
	// and it has no Start.
	Backend registry.Backend
	// Started is a backend already running, which every run uses as it is and none
	// closes (its caller does, after Run or Evaluate returns). Before the first run
	// fencecheck makes one locker of it and acquires and releases one lease, to read
	// the lease TTL and which optional interfaces its lockers and leases implement.
	Started harness.Backend
	// Registry has the faults and resources to run with (nil: Registry(), fencecheck's
	// faults and register resources). The backend is added to a copy: Registry is not
	// changed, and must not hold another backend of the same name.
	Registry *registry.Registry

	// Store is the results store (required by Run and Evaluate, not by Plan; in a
	// test, t.TempDir()): every run keeps its evidence in Store/<label>/<timestamp>/
	// (history.json, verdict.json, report pages, run.log; Result.Label);
	// Store/<label>/latest points at the newest and Store/index.html lists them. A
	// second run adds a folder; it never overwrites the first.
	Store string
	// Log, if set, also receives every run's log (each run's run.log has it anyway).
	Log io.Writer
	// CheckTimeout bounds each property's linearizability check (0: the models'
	// default).
	CheckTimeout time.Duration
	// Parallel is how many runs of an evaluation go at a time (default 1; a Started
	// backend is shared by every run, so 1 at most).
	Parallel int

	// Resource is the protected resource Run writes to (default "fenced", a register
	// that refuses a token older than the newest it accepted; "unfenced" refuses
	// nothing). Evaluate runs every fault against unfenced, fenced and the backend's
	// Native resources.
	Resource string
	// Faults: for Run, the faults of the run (default: pause, the holder stalls past its
	// TTL); for Evaluate, the rows of the scorecard (default: every fault that applies).
	Faults []string
	// Clients, TTL, Duration, Members and Keys: 0 takes the defaults (the descriptor's
	// TTL and Members; with Started, the TTL of the lease it granted).
	Clients  int
	TTL      time.Duration
	Duration time.Duration
	Members  int
	Keys     int
	// Seed of the workload (0: spec.DefaultSeed, the same for a run and an evaluation).
	Seed int64
	// Policy of the clients: "trusting" (default) or "careful"; Fence the fence rule of
	// the register: "strict" (default) or "monotonic". Run only.
	Policy string
	Fence  string
	// Options are the backend's and the resource's own options by name (see
	// registry.Option; each also reads an environment variable, Option.Env).
	Options map[string]string
}

// Validate names every field that is unset or does not fit the others, in one error
// (wrapping spec.ErrSpec); nil when the configuration can run. It starts nothing:
// the names of faults, resources and options are checked when a run resolves them.
func (c Config) Validate() error { return c.validate(true) }

// validate is Validate; without runs (a Plan), Store may be unset.
func (c Config) validate(runs bool) error {
	var bad []string
	add := func(field, format string, args ...any) {
		bad = append(bad, field+": "+fmt.Sprintf(format, args...))
	}
	switch {
	case c.Started == nil && c.Backend.Name == "":
		add("Backend", "unset: give your backend's descriptor (a registry.Backend with a Name and a Start), or a started harness.Backend as Started")
	case c.Started == nil && c.Backend.Start == nil && c.Registry == nil:
		add("Backend.Start", "unset: a descriptor needs a Start function (or name a backend of Registry, and set Registry)")
	case c.Started == nil && c.Backend.Start == nil:
		if _, ok := c.Registry.Backend(c.Backend.Name); !ok {
			add("Backend.Name", "backend %s is not in this registry; registered: %s (to run a backend of your own, give its descriptor, with a Start, as Backend)", c.Backend.Name, registeredNames(c.Registry))
		}
	case c.Started != nil && c.Backend.Start != nil:
		add("Backend.Start", "set together with Started: a started backend is not started again; give one of them")
	case c.Started != nil && c.Backend.Name != "" && c.Backend.Name != c.Started.Name():
		add("Backend.Name", "%q, but Started.Name() is %q", c.Backend.Name, c.Started.Name())
	}
	if c.Started == nil && c.Backend.Start != nil && c.Registry != nil {
		if _, ok := c.Registry.Backend(c.Backend.Name); ok {
			add("Registry", "already has a backend %q: give only Backend.Name to run that one, or a Registry without it", c.Backend.Name)
		}
	}
	if c.Started != nil && c.Started.Name() == "" {
		add("Started", "its Name() is empty; a run is labelled by it")
	}
	if c.Store == "" && runs {
		add("Store", "unset: the results store every run keeps its evidence in (in a test, t.TempDir())")
	}
	if c.Started != nil && c.Parallel > 1 {
		add("Parallel", "%d, but a Started backend is one value every run shares: at most 1", c.Parallel)
	}
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"Clients", int64(c.Clients)}, {"TTL", int64(c.TTL)}, {"Duration", int64(c.Duration)},
		{"Members", int64(c.Members)}, {"Keys", int64(c.Keys)}, {"Parallel", int64(c.Parallel)},
		{"CheckTimeout", int64(c.CheckTimeout)},
	} {
		if f.v < 0 {
			add(f.name, "negative (%d); 0 takes the default", f.v)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("%w: fencecheck.Config: %s", spec.ErrSpec, strings.Join(bad, "; "))
}

// registeredNames lists reg's backends for a message: "a, b", or "none".
func registeredNames(reg *registry.Registry) string {
	if names := registry.Names(reg.BackendNames()); names != "" {
		return names
	}
	return "none"
}

// Result is one run: where its evidence is, and what it found.
type Result struct {
	// Label is the name the run is stored under, built from its settings: the backend
	// (with its members when more than one, "-external" for servers fencecheck did not
	// start), the resource, the fence rule when Config.Fence sets one, and the faults
	// joined by "+", e.g. "tinylock-fenced-pause". The run's folder is
	// Store/<Label>/<timestamp>, and Store/<Label>/latest points at the newest run of
	// that label. It is set whenever the Result is.
	Label string
	// Dir is the run's folder in the store ("" if the run could not make one).
	Dir string
	// Outcome holds the spec as run, the history and the report (Report.Verdicts);
	// nil when the run did not get as far as a history.
	*trial.Outcome
}

// Run runs one scenario: the backend, the resource and the faults of c. The error is
// the run's (spec.ErrSpec: the configuration's; the run's folder keeps what evidence
// there is); the verdicts are in the Result. A refusal names, after its words, the
// interface or descriptor field that would lift it (registry.WithGoNames).
func Run(ctx context.Context, c Config) (*Result, error) {
	res, err := run(ctx, c)
	return res, registry.WithGoNames(err)
}

func run(ctx context.Context, c Config) (*Result, error) {
	reg, name, err := c.prepare(ctx)
	if err != nil {
		return nil, err
	}
	named := c.Faults
	if len(named) == 0 {
		named = []string{faults.Pause}
	}
	resource := c.Resource
	if resource == "" {
		resource = "fenced"
	}
	s := spec.Spec{
		Backend: name, Resource: resource, Fence: c.Fence, Faults: named,
		Clients: c.Clients, TTL: c.TTL, Duration: c.Duration, Seed: c.Seed,
		Policy: c.Policy, Members: c.Members, Options: c.Options, Keys: c.Keys,
	}
	results, interrupted := c.campaign(reg).Run(ctx, []spec.Spec{s})
	r := results[0]
	res := &Result{Label: r.Label, Dir: r.Dir, Outcome: r.Outcome}
	if r.Err == nil && interrupted {
		r.Err = ctx.Err()
	}
	return res, r.Err
}

// Evaluation is an evaluation's scorecard and where its pages are.
type Evaluation struct {
	// Scorecard: Safe, the plain-language Verdict and Conditions, and a row per fault
	// with its runs.
	*judge.Scorecard
	// Dir is the scorecard's folder in the store (scorecard.json, scorecard.html).
	Dir string
	// Interrupted: ctx ended before every run finished; the scorecard judges the runs
	// that did (and is not Complete).
	Interrupted bool
}

// Evaluate runs every fault of c (default: every one that applies to the backend)
// against an unfenced register, a fenced one and the backend's native resources, and
// judges the runs into a scorecard: may the backend be adopted, and what must the
// resource do? A refusal names the Go interface or field that would lift it, as Run's.
func Evaluate(ctx context.Context, c Config) (*Evaluation, error) {
	ev, err := evaluate(ctx, c)
	return ev, registry.WithGoNames(err)
}

func evaluate(ctx context.Context, c Config) (*Evaluation, error) {
	reg, name, err := c.prepare(ctx)
	if err != nil {
		return nil, err
	}
	sc, dir, interrupted, err := campaign.Evaluate(ctx, c.evaluateConfig(name), c.campaign(reg))
	if sc == nil {
		return nil, err
	}
	return &Evaluation{Scorecard: sc, Dir: dir, Interrupted: interrupted}, err
}

// EvaluationPlan is an evaluation before it runs, as Plan returns it (the same type
// as campaign.EvaluatePlan):
//
//   - Name is the scorecard's folder in the store, "evaluate-<backend>" (with
//     "-external" for servers fencecheck did not start);
//   - Scorecard is the scorecard's header (Backend, Token, Setup, TTLNanos, NoToken,
//     the Resources each fault runs against) and one row per fault that would run
//     (Rows[i].Fault, Rows[i].Meaning), without runs or verdicts yet: the faults that
//     apply to the backend, or Config.Faults;
//   - Jobs are the runs, one per fault and resource (Fault, Resource and the Spec it
//     would run with).
type EvaluationPlan = campaign.EvaluatePlan

// Plan lists the runs Evaluate would make, and which faults apply, without running
// them: c.Store is not needed (nothing is written). A Started backend is probed: one
// lease is acquired and released. A refusal names the Go interface or field that
// would lift it, as Run's.
func Plan(ctx context.Context, c Config) (*EvaluationPlan, error) {
	p, err := plan(ctx, c)
	return p, registry.WithGoNames(err)
}

func plan(ctx context.Context, c Config) (*EvaluationPlan, error) {
	reg, name, err := c.resolve(ctx, false)
	if err != nil {
		return nil, err
	}
	cfg, _, err := campaign.ResolveEvaluateTTL(ctx, reg, c.evaluateConfig(name))
	if err != nil {
		return nil, err
	}
	return campaign.PlanEvaluate(reg, nil, cfg)
}

func (c Config) evaluateConfig(name string) campaign.EvaluateConfig {
	return campaign.EvaluateConfig{Backend: name, Options: c.Options, Faults: c.Faults, Seed: c.Seed, TTL: c.TTL}
}

func (c Config) campaign(reg *registry.Registry) campaign.Campaign {
	return campaign.Campaign{Registry: reg, Store: c.Store, Parallel: c.Parallel, Log: c.Log, CheckTimeout: c.CheckTimeout}
}

// prepare validates c for runs and returns the registry to run in and the backend's
// name in it.
func (c Config) prepare(ctx context.Context) (*registry.Registry, string, error) {
	return c.resolve(ctx, true)
}

// resolve is prepare; without runs (a Plan), Store may be unset.
func (c Config) resolve(ctx context.Context, runs bool) (*registry.Registry, string, error) {
	if err := c.validate(runs); err != nil {
		return nil, "", err
	}
	d := c.Backend
	if c.Started != nil {
		var err error
		if d, err = c.startedDescriptor(ctx); err != nil {
			return nil, "", err
		}
	}
	if c.Registry != nil && d.Start == nil { // a backend of Registry, by name
		return c.Registry, d.Name, nil
	}
	reg, err := withBackend(c.Registry, d)
	if err != nil {
		return nil, "", fmt.Errorf("%w: fencecheck.Config.Backend: %w", spec.ErrSpec, err)
	}
	return reg, d.Name, nil
}

// withBackend returns base's resources, faults and backends (Registry() when nil) with
// b added, in a new registry.
func withBackend(base *registry.Registry, b registry.Backend) (*registry.Registry, error) {
	if base == nil {
		return Registry(b)
	}
	r := registry.New()
	if err := r.AddResource(base.Resources()...); err != nil {
		return nil, err
	}
	if err := r.AddFault(base.Faults()...); err != nil {
		return nil, err
	}
	if err := r.AddBackend(append(base.Backends(), b)...); err != nil {
		return nil, err
	}
	return r, nil
}

// startedDescriptor makes the descriptor of a Started backend: c.Backend's facts, a
// Start that hands out the started value (Shared: no run closes it), the lease TTL it
// grants, its cluster size, and a Shape of the values it gave when probed.
func (c Config) startedDescriptor(ctx context.Context) (registry.Backend, error) {
	b := c.Started
	d := c.Backend
	d.Name = b.Name()
	if d.Meaning == "" {
		d.Meaning = "a backend started by its caller (fencecheck.Config.Started)"
	}
	shape, ttl, err := probe(ctx, b)
	if err != nil {
		return d, fmt.Errorf("fencecheck.Config.Started: probing %s: %w", d.Name, err)
	}
	switch {
	case c.TTL != 0 && c.TTL != ttl:
		return d, fmt.Errorf("%w: fencecheck.Config: TTL: %v, but Started granted a lease of TTL %v (leave TTL 0 to take it)", spec.ErrSpec, c.TTL, ttl)
	case d.TTL != 0 && d.TTL != ttl:
		return d, fmt.Errorf("%w: fencecheck.Config: Backend.TTL: %v, but Started granted a lease of TTL %v", spec.ErrSpec, d.TTL, ttl)
	}
	d.TTL = ttl
	if cl, ok := registry.Service(b).(harness.Cluster); ok {
		d.Members = cl.Nodes()
		d.MultiMember = d.Members > 1
	}
	members := max(d.Members, 1)
	check := d.Check
	d.Check = func(s registry.Settings) error {
		switch {
		case s.Members != members:
			return fmt.Errorf("%s is started with %d members: Members must be %d (or 0)", d.Name, members, members)
		case s.TTL != ttl:
			return fmt.Errorf("%s grants leases of TTL %v: TTL must be %v (or 0)", d.Name, ttl, ttl)
		case check != nil:
			return check(s)
		}
		return nil
	}
	d.Shape = func(registry.Settings) registry.Shape { return shape }
	d.Start = func(context.Context, registry.Env) (harness.Backend, error) { return b, nil }
	d.Shared = true
	return d, nil
}

// probeTimeout bounds the probe of a Started backend.
const probeTimeout = time.Minute

// probe makes one locker of b and acquires and releases one lease: their values are the
// Shape's (only their types are used), the lease's TTL is the one b grants.
func probe(ctx context.Context, b harness.Backend) (registry.Shape, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	l, err := b.NewLocker(ctx, 0, b.Endpoints())
	if err != nil {
		return registry.Shape{}, 0, fmt.Errorf("its NewLocker: %w", err)
	}
	le, err := l.Acquire(ctx)
	if err != nil {
		return registry.Shape{}, 0, errors.Join(fmt.Errorf("its Acquire: %w", err), l.Close())
	}
	ttl := le.TTL()
	if err := errors.Join(le.Release(ctx), l.Close()); err != nil {
		return registry.Shape{}, 0, fmt.Errorf("its Release: %w", err)
	}
	if ttl <= 0 {
		return registry.Shape{}, 0, fmt.Errorf("its lease's TTL() is %v; a lease states the TTL it was granted", ttl)
	}
	return registry.Shape{Backend: b, Locker: l, Lease: le}, ttl, nil
}
