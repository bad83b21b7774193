package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fencecheck/fencecheck/campaign"
	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/internal/term"
	"github.com/fencecheck/fencecheck/judge"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/reports"
	"github.com/fencecheck/fencecheck/spec"
)

// Defaults of `fencecheck matrix`: every backend whose descriptor asks for a default row
// (one per lock service: the naive variants differ only in their token source; name
// them with --backend to include them) × {unfenced, fenced} × {pause, delay, partition}.
const (
	defaultMatrixResources = "unfenced,fenced"
	defaultMatrixFaults    = "pause,delay,partition"
)

// defaultMatrixBackends lists the registry's default matrix rows.
func defaultMatrixBackends(reg *registry.Registry) string {
	var out []string
	for _, b := range reg.Backends() {
		if b.Matrix {
			out = append(out, b.Name)
		}
	}
	return strings.Join(out, ",")
}

// plannedCell is a matrix cell before it runs.
type plannedCell struct {
	reports.MatrixCell
	spec spec.Spec
	exp  catalogue.Expect
	// code is the cell's exit code once it ran: 0 as expected, 1 differs, 2 or 3 it
	// failed (codeOf).
	code int
}

// matrixFlags are `fencecheck matrix`'s flags.
type matrixFlags struct {
	backends, resources, faults, named []string
	parallel                           int
	seed                               int64
	out                                string
	verbose, json                      bool
	checkTimeout                       time.Duration
	shard                              campaign.Shard
	options                            func() map[string]string
}

// matrixJSON is `matrix --json`: the matrix (as matrix.json has it), its outcome and
// exit code, and its page.
type matrixJSON struct {
	// Outcome: "as-expected", "differs" (some cell differs from its expectation),
	// "incomplete" (some cell failed or did not run).
	Outcome judge.RunOutcome `json:"outcome"`
	Exit    int              `json:"exit"`
	Index   string           `json:"index"`
	*reports.Matrix
}

// matrixDoc is the --json document of a matrix whose exit code is code.
func matrixDoc(m *reports.Matrix, code int, index string, interrupted bool) matrixJSON {
	return matrixJSON{Outcome: campaignOutcome(m.Mismatches(), m.Errors(), interrupted), Exit: code, Index: index, Matrix: m}
}

// A campaign's --json outcomes (matrix, soak, merge) beside judge's.
const (
	// outcomeAsExpected: every run as its expectation says.
	outcomeAsExpected judge.RunOutcome = "as-expected"
	// outcomeDiffers: some run differs from its expectation.
	outcomeDiffers judge.RunOutcome = "differs"
)

// campaignOutcome is a matrix's or a soak's --json outcome: "differs" when some run
// differs from its expectation, else "incomplete" when one failed or the campaign was
// interrupted, else "as-expected".
func campaignOutcome(mismatches, errors int, interrupted bool) judge.RunOutcome {
	switch {
	case mismatches > 0:
		return outcomeDiffers
	case errors > 0 || interrupted:
		return judge.OutcomeIncomplete
	}
	return outcomeAsExpected
}

func (a *app) matrixCmd() *cobra.Command {
	f := &matrixFlags{}
	c := &cobra.Command{
		Use:   "matrix",
		Short: "run backend × resource × fault cells against their expected verdicts",
		Long: fmt.Sprintf(`Runs backend × resource × fault cells (or catalogue scenarios: --scenario), compares each
cell's verdicts with the catalogue's expectation (or, for cells not in it, the table in
docs/expected-verdicts.md), and writes an index page into the results store
(DIR/matrix/<timestamp>/index.html). A combination that cannot run is shown as n/a with the
reason. Without --backend, the rows are %s, which need nothing
installed (one that cannot run here all the same is left out, named on stderr); name any
other backend with --backend ('fencecheck doctor' says which can run here).`,
			strings.ReplaceAll(defaultMatrixBackends(a.reg), ",", ", ")),
		Example: `  fencecheck matrix
  fencecheck matrix --backend etcd,zookeeper --resource unfenced,fenced,etcd-txn --fault pause,partition
  fencecheck matrix --scenario all --parallel 2`,
		Args: noArgs("choose cells with --backend, --resource, --fault or --scenario"),
		RunE: func(cmd *cobra.Command, _ []string) error { return a.matrix(cmd, f) },
	}
	fs := c.Flags()
	fs.StringSliceVar(&f.backends, "backend", strings.Split(defaultMatrixBackends(a.reg), ","), "lock backends (rows), comma-separated")
	fs.StringSliceVar(&f.resources, "resource", strings.Split(defaultMatrixResources, ","), "resources, comma-separated")
	fs.StringSliceVar(&f.faults, "fault", strings.Split(defaultMatrixFaults, ","), "targeted faults, one per column, comma-separated; a+b runs two faults together")
	fs.StringSliceVar(&f.named, "scenario", nil, "catalogue scenarios to run instead of the grid, comma-separated ('all': the whole catalogue that can run here)")
	parallelFlag(fs, &f.parallel, "cells run")
	seedFlag(fs, &f.seed, "every cell's workload")
	outFlag(fs, &f.out, defaultOut, "results store: cells go to DIR/<scenario>/<timestamp>/, the index page to DIR/matrix/<timestamp>/index.html")
	checkTimeoutFlag(fs, &f.checkTimeout, false)
	jsonFlag(fs, &f.json, "the matrix")
	verboseFlag(fs, &f.verbose, "log every cell's progress to stderr as well as to its run.log")
	shardFlag(fs, &f.shard)
	f.options = a.optionFlags(fs)
	a.completeCommon(c)
	setExitCodes(c, exitCodes{
		exitSafe:     "every cell as expected",
		exitViolated: "some cell's verdicts differ from the expectation",
		exitUsage:    "bad input, a backend or resource asked for that cannot run here, or an interrupt",
		exitInternal: "a cell failed to run (fencecheck's own failure)",
	})
	return c
}

func (a *app) matrix(cmd *cobra.Command, f *matrixFlags) error {
	ctx := cmd.Context()
	fail := a.failer(f.json)
	if err := checkParallel(f.parallel); err != nil {
		return fail(err)
	}
	if err := writableDir("--out", f.out); err != nil {
		return fail(err)
	}
	m := &reports.Matrix{Parallel: f.parallel}
	var plan []plannedCell
	var err error
	set := cmd.Flags().Changed
	if set("scenario") {
		if set("backend") || set("resource") || set("fault") {
			return fail(usageError("--scenario runs catalogue scenarios; it cannot be combined with --backend, --resource or --fault"))
		}
		plan, err = a.planScenarios(m, trimList(f.named), f.options())
	} else {
		backends := trimList(f.backends)
		if !set("backend") {
			backends = a.runnableBackends(backends)
		}
		plan, err = a.planGrid(m, backends, trimList(f.resources), trimList(f.faults), f.options())
	}
	if err != nil {
		return fail(err)
	}
	for i := range plan {
		plan[i].spec.Seed = f.seed
	}
	out := a.stdout
	if f.json {
		out = a.stderr
	}
	m.Started = time.Now()
	dir, err := reports.NewRunDir(f.out, "matrix", m.Started)
	if err != nil {
		return fail(&exitError{code: exitInternal, msg: err.Error()})
	}
	torun := 0
	var planned []campaign.MatrixPlanCell
	for _, c := range plan {
		runs := c.Outcome != reports.OutcomeNA
		if runs {
			torun++
		}
		planned = append(planned, campaign.MatrixPlanCell{Cell: c.MatrixCell, Runs: runs, Spec: c.spec, Expect: c.exp})
	}
	record, err := campaign.RecordMatrix(a.reg, a.cat, m, planned, f.shard)
	if err != nil {
		return fail(&exitError{code: exitInternal, msg: err.Error()})
	}
	fmt.Fprintf(out, "matrix: %d cells to run (%d at a time), %d do not apply; results in %s\n", torun, f.parallel, len(plan)-torun, f.out)
	if !f.shard.Whole() {
		all := torun
		torun = len(f.shard.Select(all))
		fmt.Fprintf(out, "matrix: shard %s of plan %s: %d of the %d cells\n", f.shard, record.ShortID(), torun, all)
	}
	var logTo io.Writer
	if f.verbose {
		logTo = a.stderr
	}
	camp := campaign.Campaign{Registry: a.reg, Catalogue: a.cat, Store: f.out, Parallel: f.parallel, Log: logTo, CheckTimeout: f.checkTimeout, Host: a.host, Redact: a.red, Shard: f.shard}
	results, interrupted := a.runCells(ctx, camp, plan, newProgress(a.bar, a.isTerminal(), torun))
	m.Seconds = time.Since(m.Started).Seconds()
	record.Record(results, f.out, m.Started, a.red)
	m.Sharding = sharding(record)
	code := exitSafe
	for _, c := range plan {
		if c.Outcome == judge.OutcomeNone {
			continue // another shard's cell
		}
		m.Cells = append(m.Cells, c.MatrixCell)
		code = worst(code, c.code)
	}
	if interrupted {
		code = worst(code, exitUsage)
	}
	if err := reports.WriteMatrix(dir, m); err != nil {
		return fail(&exitError{code: exitInternal, msg: err.Error()})
	}
	if err := finishCampaign(f.out, dir, record); err != nil {
		return fail(&exitError{code: exitInternal, msg: err.Error()})
	}
	index := filepath.Join(dir, reports.MatrixPage)
	if f.json {
		if err := a.printJSON(matrixDoc(m, code, index, interrupted)); err != nil {
			return &exitError{code: exitInternal, msg: err.Error()}
		}
	} else {
		m.Table(out)
		fmt.Fprintf(out, "%s\n", m.SummaryLine())
		term.Fprintf(out, "index: %s\n", index)
	}
	switch {
	case interrupted:
		fmt.Fprintln(a.stderr, "fencecheck matrix: interrupted; the cells that ran are in the index")
	case m.Mismatches() > 0:
		fmt.Fprintf(out, "result: some verdicts differ from the expectation (exit %d)\n", code)
	case m.Errors() > 0:
		fmt.Fprintf(out, "result: some cells failed to run (exit %d)\n", code)
	default:
		fmt.Fprintln(out, "result: every cell as expected (exit 0)")
	}
	return withCode(code)
}

// runnableBackends leaves out of the default rows the backends that cannot run here,
// saying so on stderr.
func (a *app) runnableBackends(backends []string) []string {
	why := map[string]string{}
	for _, e := range a.available(nil) {
		if e.Kind == "backend" && !e.OK {
			why[e.Name] = e.Why
		}
	}
	var out []string
	for _, b := range backends {
		if w := why[b]; w != "" {
			fmt.Fprintf(a.stderr, "fencecheck matrix: leaving out %s: %s\n", b, w)
			continue
		}
		out = append(out, b)
	}
	return out
}

func (a *app) planGrid(m *reports.Matrix, backends, resources, faults []string, opts map[string]string) ([]plannedCell, error) {
	if err := checkNames("backend", backends, a.backendNames()); err != nil {
		return nil, err
	}
	if err := checkNames("resource", resources, a.resourceNames()); err != nil {
		return nil, err
	}
	if len(faults) == 0 {
		return nil, badInput("no fault given")
	}
	for _, f := range faults {
		if err := checkNames("fault", strings.Split(f, "+"), a.faultNames()); err != nil {
			return nil, err
		}
	}
	m.Backends, m.Resources, m.Faults = backends, resources, faults
	var plan []plannedCell
	for _, b := range backends {
		for _, r := range resources {
			for _, f := range faults {
				s := campaign.CellSpec(a.reg, a.cat, b, r, strings.Split(f, "+"), opts)
				c := a.planCell(b, r, f, s)
				if c.Outcome != reports.OutcomeNA {
					if why := spec.Unavailable(a.reg, s); why != "" {
						return nil, badInput("%s (cell %s × %s × %s)", why, b, r, f)
					}
				}
				plan = append(plan, c)
			}
		}
	}
	return plan, nil
}

func (a *app) planScenarios(m *reports.Matrix, names []string, opts map[string]string) ([]plannedCell, error) {
	reg := a.reg
	scs, err := a.selectScenarios("matrix", names, opts)
	if err != nil {
		return nil, err
	}
	var plan []plannedCell
	for _, sc := range scs {
		// A row per cluster size that differs from the backend's default (etcd-3).
		b := sc.Backend
		if desc, ok := reg.Backend(b); ok && sc.Members > 1 && sc.Members != max(desc.Members, 1) {
			b = fmt.Sprintf("%s-%d", b, sc.Members)
		}
		r, f := sc.Resource, strings.Join(sc.Faults, "+")
		if sc.Fence != "" && sc.Fence != "strict" {
			r += "-" + sc.Fence
		}
		for _, ax := range []struct {
			list *[]string
			v    string
		}{{&m.Backends, b}, {&m.Resources, r}, {&m.Faults, f}} {
			if !slices.Contains(*ax.list, ax.v) {
				*ax.list = append(*ax.list, ax.v)
			}
		}
		plan = append(plan, a.planCell(b, r, f, sc.Spec))
	}
	return plan, nil
}

func (a *app) planCell(b, r, f string, s spec.Spec) plannedCell {
	c := plannedCell{spec: s, MatrixCell: reports.MatrixCell{Backend: b, Resource: r, Fault: f}}
	c.Scenario = a.cat.Label(a.reg, s)
	if _, err := spec.Resolve(a.reg, s); err != nil {
		c.Outcome = reports.OutcomeNA
		c.Error = strings.TrimPrefix(err.Error(), spec.ErrSpec.Error()+": ")
		return c
	}
	c.exp, c.Catalogue = a.cat.Expect(a.reg, s)
	c.Expected = c.exp.Verdicts
	return c
}

// runCells runs the plan's applicable cells (those of c.Shard) over the campaign
// runner, filling in their results. It returns the runs' results and whether ctx ended
// before every cell ran.
func (a *app) runCells(ctx context.Context, c campaign.Campaign, plan []plannedCell, prog *progress) ([]campaign.RunResult, bool) {
	defer prog.Close()
	var idx []int
	var specs []spec.Spec
	for i := range plan {
		if plan[i].Outcome != reports.OutcomeNA {
			idx = append(idx, i)
			specs = append(specs, plan[i].spec)
		}
	}
	c.Started = func(_ int, label string) { prog.Start(label) }
	c.Finished = func(k int, res campaign.RunResult) {
		cell := &plan[idx[k]]
		fillCell(cell, c.Store, res)
		if cell.Outcome == reports.OutcomeError {
			prog.Done(res.Label, "ERROR: "+cell.Error)
			return
		}
		prog.Done(res.Label, cellResult(cell.MatrixCell, res.Took))
	}
	results, interrupted := c.Run(ctx, specs)
	for k, res := range results {
		if errors.Is(res.Err, campaign.ErrInterrupted) {
			fillCell(&plan[idx[k]], c.Store, res)
		}
	}
	return results, interrupted
}

// fillCell records a run's result in its cell (campaign.FillCell) and its exit code.
func fillCell(c *plannedCell, store string, res campaign.RunResult) {
	campaign.FillCell(&c.MatrixCell, c.exp, store, res)
	switch {
	case c.Outcome == reports.OutcomeError && res.Err != nil:
		c.code = codeOf(res.Err)
	case c.Outcome == reports.OutcomeError:
		c.code = exitInternal
	case !c.Match:
		c.code = exitViolated
	}
}

func cellResult(c reports.MatrixCell, took time.Duration) string {
	var vs []string
	for _, p := range models.Properties {
		vs = append(vs, fmt.Sprintf("%s=%s", p, c.Verdicts[p]))
	}
	exp := "as expected"
	if !c.Match {
		exp = "DIFFERS: " + strings.Join(c.Diffs, "; ")
	}
	return fmt.Sprintf("%s (%s), %s, %.1f s", c.Outcome, strings.Join(vs, " "), exp, took.Seconds())
}
