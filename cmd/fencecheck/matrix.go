package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/campaign"
	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/harness/builtin"
	"github.com/fencecheck/fencecheck/harness/registry"
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
}

func cmdMatrix(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	reg, cat := builtin.Registry(), builtin.Catalogue()
	fs := flag.NewFlagSet("matrix", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		backends  = fs.String("backend", defaultMatrixBackends(reg), "comma-separated lock backends (rows)")
		resources = fs.String("resource", defaultMatrixResources, "comma-separated resources")
		faults    = fs.String("fault", defaultMatrixFaults, "comma-separated targeted faults, one per column; a+b runs two faults together")
		named     = fs.String("scenario", "", "comma-separated catalogue scenarios to run instead of the grid ('all' runs the whole catalogue)")
		parallel  = parallelFlag(fs, "cells run")
		seed      = seedFlag(fs, "every cell's workload")
		out       = outFlag(fs, defaultOut, "results store: cells go to DIR/<scenario>/<timestamp>/, the index page to DIR/matrix/<timestamp>/index.html")
		verbose   = verboseFlag(fs, "log every cell's progress to stderr as well as to its run.log")
		options   = optionFlags(fs, reg)
	)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: fencecheck matrix [flags]\n\nRuns backend × resource × fault cells, compares each cell's verdicts with the catalogue's\nexpectation (or, for cells not in it, the table in docs/expected-verdicts.md), and writes an index page.\nExit 0: every cell as expected; 1: some cell differs; 2: bad input; 3: a cell failed to run.\n\nflags:")
		fs.PrintDefaults()
	}
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "fencecheck matrix: unexpected arguments %q (choose cells with --backend, --resource, --fault or --scenario)\n", fs.Args())
		return exitUsage
	}
	if !checkParallel(*parallel) {
		fmt.Fprintf(stderr, "fencecheck matrix: --parallel must be between 1 and 8, got %d\n", *parallel)
		return exitUsage
	}
	m := &reports.Matrix{Parallel: *parallel}
	var plan []plannedCell
	var err error
	if *named != "" {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if set["backend"] || set["resource"] || set["fault"] {
			fmt.Fprintln(stderr, "fencecheck matrix: --scenario runs catalogue scenarios; it cannot be combined with --backend, --resource or --fault")
			return exitUsage
		}
		plan, err = planScenarios(reg, cat, m, splitList(*named))
	} else {
		plan, err = planGrid(reg, cat, m, splitList(*backends), splitList(*resources), splitList(*faults), options())
	}
	if err != nil {
		fmt.Fprintln(stderr, "fencecheck matrix:", err)
		return exitUsage
	}
	for i := range plan {
		plan[i].spec.Seed = *seed
	}

	m.Started = time.Now()
	dir, err := reports.NewRunDir(*out, "matrix", m.Started)
	if err != nil {
		fmt.Fprintln(stderr, "fencecheck matrix:", err)
		return exitInternal
	}
	torun := 0
	for _, c := range plan {
		if c.Outcome != "n/a" {
			torun++
		}
	}
	fmt.Fprintf(stdout, "matrix: %d cells to run (%d at a time), %d do not apply; results in %s\n", torun, *parallel, len(plan)-torun, *out)
	var logTo io.Writer
	if *verbose {
		logTo = stderr
	}
	interrupted := runCells(ctx, campaign.Campaign{Registry: reg, Catalogue: cat, Store: *out, Parallel: *parallel, Log: logTo}, plan, newProgress(stderr, torun))
	m.Seconds = time.Since(m.Started).Seconds()
	for _, c := range plan {
		m.Cells = append(m.Cells, c.MatrixCell)
	}
	if err := reports.WriteMatrix(dir, m); err != nil {
		fmt.Fprintln(stderr, "fencecheck matrix:", err)
		return exitInternal
	}
	if err := reports.MarkLatest(dir); err != nil {
		fmt.Fprintln(stderr, "fencecheck matrix:", err)
		return exitInternal
	}
	if err := reports.WriteStoreIndex(*out); err != nil {
		fmt.Fprintln(stderr, "fencecheck matrix: store index:", err)
		return exitInternal
	}
	m.Table(stdout)
	fmt.Fprintf(stdout, "%s\n", m.SummaryLine())
	fmt.Fprintf(stdout, "index: %s\n", filepath.Join(dir, reports.MatrixPage))
	switch {
	case interrupted:
		fmt.Fprintln(stderr, "fencecheck matrix: interrupted; the cells that ran are in the index")
		return exitInternal
	case m.Mismatches() > 0:
		fmt.Fprintln(stdout, "result: some verdicts differ from the expectation (exit 1)")
		return exitViolated
	case m.Errors() > 0:
		fmt.Fprintln(stdout, "result: some cells failed to run (exit 3)")
		return exitInternal
	}
	fmt.Fprintln(stdout, "result: every cell as expected (exit 0)")
	return exitSafe
}

// checkNames fails on a name that is not in list.
func checkNames(what string, names []string, list []registry.Named) error {
	if len(names) == 0 {
		return fmt.Errorf("no %s given", what)
	}
	for _, n := range names {
		if !slices.ContainsFunc(list, func(x registry.Named) bool { return x.Name == n }) {
			known := make([]string, len(list))
			for i, x := range list {
				known[i] = x.Name
			}
			return fmt.Errorf("unknown %s %q (known: %s)", what, n, strings.Join(known, ", "))
		}
	}
	return nil
}

func planGrid(reg *registry.Registry, cat catalogue.Catalogue, m *reports.Matrix, backends, resources, faults []string, opts map[string]string) ([]plannedCell, error) {
	if err := checkNames("backend", backends, reg.BackendNames()); err != nil {
		return nil, err
	}
	if err := checkNames("resource", resources, reg.ResourceNames()); err != nil {
		return nil, err
	}
	if len(faults) == 0 {
		return nil, errors.New("no fault given")
	}
	for _, f := range faults {
		if err := checkNames("fault", strings.Split(f, "+"), reg.FaultNames()); err != nil {
			return nil, err
		}
	}
	m.Backends, m.Resources, m.Faults = backends, resources, faults
	var plan []plannedCell
	for _, b := range backends {
		for _, r := range resources {
			for _, f := range faults {
				s := campaign.CellSpec(reg, cat, b, r, strings.Split(f, "+"), opts)
				plan = append(plan, planCell(reg, cat, b, r, f, s))
			}
		}
	}
	return plan, nil
}

func planScenarios(reg *registry.Registry, cat catalogue.Catalogue, m *reports.Matrix, names []string) ([]plannedCell, error) {
	var scs []catalogue.Scenario
	if len(names) == 1 && names[0] == "all" {
		scs = cat
	} else {
		for _, n := range names {
			sc, ok := cat.Lookup(n)
			if !ok {
				return nil, fmt.Errorf("unknown scenario %q (see 'fencecheck list')", n)
			}
			scs = append(scs, sc)
		}
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
		plan = append(plan, planCell(reg, cat, b, r, f, sc.Spec))
	}
	return plan, nil
}

func planCell(reg *registry.Registry, cat catalogue.Catalogue, b, r, f string, s spec.Spec) plannedCell {
	c := plannedCell{spec: s, MatrixCell: reports.MatrixCell{Backend: b, Resource: r, Fault: f}}
	c.Scenario = cat.Label(reg, s)
	if _, err := spec.Resolve(reg, s); err != nil {
		c.Outcome = "n/a"
		c.Error = strings.TrimPrefix(err.Error(), spec.ErrSpec.Error()+": ")
		return c
	}
	c.exp, c.Catalogue = cat.Expect(reg, s)
	c.Expected = c.exp.Verdicts
	return c
}

// runCells runs the plan's applicable cells over the campaign runner, filling in their
// results. It reports whether ctx ended before every cell ran.
func runCells(ctx context.Context, c campaign.Campaign, plan []plannedCell, prog *progress) bool {
	defer prog.Close()
	var idx []int
	var specs []spec.Spec
	for i := range plan {
		if plan[i].Outcome != "n/a" {
			idx = append(idx, i)
			specs = append(specs, plan[i].spec)
		}
	}
	c.Started = func(_ int, label string) { prog.Start(label) }
	c.Finished = func(k int, res campaign.RunResult) {
		cell := &plan[idx[k]]
		fillCell(cell, c.Store, res)
		if cell.Outcome == "error" {
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
	return interrupted
}

// fillCell records a run's result in its cell.
func fillCell(c *plannedCell, store string, res campaign.RunResult) {
	c.Seconds = res.Took.Seconds()
	if res.Dir != "" {
		c.Dir = campaign.RelTo(store, res.Dir)
	}
	if res.Err != nil || res.Outcome == nil || res.Outcome.Report == nil {
		c.Outcome, c.Error = "error", errText(res.Err)
		return
	}
	rep := res.Outcome.Report
	c.Verdicts = rep.Verdicts
	c.Outcome = reports.Outcome(rep)
	c.StaleAccepted, c.StaleRejected = rep.Evidence.StaleAccepted, rep.Evidence.StaleRejected
	c.ValidityGap = rep.Evidence.ValidityGapNanos
	c.Diffs = c.exp.Diff(rep)
	c.Match = len(c.Diffs) == 0
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
