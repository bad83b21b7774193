package campaign

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/harness/redact"
	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/judge"
	"github.com/fencecheck/fencecheck/reports"
	"github.com/fencecheck/fencecheck/spec"
)

// A campaign's plan as its folder in the results store records it (plan.json beside
// soak.json, matrix.json or scorecard.json): what every run of the whole plan is, which
// shard this store ran, and for each of its runs the folder and the measurements its
// files do not hold (workload and check time). A comparison's folder (compare.json) has
// one too. Merge reads it to tell which stores are
// shards of one plan and to recompute the campaign's page from the runs' own files.

// PlanFile is the plan record in a campaign's folder.
const PlanFile = "plan.json"

// PlanFormat names plan.json's format.
const PlanFormat = "fencecheck.plan/v1"

// Campaign kinds.
const (
	KindSoak     = "soak"
	KindMatrix   = "matrix"
	KindEvaluate = "evaluate"
	KindCompare  = "compare"
)

// Plan is plan.json.
type Plan struct {
	Format string `json:"format"`
	// Kind is soak, matrix, evaluate or compare; Name is the campaign's folder in the
	// store (soak, matrix, evaluate-<backend>, compare).
	Kind string `json:"kind"`
	Name string `json:"name"`
	// ID is the plan's identity: a SHA-256 of its kind, name and every run's settings
	// (scenario, seed, backend, resource, faults, TTL, options — a secret option's
	// value masked). Shards of one plan have the same ID.
	ID string `json:"id"`
	// Shard is the part of the plan this store ran (1/1: all of it).
	Shard   Shard     `json:"shard"`
	Started time.Time `json:"started"`
	Seconds float64   `json:"seconds"`
	// Runs are every run of the whole plan, in order; those of Shard carry their result.
	Runs []PlanRun `json:"runs"`

	// What the campaign's page is made of besides its runs:
	Soak *SoakPlan `json:"soak,omitempty"`
	// Matrix is the matrix as planned: its axes and every cell (n/a ones with why),
	// without results.
	Matrix *reports.Matrix `json:"matrix,omitempty"`
	// Scorecard is the evaluation's scorecard as planned: its header and one row per
	// fault, without runs.
	Scorecard *judge.Scorecard `json:"scorecard,omitempty"`
	// Compare is the comparison as planned: its services (facts, setup, version, the
	// faults' rows), the skipped backends, the faults, TTL and machine, without runs.
	Compare *judge.Comparison `json:"compare,omitempty"`

	// Of a merged store: the shards merged, and those missing from a partial merge.
	Merged  []MergedShard `json:"merged,omitempty"`
	Missing []int         `json:"missing_shards,omitempty"`
}

// SoakPlan is what a soak's page needs besides its runs.
type SoakPlan struct {
	Runs      int                `json:"runs"`
	Random    bool               `json:"random"`
	Scenarios []SoakPlanScenario `json:"scenarios"`
}

// SoakPlanScenario is one scenario of a soak and what the catalogue expects of it.
type SoakPlanScenario struct {
	Name   string           `json:"name"`
	Expect catalogue.Expect `json:"expect"`
}

// PlanRun is one run of a plan.
type PlanRun struct {
	Label    string   `json:"label"`
	Seed     int64    `json:"seed"`
	Backend  string   `json:"backend"`
	Resource string   `json:"resource"`
	Faults   []string `json:"faults,omitempty"`
	// Scenario is a soak run's scenario; Fault an evaluation run's row; Cell the index
	// of a matrix run's cell in Plan.Matrix.Cells; Expect a matrix cell's expectation.
	// A comparison's run has its Fault ("" for the run without a fault) and Row, the
	// index of its service in Plan.Compare.Services.
	Scenario string `json:"scenario,omitempty"`
	Fault    string `json:"fault,omitempty"`
	Cell     int    `json:"cell,omitempty"`
	Row      int    `json:"row,omitempty"`
	// Repeat is a comparison's run's place among its cell's runs (0-based).
	Repeat int               `json:"repeat,omitempty"`
	Expect *catalogue.Expect `json:"expect,omitempty"`

	// The result, for a run of the store's shard that started:
	// Dir is its folder relative to the store's root.
	Dir string `json:"dir,omitempty"`
	// Ran: the run started (false: another shard's, or interrupted before it ran).
	Ran           bool  `json:"ran,omitempty"`
	WorkloadNanos int64 `json:"workload_ns,omitempty"`
	CheckNanos    int64 `json:"check_ns,omitempty"`
	TookNanos     int64 `json:"took_ns,omitempty"`
	// Error is why the run failed (free of secrets); SpecError marks a run that could
	// not be made as asked (spec.ErrSpec), NoToken one refused for want of a token.
	Error     string `json:"error,omitempty"`
	SpecError bool   `json:"spec_error,omitempty"`
	NoToken   bool   `json:"no_token,omitempty"`
}

// MergedShard is one shard of a merged store: which store it came from.
type MergedShard struct {
	Shard Shard  `json:"shard"`
	Store string `json:"store"`
}

// newPlan lists specs as a plan's runs and computes its identity. Secret option values
// (registry.Option.Secret) and credential patterns are masked before they are hashed.
func newPlan(reg *registry.Registry, cat catalogue.Catalogue, kind, name string, specs []spec.Spec, shard Shard, extra any) (*Plan, error) {
	p := &Plan{Format: PlanFormat, Kind: kind, Name: name, Shard: shard.normal()}
	type identity struct {
		Kind, Name string
		Runs       []spec.Spec
		Extra      any
	}
	id := identity{Kind: kind, Name: name, Extra: extra}
	c := Campaign{Registry: reg, Catalogue: cat}
	for _, s := range specs {
		p.Runs = append(p.Runs, PlanRun{Label: c.label(s), Seed: s.Seed, Backend: s.Backend, Resource: s.Resource, Faults: slices.Clone(s.Faults)})
		s.Options = maskOptions(reg, s.Options)
		id.Runs = append(id.Runs, s)
	}
	b, err := json.Marshal(id)
	if err != nil {
		return nil, fmt.Errorf("plan identity: %w", err)
	}
	sum := sha256.Sum256(b)
	p.ID = hex.EncodeToString(sum[:])
	return p, nil
}

// maskOptions copies opts with every secret option's credentials masked.
func maskOptions(reg *registry.Registry, opts map[string]string) map[string]string {
	out := cloneOptions(opts)
	for k, v := range out {
		if o, ok := reg.Option(k); ok && o.Secret {
			out[k] = redact.Text(v)
		}
	}
	return out
}

// ShortID is the plan's identity as messages show it.
func (p *Plan) ShortID() string {
	if len(p.ID) > 12 {
		return p.ID[:12]
	}
	return p.ID
}

// record notes the campaign's results (one per run, in order) in the plan: the folder
// (relative to store) and measurements of every run that started.
func (p *Plan) record(results []RunResult, store string, red *redact.Redactor) {
	for i := range p.Runs {
		if i >= len(results) {
			break
		}
		res, pr := results[i], &p.Runs[i]
		if errors.Is(res.Err, ErrNotInShard) || errors.Is(res.Err, ErrInterrupted) {
			continue
		}
		pr.Ran = true
		if res.Dir != "" {
			pr.Dir = RelTo(store, res.Dir)
		}
		pr.TookNanos = res.Took.Nanoseconds()
		if res.Outcome != nil {
			pr.WorkloadNanos, pr.CheckNanos = res.Outcome.Workload.Nanoseconds(), res.Outcome.Check.Nanoseconds()
		}
		if res.Err != nil {
			pr.Error = red.String(res.Err.Error())
			pr.SpecError = errors.Is(res.Err, spec.ErrSpec)
			pr.NoToken = errors.Is(res.Err, spec.ErrNoToken)
		}
	}
}

// Record notes a campaign's results in the plan (see Plan.Runs) and how long it took.
func (p *Plan) Record(results []RunResult, store string, started time.Time, red *redact.Redactor) {
	p.record(results, store, red)
	p.Started, p.Seconds = started, time.Since(started).Seconds()
}

// WritePlan writes dir/plan.json.
func WritePlan(dir string, p *Plan) error {
	p.Format = PlanFormat
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, "."+PlanFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, PlanFile))
}

// ReadPlan reads a plan.json.
func ReadPlan(path string) (*Plan, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var p Plan
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if p.Format != PlanFormat {
		return nil, fmt.Errorf("%s: field \"format\": got %q, want %q", path, p.Format, PlanFormat)
	}
	switch {
	case p.Kind != KindSoak && p.Kind != KindMatrix && p.Kind != KindEvaluate && p.Kind != KindCompare:
		return nil, fmt.Errorf("%s: field \"kind\": %q is not soak, matrix, evaluate or compare", path, p.Kind)
	case p.ID == "":
		return nil, fmt.Errorf("%s: field \"id\" is empty", path)
	case p.Shard.N < 1 || p.Shard.I < 1 || p.Shard.I > p.Shard.N:
		return nil, fmt.Errorf("%s: field \"shard\": %d/%d is not a shard", path, p.Shard.I, p.Shard.N)
	case p.Kind == KindSoak && p.Soak == nil, p.Kind == KindMatrix && p.Matrix == nil, p.Kind == KindEvaluate && p.Scorecard == nil,
		p.Kind == KindCompare && p.Compare == nil:
		return nil, fmt.Errorf("%s: a %s plan without its %s field", path, p.Kind, p.Kind)
	}
	for i, r := range p.Runs {
		if p.Kind == KindMatrix && (r.Cell < 0 || r.Cell >= len(p.Matrix.Cells)) {
			return nil, fmt.Errorf("%s: runs[%d]: cell %d is not a cell of the matrix", path, i, r.Cell)
		}
		if p.Kind == KindCompare && (r.Row < 0 || r.Row >= len(p.Compare.Services)) {
			return nil, fmt.Errorf("%s: runs[%d]: row %d is not a service of the comparison", path, i, r.Row)
		}
		if r.Dir != "" && (filepath.IsAbs(r.Dir) || !filepath.IsLocal(filepath.FromSlash(r.Dir))) {
			return nil, fmt.Errorf("%s: runs[%d]: dir %q is not inside the store", path, i, r.Dir)
		}
	}
	return &p, nil
}
