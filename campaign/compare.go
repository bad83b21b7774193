package campaign

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/harness/nemesis/faults"
	"github.com/fencecheck/fencecheck/harness/redact"
	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/judge"
	"github.com/fencecheck/fencecheck/reports"
	"github.com/fencecheck/fencecheck/spec"
)

// The compare plan: every service's recommended variant (or the backends asked for) on
// the same terms — one TTL, one set of client-side faults that applies to every
// service, each run against an unfenced and a fenced register, and one run without a
// fault for latency and throughput — judged into one comparison.

// DefaultCompareTTL is every compare run's lease TTL unless asked otherwise: one that
// every built-in service grants as asked (etcd and MariaDB need whole seconds; an etcd
// cluster raises a TTL below 1.5 × its election timeout).
const DefaultCompareTTL = 2 * time.Second

// CompareBaselineGrants is how many grants the run without a fault makes at least
// (spec.Spec.MinGrants), so that its latency percentiles and grants per second rest on
// grants, not on how much a loaded machine got done in its one TTL. About two seconds of
// any built-in service's workload on an idle machine.
const CompareBaselineGrants = 50

// MaxCompareRuns is the most runs per cell a comparison makes (CompareConfig.Runs): at
// 2 × 5 + 1 runs per service and run, 50 runs of a dozen services already take hours.
const MaxCompareRuns = 50

// CompareSeeds are the workload seeds of a comparison's runs per cell: the k-th run of
// every cell at seed + k, so the first is the seed itself and one seed gives one plan.
func CompareSeeds(seed int64, runs int) []int64 {
	out := make([]int64, runs)
	for k := range out {
		out[k] = seed + int64(k)
	}
	return out
}

// CompareFaults are the faults a comparison runs by default: client-side faults, which
// apply to every service, including one fencecheck does not own (an external endpoint).
// Both partitions: the loud one closes the holder's connections (a session lock is
// freed at once), the silent one leaves them open (only a session timeout frees it).
func CompareFaults() []string {
	return []string{faults.Pause, faults.Partition, faults.SilentPartition}
}

// CompareConfig says what to compare.
type CompareConfig struct {
	// Backends are the backends to compare; empty: the recommended variant of every
	// service of the registry.
	Backends []string
	// Options are the backends' options as given: an option that points a backend at
	// servers fencecheck does not own (registry.Option.External) adds a row of its own
	// for each recommended (or asked-for) backend that declares it; the others go to
	// the rows of the backends that declare them (an exec client's --client-cmd).
	Options map[string]string
	// TTL of every run (0: DefaultCompareTTL).
	TTL time.Duration
	// Faults to run (empty: CompareFaults); each must apply to every compared backend.
	Faults []string
	// Seed of every run's workload (0: spec.DefaultSeed): the first of each cell's
	// runs; the k-th runs at Seed + k (CompareSeeds).
	Seed int64
	// Runs is how many times each cell runs, 1 to MaxCompareRuns (0: 1).
	Runs int
	// Parallel is how many fault runs the campaign makes at a time, recorded in the
	// comparison (the runs without a fault run alone: CompareJob.Alone).
	Parallel int
	// Extra are rows of their own beside the compared backends: a backend with options
	// of its own, such as several lock clients of one backend (each exec client with
	// its command and its lock service).
	Extra []CompareRow
}

// CompareRow is an extra row of a comparison: a backend under a name of its own, with
// its options.
type CompareRow struct {
	Name    string
	Backend string
	Options map[string]string
}

// CompareJob is one run of a comparison.
type CompareJob struct {
	// Row is the index of the service in the comparison; Fault "" is the run without a
	// fault.
	Row      int
	Fault    string
	Resource string
	Spec     spec.Spec
	// Step is the run's place among its row's runs (the runs without a fault first).
	Step int
	// Run is the run's place among its cell's runs (0-based; its seed is Seeds[Run]).
	Run int
}

// Alone reports whether the job runs with nothing else running: a run without a fault,
// whose latency and throughput must measure the lock, not the other runs.
func (j CompareJob) Alone() bool { return j.Fault == "" }

// ComparePlan is a comparison before it runs.
type ComparePlan struct {
	// Name is the comparison's folder in the results store.
	Name       string
	Comparison *judge.Comparison
	Jobs       []CompareJob
}

// compareRow is a backend with the options of its row.
type compareRow struct {
	name    string
	backend registry.Backend
	options map[string]string
	// asked: named by --backend, an extra row or an external option, so a comparison
	// without it is incomplete (a recommended variant that cannot run here is only
	// left out).
	asked bool
}

// CompareName is the comparison's folder in the results store.
const CompareName = "compare"

// PlanCompare checks the configuration, settles which backends can run here at the
// common TTL (the others are listed as skipped, each with its one-line reason) and
// lists the runs. Errors wrap spec.ErrSpec: an unknown backend or fault, an option no
// compared backend declares, a fault that does not apply to every row, nothing left to
// compare.
func PlanCompare(ctx context.Context, reg *registry.Registry, cat catalogue.Catalogue, cfg CompareConfig) (*ComparePlan, error) {
	if reg == nil {
		return nil, fmt.Errorf("%w: compare needs a registry", spec.ErrSpec)
	}
	for _, r := range []string{unfenced, fenced} {
		if _, ok := reg.Resource(r); !ok {
			return nil, fmt.Errorf("%w: compare runs every fault against the %s and %s registers: add resource/register's descriptors to the registry", spec.ErrSpec, unfenced, fenced)
		}
	}
	ttl := cfg.TTL
	if ttl == 0 {
		ttl = DefaultCompareTTL
	}
	if ttl < 0 {
		return nil, fmt.Errorf("%w: --ttl must be positive, got %v", spec.ErrSpec, ttl)
	}
	faults := cfg.Faults
	if len(faults) == 0 {
		faults = CompareFaults()
	}
	for _, f := range faults {
		if _, ok := reg.Fault(f); !ok {
			return nil, fmt.Errorf("%w: unknown fault %q (known: %s)", spec.ErrSpec, f, registry.Names(reg.FaultNames()))
		}
	}
	runs := cfg.Runs
	if runs == 0 {
		runs = 1
	}
	if runs < 0 || runs > MaxCompareRuns {
		return nil, fmt.Errorf("%w: --runs must be 1 to %d, got %d", spec.ErrSpec, MaxCompareRuns, cfg.Runs)
	}
	rows, err := compareRows(reg, cfg)
	if err != nil {
		return nil, err
	}
	seed := cfg.Seed
	if seed == 0 {
		seed = spec.DefaultSeed
	}
	seeds := CompareSeeds(seed, runs)
	cmp := &judge.Comparison{TTLNanos: ttl.Nanoseconds(), Faults: slices.Clone(faults), Runs: runs, Seeds: seeds, Parallel: max(cfg.Parallel, 1), BaselineAlone: true, Machine: ThisMachine()}
	p := &ComparePlan{Name: CompareName, Comparison: cmp}
	cell := func(r compareRow, resource string, fs []string) spec.Spec {
		s := CellSpec(reg, cat, r.backend.Name, resource, fs, r.options)
		s.TTL, s.Seed = ttl, seed
		label := "none"
		if len(fs) > 0 {
			label = strings.Join(fs, "+")
		}
		s.Name = fmt.Sprintf("compare-%s-%s-%s", r.name, resource, label)
		return s
	}
	// The k-th run of a cell: its seed, and a name of its own beyond the first.
	nth := func(s spec.Spec, k int) spec.Spec {
		s.Seed = seeds[k]
		if k > 0 {
			s.Name += fmt.Sprintf("-run%d", k+1)
		}
		return s
	}
	notRun := func(resource string) []judge.CompareRun {
		out := make([]judge.CompareRun, runs)
		for k := range out {
			out[k] = judge.CompareRun{Resource: resource, Outcome: judge.OutcomeNotRun, Run: k, Seed: seeds[k]}
		}
		return out
	}
	for _, r := range rows {
		set := registry.Settings{TTL: ttl, Members: max(r.backend.Defaults(registry.Settings{Options: r.options}).Members, 1), Options: r.options}
		caps := r.backend.PlanCaps(set)
		// The run without a fault (and the check that each fault applies) is against the
		// unfenced register: it measures the lock, and it runs for a client that learns
		// only as it runs that it has no token (an exec client), where a fenced run
		// would be refused.
		probe := unfenced
		base := cell(r, probe, nil)
		if why := spec.Unavailable(reg, base); why != "" {
			cmp.Skipped = append(cmp.Skipped, judge.SkippedEntry{Backend: r.name, Reason: why, Asked: r.asked})
			continue
		}
		// The TTL must be the one the service grants: a run at another would not be on
		// the same terms.
		if _, _, err := spec.ResolveTTL(ctx, reg, base); err != nil {
			cmp.Skipped = append(cmp.Skipped, judge.SkippedEntry{Backend: r.name, Reason: strings.TrimPrefix(err.Error(), spec.ErrSpec.Error()+": "), Asked: r.asked})
			continue
		}
		for _, f := range faults {
			if _, err := spec.Resolve(reg, cell(r, probe, []string{f})); err != nil {
				return nil, registry.CarryGoNames(fmt.Errorf("%w: fault %q does not apply to %s, and a comparison runs every fault on every service: %s", spec.ErrSpec, f, r.name, strings.TrimPrefix(err.Error(), spec.ErrSpec.Error()+": ")), err)
			}
		}
		def := r.backend.Defaults(registry.Settings{Options: r.options})
		row := judge.ServiceRow{
			Name: r.name, Service: r.backend.ServiceName(), Backend: r.backend.Name, Recommended: reg.IsRecommended(r.backend.Name),
			Options: cloneOptions(r.options), Setup: r.backend.SetupOf(set), Version: r.backend.VersionOf(ctx, set),
			Facts: judge.Facts{
				Token: r.backend.TokenWords(), NoToken: caps.NoToken,
				TokensResetOnCrash: r.backend.TokensResetOnCrash, TokenFromClock: r.backend.TokenFromClock,
				Pool: r.backend.Pool, ClientClockExpiry: r.backend.ClientClockExpiry,
				DurableLeases: def.DurableLeases, ClientExpiry: caps.ClientExpiry, External: caps.External,
				Configuration: r.backend.Configuration,
			},
			Baseline: notRun(probe),
		}
		for _, f := range faults {
			fault, _ := reg.Fault(f)
			row.Faults = append(row.Faults, judge.CompareFault{
				Fault: f, Meaning: fault.Meaning(), Unfenced: notRun(unfenced), Fenced: notRun(fenced),
			})
		}
		i := len(cmp.Services)
		cmp.Services = append(cmp.Services, row)
		// Enough grants for the latency and throughput figures: one TTL, and at least
		// CompareBaselineGrants however slow the machine. These runs go alone, so each
		// second of them is a second of the whole comparison.
		base.Duration, base.MinGrants = ttl, CompareBaselineGrants
		var jobs []CompareJob
		for k := range runs {
			jobs = append(jobs, CompareJob{Row: i, Resource: probe, Spec: nth(base, k), Run: k})
		}
		for k := range runs {
			for _, f := range faults {
				jobs = append(jobs, CompareJob{Row: i, Fault: f, Resource: unfenced, Spec: nth(cell(r, unfenced, []string{f}), k), Run: k})
				if caps.NoToken == "" {
					jobs = append(jobs, CompareJob{Row: i, Fault: f, Resource: fenced, Spec: nth(cell(r, fenced, []string{f}), k), Run: k})
				}
			}
		}
		for k := range jobs {
			jobs[k].Step = k
		}
		p.Jobs = append(p.Jobs, jobs...)
	}
	if len(cmp.Services) == 0 {
		var why []string
		for _, s := range cmp.Skipped {
			why = append(why, s.Backend+": "+s.Reason)
		}
		return nil, fmt.Errorf("%w: no backend to compare can run here (%s)", spec.ErrSpec, strings.Join(why, "; "))
	}
	// Interleave the services: the runs at a time are of different services, so one
	// slow service start does not hold the others up.
	slices.SortStableFunc(p.Jobs, func(a, b CompareJob) int { return a.Step - b.Step })
	return p, nil
}

// compareRows lists the rows: the asked-for backends or every recommended variant, on
// servers fencecheck starts, then one row per backend an external option points at.
func compareRows(reg *registry.Registry, cfg CompareConfig) ([]compareRow, error) {
	var bases []registry.Backend
	if len(cfg.Backends) > 0 {
		for _, name := range cfg.Backends {
			be, ok := reg.Backend(name)
			if !ok {
				return nil, fmt.Errorf("%w: unknown backend %q (known: %s)", spec.ErrSpec, name, registry.Names(reg.BackendNames()))
			}
			if !slices.ContainsFunc(bases, func(b registry.Backend) bool { return b.Name == name }) {
				bases = append(bases, be)
			}
		}
	} else {
		bases = reg.Recommended()
	}
	own := func(be registry.Backend, external bool) map[string]string {
		var out map[string]string
		for k, v := range cfg.Options {
			o, ok := reg.Option(k)
			if v == "" || !ok || !registry.HasOption(be.Options, k) || (o.External && !external) {
				continue
			}
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
		return out
	}
	var rows []compareRow
	for _, be := range bases {
		rows = append(rows, compareRow{name: be.Name, backend: be, options: own(be, false), asked: len(cfg.Backends) > 0})
	}
	for _, x := range cfg.Extra {
		be, ok := reg.Backend(x.Backend)
		if !ok {
			return nil, fmt.Errorf("%w: row %s: unknown backend %q (known: %s)", spec.ErrSpec, x.Name, x.Backend, registry.Names(reg.BackendNames()))
		}
		if x.Name == "" || slices.ContainsFunc(rows, func(r compareRow) bool { return r.name == x.Name }) {
			return nil, fmt.Errorf("%w: an extra row needs a name of its own, not %q", spec.ErrSpec, x.Name)
		}
		opts := own(be, false)
		for k, v := range x.Options {
			if !registry.HasOption(be.Options, k) {
				return nil, fmt.Errorf("%w: row %s: backend %s has no option --%s", spec.ErrSpec, x.Name, be.Name, k)
			}
			if opts == nil {
				opts = map[string]string{}
			}
			opts[k] = v
		}
		rows = append(rows, compareRow{name: x.Name, backend: be, options: opts, asked: true})
	}
	keys := slices.Sorted(maps.Keys(cfg.Options))
	for _, k := range keys {
		if cfg.Options[k] == "" {
			continue
		}
		o, ok := reg.Option(k)
		if !ok {
			return nil, fmt.Errorf("%w: unknown option --%s", spec.ErrSpec, k)
		}
		owners, resources := reg.OptionOwners(k)
		var mine []string
		for _, name := range owners {
			if slices.ContainsFunc(bases, func(b registry.Backend) bool { return b.Name == name }) {
				mine = append(mine, name)
			}
		}
		if len(mine) == 0 && len(resources) == 0 {
			return nil, fmt.Errorf("%w: --%s is for the %s backend, which is not compared (add it to --backend)", spec.ErrSpec, k, strings.Join(owners, " or "))
		}
		if !o.External {
			continue
		}
		for _, name := range mine {
			if slices.ContainsFunc(rows, func(r compareRow) bool { return r.name == name+"-external" }) {
				continue
			}
			be, _ := reg.Backend(name)
			rows = append(rows, compareRow{name: name + "-external", backend: be, options: own(be, true), asked: true})
		}
	}
	return rows, nil
}

// ThisMachine describes the machine a comparison runs on.
func ThisMachine() judge.Machine {
	m := judge.Machine{CPUs: runtime.NumCPU(), OS: runtime.GOOS, Arch: runtime.GOARCH, GoVersion: runtime.Version()}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/etc/os-release"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
				m.OS += " (" + strings.Trim(v, `"`) + ")"
			}
		}
	}
	return m
}

// Alone reports whether the plan's i-th run goes with nothing else running (Campaign.Alone).
func (p *ComparePlan) Alone(i int) bool { return i >= 0 && i < len(p.Jobs) && p.Jobs[i].Alone() }

// Specs lists the plan's runs, for a Campaign.
func (p *ComparePlan) Specs() []spec.Spec {
	out := make([]spec.Spec, len(p.Jobs))
	for i, j := range p.Jobs {
		out[i] = j.Spec
	}
	return out
}

// Judge fills the comparison from the campaign's results (one per job, in order) and
// judges it. store is the results store the runs' folders are relative to.
func (p *ComparePlan) Judge(results []RunResult, store string, started time.Time) *judge.Comparison {
	cmp := p.Comparison
	cmp.Started = started
	for i, j := range p.Jobs {
		res := results[i]
		if errors.Is(res.Err, ErrNotInShard) {
			continue // another shard's run: it stays "not run"
		}
		row := &cmp.Services[j.Row]
		if j.Run < 0 || j.Run >= len(row.Baseline) {
			continue // not a run of this comparison's plan
		}
		var run judge.CompareRun
		switch {
		case res.Err != nil && errors.Is(res.Err, spec.ErrNoToken):
			// A backend that learns only as it runs that it has no token (an exec client).
			row.Facts.NoToken = judge.Scrub(strings.TrimPrefix(res.Err.Error(), spec.ErrSpec.Error()+": "))
			run = judge.CompareRun{Resource: j.Resource, Scenario: res.Label, Outcome: judge.OutcomeNotRun}
		case res.Err != nil || res.Outcome == nil || res.Outcome.Report == nil:
			run = judge.ErrorRun(j.Resource, res.Label, judge.Scrub(errText(res.Err)))
		default:
			run = judge.NewCompareRun(j.Resource, res.Label, res.Outcome.Spec.TTL, res.Outcome.Report)
			if h := res.Outcome.History; h != nil {
				if h.Run.NoToken != "" {
					row.Facts.NoToken = judge.Scrub(h.Run.NoToken)
				}
				run.FaultNanos = longestFault(h.Faults)
				noteServerFacts(row, h.Run)
			}
		}
		run.Run = j.Run
		if j.Run < len(cmp.Seeds) {
			run.Seed = cmp.Seeds[j.Run]
		}
		if res.Dir != "" {
			run.Dir = RelTo(store, res.Dir)
		}
		run.Seconds = res.Took.Seconds()
		if j.Fault == "" {
			row.Baseline[j.Run] = run
			continue
		}
		for k := range row.Faults {
			f := &row.Faults[k]
			switch {
			case f.Fault != j.Fault || j.Run >= len(f.Unfenced) || j.Run >= len(f.Fenced):
			case j.Resource == unfenced:
				f.Unfenced[j.Run] = run
			default:
				f.Fenced[j.Run] = run
			}
		}
	}
	cmp.Seconds = time.Since(started).Seconds()
	cmp.Judge()
	return cmp
}

// noteServerFacts adds what a run's history says of the service to its row: the
// server's and the client library's versions (the first run's that says), the longest
// granted TTL, and the session timeouts.
func noteServerFacts(row *judge.ServiceRow, run history.Run) {
	if row.ServerVersion == "" {
		row.ServerVersion = run.ServerVersion
	}
	if row.ClientLibrary == "" {
		row.ClientLibrary = run.ClientLibrary
	}
	row.GrantedTTLNanos = max(row.GrantedTTLNanos, run.GrantedTTLms*int64(time.Millisecond))
	if len(row.SessionTimeouts) == 0 && len(run.SessionTimeouts) > 0 {
		row.SessionTimeouts = maps.Clone(run.SessionTimeouts)
	}
}

// longestFault is the longest fault's length in a history (start to heal; a fault that
// never healed does not count).
func longestFault(faults []history.Fault) int64 {
	var out int64
	for _, f := range faults {
		if f.End != nil {
			out = max(out, *f.End-f.Start)
		}
	}
	return out
}

// Record is the plan as the results store records it (plan.json) for a comparison of
// shard: its runs, and the comparison as planned (a copy, without results), its secrets
// masked.
func (p *ComparePlan) Record(reg *registry.Registry, cat catalogue.Catalogue, shard Shard, red *redact.Redactor) (*Plan, error) {
	c := planned(p.Comparison)
	for i := range c.Services {
		c.Services[i].Options = maskOptions(reg, c.Services[i].Options)
	}
	RedactComparison(red, c)
	type service struct{ Name, Backend string }
	var services []service
	for _, s := range c.Services {
		services = append(services, service{s.Name, s.Backend})
	}
	plan, err := newPlan(reg, cat, KindCompare, p.Name, p.Specs(), shard, struct {
		TTL      int64
		Faults   []string
		Services []service
		Runs     int
		Seeds    []int64
	}{c.TTLNanos, c.Faults, services, c.Runs, c.Seeds})
	if err != nil {
		return nil, err
	}
	plan.Compare = c
	for i, j := range p.Jobs {
		plan.Runs[i].Fault, plan.Runs[i].Row, plan.Runs[i].Repeat = j.Fault, j.Row, j.Run
	}
	return plan, nil
}

// planned copies a comparison as planned: its header and services with every run not
// run yet, so that judging the copy leaves the original as it was.
func planned(c *judge.Comparison) *judge.Comparison {
	out := *c
	out.Faults = slices.Clone(c.Faults)
	out.Seeds = slices.Clone(c.Seeds)
	out.Skipped = slices.Clone(c.Skipped)
	out.Services = slices.Clone(c.Services)
	out.Sharding = nil
	for i := range out.Services {
		s := &out.Services[i]
		s.Options = cloneOptions(s.Options)
		s.Baseline = notRunYet(s.Baseline)
		s.Faults = slices.Clone(s.Faults)
		for k := range s.Faults {
			f := &s.Faults[k]
			f.Unfenced, f.Fenced = notRunYet(f.Unfenced), notRunYet(f.Fenced)
			f.UnfencedWord, f.FencedWord, f.Figures = "", "", judge.Figures{}
		}
		s.Verdict, s.Safe, s.Paragraph, s.Inconclusive = judge.VerdictNone, false, "", ""
		s.ValidityGap, s.Overshoot, s.NoticeDelay, s.Takeover = judge.Worst{}, judge.Worst{}, judge.Worst{}, judge.Worst{}
		s.NeverNoticed, s.NeverFaults, s.Latency = 0, nil, judge.Latency{}
	}
	return &out
}

// notRunYet copies a cell's runs as not run yet: their resource, place and seed.
func notRunYet(runs []judge.CompareRun) []judge.CompareRun {
	out := make([]judge.CompareRun, len(runs))
	for k, r := range runs {
		out[k] = judge.CompareRun{Resource: r.Resource, Outcome: judge.OutcomeNotRun, Run: r.Run, Seed: r.Seed}
	}
	return out
}

// RedactComparison masks the secrets a comparison may hold (an existing service's DSN in
// its options, setup, version or a skipped backend's reason; credential patterns with a
// nil r): it keeps the backends' options, never the credentials in them.
func RedactComparison(r *redact.Redactor, c *judge.Comparison) {
	for i := range c.Services {
		s := &c.Services[i]
		for k, v := range s.Options {
			s.Options[k] = r.String(v)
		}
		s.Setup, s.Version = r.String(s.Setup), r.String(s.Version)
		s.ServerVersion, s.ClientLibrary = r.String(s.ServerVersion), r.String(s.ClientLibrary)
		for k, v := range s.SessionTimeouts {
			s.SessionTimeouts[k] = r.String(v)
		}
		s.Facts.NoToken = judge.Scrub(r.String(s.Facts.NoToken))
		s.Paragraph = judge.Scrub(r.String(s.Paragraph))
		for _, run := range allRuns(s) {
			run.Error = judge.Scrub(r.String(run.Error))
		}
	}
	for i := range c.Skipped {
		c.Skipped[i].Reason = r.String(c.Skipped[i].Reason)
	}
}

// allRuns lists every run of a service, the runs without a fault first.
func allRuns(s *judge.ServiceRow) []*judge.CompareRun {
	var out []*judge.CompareRun
	for k := range s.Baseline {
		out = append(out, &s.Baseline[k])
	}
	for k := range s.Faults {
		f := &s.Faults[k]
		for i := range f.Unfenced {
			out = append(out, &f.Unfenced[i])
		}
		for i := range f.Fenced {
			out = append(out, &f.Fenced[i])
		}
	}
	return out
}

// Compare plans and runs a comparison over c (its registry and catalogue, into its
// store; with c.Shard only that shard's runs) and writes it to c.Store/compare/<timestamp>/
// (compare.html, compare.json, plan.json).
func Compare(ctx context.Context, cfg CompareConfig, c Campaign) (cmp *judge.Comparison, dir string, interrupted bool, err error) {
	switch {
	case c.Registry == nil:
		return nil, "", false, fmt.Errorf("%w: compare needs a registry (Campaign.Registry)", spec.ErrSpec)
	case c.Store == "":
		return nil, "", false, fmt.Errorf("%w: compare needs a results store (Campaign.Store)", spec.ErrSpec)
	}
	p, err := PlanCompare(ctx, c.Registry, c.Catalogue, cfg)
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
	if c.Alone == nil {
		c.Alone = p.Alone
	}
	p.Comparison.Parallel = max(c.Parallel, 1)
	results, interrupted := c.Run(ctx, p.Specs())
	cmp = p.Judge(results, c.Store, started)
	RedactComparison(c.Redact, cmp)
	record.Record(results, c.Store, started, c.Redact)
	if !c.Shard.Whole() {
		cmp.Sharding = &judge.Sharding{Plan: record.ID, Shard: c.Shard.String(), Of: c.Shard.N}
	}
	if err := reports.WriteComparison(dir, cmp); err != nil {
		return cmp, dir, interrupted, err
	}
	if err := WritePlan(dir, record); err != nil {
		return cmp, dir, interrupted, err
	}
	if err := reports.MarkLatest(dir); err != nil {
		return cmp, dir, interrupted, err
	}
	return cmp, dir, interrupted, reports.WriteStoreIndex(c.Store)
}
