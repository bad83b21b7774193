package campaign

import (
	"maps"
	"slices"

	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/judge"
	"github.com/fencecheck/fencecheck/reports"
	"github.com/fencecheck/fencecheck/spec"
)

// CellSpec is the spec of one matrix or evaluate cell: backend × resource × faults,
// with those of opts that the backend or the resource declares. Service faults run on
// the backend's NodeFaultMembers (etcd: 3), like the catalogue's. A cell that runs a
// catalogue scenario gets its name.
func CellSpec(reg *registry.Registry, cat catalogue.Catalogue, backend, resource string, faults []string, opts map[string]string) spec.Spec {
	s := spec.Spec{Backend: backend, Resource: resource, Faults: slices.Clone(faults)}
	be, ok := reg.Backend(backend)
	res, _ := reg.Resource(resource)
	for k, v := range opts {
		if v != "" && (registry.HasOption(be.Options, k) || registry.HasOption(res.Options, k)) {
			if s.Options == nil {
				s.Options = map[string]string{}
			}
			s.Options[k] = v
		}
	}
	if def := be.Defaults(registry.Settings{Options: s.Options}); ok && def.NodeFaultMembers > 0 && !be.IsExternal(registry.Settings{Options: s.Options}) {
		if slices.ContainsFunc(faults, reg.ActsOnService) {
			s.Members = def.NodeFaultMembers
		}
	}
	if sc, ok := cat.Match(reg, s); ok {
		s.Name = sc.Name
	}
	return s
}

// ApplicableFaults lists, in registry order, the targeted faults that can run against a
// backend (with its options, e.g. an external cluster) and resource: each is tried on a
// cell and kept when the spec resolves.
func ApplicableFaults(reg *registry.Registry, backend, resource string, opts map[string]string) []string {
	var out []string
	for _, f := range reg.Faults() {
		if _, err := spec.Resolve(reg, CellSpec(reg, nil, backend, resource, []string{f.Name()}, opts)); err == nil {
			out = append(out, f.Name())
		}
	}
	return out
}

// cloneOptions copies an options map (nil stays nil).
func cloneOptions(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	return maps.Clone(m)
}

// MatrixPlanCell is a matrix cell as planned: the cell (its axes, scenario and expected
// verdicts; an n/a one with why) and, for one that runs, its spec and expectation.
type MatrixPlanCell struct {
	Cell   reports.MatrixCell
	Runs   bool
	Spec   spec.Spec
	Expect catalogue.Expect
}

// RecordMatrix is a matrix's plan as the results store records it (plan.json): m's
// axes, every cell, and one run per cell that runs, in order (the specs a Campaign runs
// for it).
func RecordMatrix(reg *registry.Registry, cat catalogue.Catalogue, m *reports.Matrix, cells []MatrixPlanCell, shard Shard) (*Plan, error) {
	skel := &reports.Matrix{Parallel: m.Parallel, Backends: slices.Clone(m.Backends), Resources: slices.Clone(m.Resources), Faults: slices.Clone(m.Faults)}
	var specs []spec.Spec
	var idx []int
	for i, c := range cells {
		skel.Cells = append(skel.Cells, c.Cell)
		if c.Runs {
			specs = append(specs, c.Spec)
			idx = append(idx, i)
		}
	}
	p, err := newPlan(reg, cat, KindMatrix, KindMatrix, specs, shard, struct{ Backends, Resources, Faults []string }{skel.Backends, skel.Resources, skel.Faults})
	if err != nil {
		return nil, err
	}
	p.Matrix = skel
	for k, i := range idx {
		exp := cells[i].Expect
		p.Runs[k].Cell, p.Runs[k].Expect = i, &exp
	}
	return p, nil
}

// FillCell records a run's result in its matrix cell: its verdicts, outcome and
// evidence, and how they compare with exp. A run that failed is an "error" cell.
func FillCell(c *reports.MatrixCell, exp catalogue.Expect, store string, res RunResult) {
	c.Seconds = res.Took.Seconds()
	if res.Dir != "" {
		c.Dir = RelTo(store, res.Dir)
	}
	if res.Err != nil || res.Outcome == nil || res.Outcome.Report == nil {
		c.Outcome, c.Error = judge.OutcomeError, errText(res.Err)
		return
	}
	rep := res.Outcome.Report
	c.Verdicts = rep.Verdicts
	c.Outcome = reports.Outcome(rep)
	_, c.Why = judge.Why(rep)
	c.StaleAccepted, c.StaleRejected = rep.Evidence.StaleAccepted, rep.Evidence.StaleRejected
	c.ValidityGap = rep.Evidence.ValidityGapNanos
	c.Diffs = exp.Diff(rep)
	c.Match = len(c.Diffs) == 0
}
