package campaign

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/harness/redact"
	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/judge"
	"github.com/fencecheck/fencecheck/reports"
	"github.com/fencecheck/fencecheck/spec"
)

// The evaluate plan: every fault that applies to a backend against an unfenced
// register, a fenced one and the backend's native resources, judged into a scorecard.

// EvaluateConfig says what to evaluate.
type EvaluateConfig struct {
	// Backend is the registry's name of the backend to evaluate.
	Backend string
	// Options are the backend's options (e.g. an external cluster's endpoints).
	Options map[string]string
	// Faults to run; empty: every fault that applies to the backend.
	Faults []string
	// Seed of every run's workload (0: spec.DefaultSeed, as any run).
	Seed int64
	// TTL of every run (0: the backend's default). A service that grants another TTL
	// than asked (an existing etcd cluster) is settled first: see ResolveEvaluateTTL.
	TTL time.Duration
}

// ResolveEvaluateTTL settles cfg.TTL with the service (ResolveTTL) once for every run
// of the evaluation; note says when the granted TTL replaced the default.
func ResolveEvaluateTTL(ctx context.Context, reg *registry.Registry, cfg EvaluateConfig) (EvaluateConfig, string, error) {
	// On the unfenced register: the TTL does not depend on the resource, and a backend
	// without tokens refuses the default fenced one.
	s, note, err := spec.ResolveTTL(ctx, reg, spec.Spec{Backend: cfg.Backend, Resource: unfenced, Options: cfg.Options, TTL: cfg.TTL})
	if err != nil {
		return cfg, "", err
	}
	cfg.TTL = s.TTL
	return cfg, note, nil
}

// EvaluateJob is one run of an evaluation: a fault (the scorecard's row) against one
// resource.
type EvaluateJob struct {
	Fault, Resource string
	Spec            spec.Spec
}

// EvaluatePlan is an evaluation before it runs.
type EvaluatePlan struct {
	// Name is the scorecard's folder in the results store: evaluate-<backend>, with
	// -external for servers fencecheck does not own.
	Name string
	// Scorecard has its header and one row per fault, without runs yet.
	Scorecard *judge.Scorecard
	Jobs      []EvaluateJob
}

// The registers an evaluation runs every fault against (with the backend's native
// resources): resource/register's, which every registry a plan is made in needs.
const (
	unfenced = "unfenced"
	fenced   = "fenced"
)

// PlanEvaluate checks the configuration and lists the runs, resolving names in reg;
// a run that is a scenario of cat is named after it. Errors wrap spec.ErrSpec.
func PlanEvaluate(reg *registry.Registry, cat catalogue.Catalogue, cfg EvaluateConfig) (*EvaluatePlan, error) {
	if reg == nil {
		return nil, fmt.Errorf("%w: evaluate needs a registry (registry.New, with the backend's descriptor added)", spec.ErrSpec)
	}
	be, ok := reg.Backend(cfg.Backend)
	if !ok {
		return nil, fmt.Errorf("%w: unknown backend %q (known: %s; a backend of your own is added with Registry.AddBackend)", spec.ErrSpec, cfg.Backend, registry.Names(reg.BackendNames()))
	}
	for _, r := range []string{unfenced, fenced} {
		if _, ok := reg.Resource(r); !ok {
			return nil, fmt.Errorf("%w: evaluate runs every fault against the %s and %s registers: add resource/register's descriptors to the registry", spec.ErrSpec, unfenced, fenced)
		}
	}
	for k := range cfg.Options {
		if owners, _ := reg.OptionOwners(k); len(owners) > 0 && !slices.Contains(owners, be.Name) {
			return nil, fmt.Errorf("%w: --%s is for the %s backend (got %q)", spec.ErrSpec, k, strings.Join(owners, " or "), be.Name)
		}
	}
	def := be.Defaults(registry.Settings{Options: cfg.Options})
	caps := be.PlanCaps(registry.Settings{Members: max(def.Members, 1), Options: cfg.Options})
	// The faults are tried on the resource the verdict rests on: a fenced register, or
	// the unfenced one for a backend without tokens (whose fenced runs cannot be made).
	probe := fenced
	if caps.NoToken != "" {
		probe = unfenced
	}
	applicable := ApplicableFaults(reg, be.Name, probe, cfg.Options)
	chosen := applicable
	if len(cfg.Faults) > 0 {
		chosen = slices.Clone(cfg.Faults)
		for _, f := range chosen {
			if _, ok := reg.Fault(f); !ok {
				return nil, fmt.Errorf("%w: unknown fault %q (known: %s)", spec.ErrSpec, f, registry.Names(reg.FaultNames()))
			}
			if !slices.Contains(applicable, f) {
				// The resolver's refusal says what would make it apply.
				_, err := spec.Resolve(reg, CellSpec(reg, nil, be.Name, probe, []string{f}, cfg.Options))
				why := "it is not among the faults that apply"
				if err != nil {
					why = strings.TrimPrefix(err.Error(), spec.ErrSpec.Error()+": ")
				}
				return nil, registry.CarryGoNames(fmt.Errorf("%w: fault %q does not apply to %s: %s", spec.ErrSpec, f, be.Name, why), err)
			}
		}
	}
	if len(chosen) == 0 {
		// Settings the backend refuses whatever the fault (exec without --client-cmd)
		// are the reason, not the faults.
		if _, err := spec.Resolve(reg, CellSpec(reg, nil, be.Name, probe, nil, cfg.Options)); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: no fault applies to backend %s", spec.ErrSpec, be.Name)
	}
	resources := append([]string{unfenced, fenced}, be.Native...)
	members := max(def.Members, 1)
	for _, f := range chosen {
		if reg.ActsOnService(f) && def.NodeFaultMembers > 0 {
			members = def.NodeFaultMembers
		}
	}
	sc := &judge.Scorecard{
		Backend: be.Name, Options: cloneOptions(cfg.Options), Token: be.TokenWords(), Native: slices.Clone(be.Native),
		Setup:     be.SetupOf(registry.Settings{Members: members, Options: cfg.Options}),
		Resources: resources, NoToken: caps.NoToken,
	}
	for _, n := range be.Native {
		if r, ok := reg.Resource(n); ok && r.Advice != "" {
			sc.NativeAdvice = append(sc.NativeAdvice, r.Advice)
		}
	}
	cell := func(resource string, faults []string) spec.Spec {
		s := CellSpec(reg, cat, be.Name, resource, faults, cfg.Options)
		if cfg.TTL != 0 {
			s.TTL = cfg.TTL
		}
		return s
	}
	if r, err := spec.Resolve(reg, cell(probe, chosen[:1])); err == nil {
		sc.TTLNanos = r.Spec.TTL.Nanoseconds()
	}
	p := &EvaluatePlan{Name: "evaluate-" + be.Name, Scorecard: sc}
	if be.IsExternal(registry.Settings{Options: cfg.Options}) {
		p.Name += "-external"
	}
	seed := cfg.Seed
	if seed == 0 {
		seed = spec.DefaultSeed
	}
	for _, f := range chosen {
		fault, _ := reg.Fault(f)
		sc.Rows = append(sc.Rows, judge.ScoreRow{Fault: f, Meaning: fault.Meaning()})
		for _, r := range resources {
			s := cell(r, []string{f})
			if _, err := spec.Resolve(reg, s); err != nil {
				continue // e.g. a resource that cannot take this fault, or needs a token
			}
			s.Seed = seed
			p.Jobs = append(p.Jobs, EvaluateJob{Fault: f, Resource: r, Spec: s})
		}
	}
	return p, nil
}

// learnedNoToken is why the backend's grants carry no fencing token when only its runs
// could tell (an exec client that grants with "no_token"): the reason an unfenced run's
// history records, or a fenced run's refusal.
func learnedNoToken(results []RunResult) string {
	refusal := ""
	for _, res := range results {
		if res.Outcome != nil && res.Outcome.History != nil && res.Outcome.History.Run.NoToken != "" {
			return res.Outcome.History.Run.NoToken
		}
		if refusal == "" && errors.Is(res.Err, spec.ErrNoToken) {
			refusal = res.Err.Error()
		}
	}
	return refusal
}

// Specs lists the plan's runs, for a Campaign.
func (p *EvaluatePlan) Specs() []spec.Spec {
	out := make([]spec.Spec, len(p.Jobs))
	for i, j := range p.Jobs {
		out[i] = j.Spec
	}
	return out
}

// Judge fills the scorecard from the campaign's results (one per job, in order) and
// judges it. store is the results store the runs' folders are relative to.
func (p *EvaluatePlan) Judge(results []RunResult, store string, started time.Time) *judge.Scorecard {
	sc := p.Scorecard
	sc.Started = started
	// Why there is no token, as the started backend said it (the plan had only its
	// descriptor's words), or as only its runs could tell (an exec client's no_token).
	sc.NoToken = cmp.Or(learnedNoToken(results), sc.NoToken)
	for i, j := range p.Jobs {
		res := results[i]
		if errors.Is(res.Err, ErrNotInShard) {
			continue // another shard's run
		}
		if sc.NoToken != "" && errors.Is(res.Err, spec.ErrNoToken) {
			continue // a fenced run that ended at its first grant: not a run of the fence
		}
		var run judge.ScoreRun
		if res.Err != nil || res.Outcome == nil || res.Outcome.Report == nil {
			msg := "no report"
			if res.Err != nil {
				msg = res.Err.Error()
			}
			run = judge.ScoreRun{Resource: j.Resource, Scenario: res.Label, Outcome: judge.OutcomeError, Error: msg}
		} else {
			run = judge.NewScoreRun(j.Resource, res.Label, res.Outcome.Report, reports.GapSamples(res.Outcome.History))
		}
		if res.Dir != "" {
			run.Dir = RelTo(store, res.Dir)
		}
		run.Seconds = res.Took.Seconds()
		for k := range sc.Rows {
			if sc.Rows[k].Fault == j.Fault {
				sc.Rows[k].Runs = append(sc.Rows[k].Runs, run)
			}
		}
	}
	sc.Seconds = time.Since(started).Seconds()
	sc.Judge()
	return sc
}

// Record is the plan as the results store records it (plan.json) for a campaign of
// shard; secret option values are masked in it.
func (p *EvaluatePlan) Record(reg *registry.Registry, cat catalogue.Catalogue, shard Shard, red *redact.Redactor) (*Plan, error) {
	sc := *p.Scorecard
	sc.Rows = nil
	for _, r := range p.Scorecard.Rows {
		sc.Rows = append(sc.Rows, judge.ScoreRow{Fault: r.Fault, Meaning: r.Meaning})
	}
	sc.Options = maskOptions(reg, p.Scorecard.Options)
	for k, v := range sc.Options {
		sc.Options[k] = red.String(v)
	}
	sc.Setup = red.String(sc.Setup)
	plan, err := newPlan(reg, cat, KindEvaluate, p.Name, p.Specs(), shard, struct {
		Backend string
		TTL     int64
	}{sc.Backend, sc.TTLNanos})
	if err != nil {
		return nil, err
	}
	plan.Scorecard = &sc
	for i, j := range p.Jobs {
		plan.Runs[i].Fault = j.Fault
	}
	return plan, nil
}

// Evaluate plans and runs an evaluation over c (its registry and catalogue, into its
// store), and writes the scorecard to c.Store/<plan name>/<timestamp>/ (scorecard.html,
// scorecard.json). A user's own test can call it on their backend and fail with the
// scorecard's Verdict when !Safe.
func Evaluate(ctx context.Context, cfg EvaluateConfig, c Campaign) (sc *judge.Scorecard, dir string, interrupted bool, err error) {
	switch {
	case c.Registry == nil:
		return nil, "", false, fmt.Errorf("%w: evaluate needs a registry (Campaign.Registry) that holds the backend", spec.ErrSpec)
	case c.Store == "":
		return nil, "", false, fmt.Errorf("%w: evaluate needs a results store (Campaign.Store), e.g. t.TempDir()", spec.ErrSpec)
	}
	cfg, _, err = ResolveEvaluateTTL(ctx, c.Registry, cfg)
	if err != nil {
		return nil, "", false, err
	}
	p, err := PlanEvaluate(c.Registry, c.Catalogue, cfg)
	if err != nil {
		return nil, "", false, err
	}
	record, err := p.Record(c.Registry, c.Catalogue, c.Shard, c.Redact)
	if err != nil {
		return nil, "", false, err
	}
	started := time.Now()
	dir, err = reports.NewRunDir(c.Store, p.Name, started)
	if err != nil {
		return nil, "", false, err
	}
	results, interrupted := c.Run(ctx, p.Specs())
	sc = p.Judge(results, c.Store, started)
	record.Record(results, c.Store, started, c.Redact)
	if !c.Shard.Whole() {
		sc.Sharding = &judge.Sharding{Plan: record.ID, Shard: c.Shard.String(), Of: c.Shard.N}
	}
	if err := reports.WriteScorecard(dir, sc); err != nil {
		return sc, dir, interrupted, err
	}
	if err := WritePlan(dir, record); err != nil {
		return sc, dir, interrupted, err
	}
	if err := reports.MarkLatest(dir); err != nil {
		return sc, dir, interrupted, err
	}
	return sc, dir, interrupted, reports.WriteStoreIndex(c.Store)
}
