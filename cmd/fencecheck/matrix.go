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
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/reports"
	"github.com/fencecheck/fencecheck/scenarios"
)

// Defaults of `fencecheck matrix`: every lock service × {unfenced, fenced} × {pause,
// delay, partition}. The naive variants (naive-persisted, ...) differ only in their
// token source; name them with --backend to include them.
const (
	defaultMatrixBackends  = "naive,etcd,raft"
	defaultMatrixResources = "unfenced,fenced"
	defaultMatrixFaults    = "pause,delay,partition"
)

// plannedCell is a matrix cell before it runs.
type plannedCell struct {
	reports.MatrixCell
	spec scenarios.Spec
	exp  scenarios.Expect
}

func cmdMatrix(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("matrix", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		backends  = fs.String("backend", defaultMatrixBackends, "comma-separated lock backends (rows)")
		resources = fs.String("resource", defaultMatrixResources, "comma-separated resources")
		faults    = fs.String("fault", defaultMatrixFaults, "comma-separated targeted faults, one per column; a+b runs two faults together")
		named     = fs.String("scenario", "", "comma-separated catalogue scenarios to run instead of the grid ('all' runs the whole catalogue)")
		parallel  = fs.Int("parallel", 1, "cells run at a time (timing-sensitive faults are most faithful at 1)")
		seed      = fs.Int64("seed", 1, "seed of every cell's workload")
		out       = fs.String("out", defaultOut, "results store: cells go to DIR/<scenario>/<timestamp>/, the index page to DIR/matrix/<timestamp>/index.html")
		verbose   = fs.Bool("v", false, "log every cell's progress to stderr as well as to its run.log")
	)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: fencecheck matrix [flags]\n\nRuns backend × resource × fault cells, compares each cell's verdicts with the catalogue's\nexpectation (or, for cells not in it, the design brief's table), and writes an index page.\nExit 0: every cell as expected; 1: some cell differs; 2: bad input; 3: a cell failed to run.\n\nflags:")
		fs.PrintDefaults()
	}
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "fencecheck matrix: unexpected arguments %q (choose cells with --backend, --resource, --fault or --scenario)\n", fs.Args())
		return exitUsage
	}
	if *parallel < 1 || *parallel > 8 {
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
		plan, err = planScenarios(m, splitList(*named))
	} else {
		plan, err = planGrid(m, splitList(*backends), splitList(*resources), splitList(*faults))
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
	interrupted := runCells(ctx, plan, *parallel, *out, logTo, newProgress(stderr, torun))
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
func checkNames(what string, names []string, list []scenarios.Named) error {
	if len(names) == 0 {
		return fmt.Errorf("no %s given", what)
	}
	for _, n := range names {
		if !slices.ContainsFunc(list, func(x scenarios.Named) bool { return x.Name == n }) {
			known := make([]string, len(list))
			for i, x := range list {
				known[i] = x.Name
			}
			return fmt.Errorf("unknown %s %q (known: %s)", what, n, strings.Join(known, ", "))
		}
	}
	return nil
}

func planGrid(m *reports.Matrix, backends, resources, faults []string) ([]plannedCell, error) {
	if err := checkNames("backend", backends, scenarios.BackendNames()); err != nil {
		return nil, err
	}
	if err := checkNames("resource", resources, scenarios.ResourceNames()); err != nil {
		return nil, err
	}
	if len(faults) == 0 {
		return nil, errors.New("no fault given")
	}
	for _, f := range faults {
		if err := checkNames("fault", strings.Split(f, "+"), scenarios.FaultNames()); err != nil {
			return nil, err
		}
	}
	m.Backends, m.Resources, m.Faults = backends, resources, faults
	var plan []plannedCell
	for _, b := range backends {
		for _, r := range resources {
			for _, f := range faults {
				spec := scenarios.CellSpec(b, r, strings.Split(f, "+"), nil)
				plan = append(plan, planCell(b, r, f, spec))
			}
		}
	}
	return plan, nil
}

func planScenarios(m *reports.Matrix, names []string) ([]plannedCell, error) {
	var scs []scenarios.Scenario
	if len(names) == 1 && names[0] == "all" {
		scs = scenarios.Catalogue()
	} else {
		for _, n := range names {
			sc, ok := scenarios.Lookup(n)
			if !ok {
				return nil, fmt.Errorf("unknown scenario %q (see 'fencecheck list')", n)
			}
			scs = append(scs, sc)
		}
	}
	var plan []plannedCell
	for _, sc := range scs {
		b := sc.Backend
		if b == "etcd" && sc.Members > 1 {
			b = fmt.Sprintf("etcd-%d", sc.Members)
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
		plan = append(plan, planCell(b, r, f, sc.Spec))
	}
	return plan, nil
}

func planCell(b, r, f string, spec scenarios.Spec) plannedCell {
	c := plannedCell{spec: spec, MatrixCell: reports.MatrixCell{Backend: b, Resource: r, Fault: f}}
	c.Scenario = scenarios.Label(spec)
	if _, err := scenarios.Normalize(spec); err != nil {
		c.Outcome = "n/a"
		c.Error = strings.TrimPrefix(err.Error(), scenarios.ErrSpec.Error()+": ")
		return c
	}
	c.exp, c.Catalogue = scenarios.ExpectFor(spec)
	c.Expected = c.exp.Verdicts
	return c
}

// runCells runs the plan's applicable cells, n at a time, filling in their results. It
// reports whether ctx ended before every cell ran.
func runCells(ctx context.Context, plan []plannedCell, n int, out string, logTo io.Writer, prog *progress) bool {
	defer prog.Close()
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for i := range jobs {
				c := &plan[i]
				prog.Start(c.Scenario)
				res := execute(ctx, c.spec, out, logTo)
				c.Seconds = res.Took.Seconds()
				if res.Dir != "" {
					c.Dir = relTo(out, res.Dir)
				}
				if res.Err != nil || res.Outcome == nil || res.Outcome.Report == nil {
					c.Outcome = "error"
					if res.Err != nil {
						c.Error = res.Err.Error()
					} else {
						c.Error = "no report"
					}
					prog.Done(c.Scenario, "ERROR: "+c.Error)
					continue
				}
				rep := res.Outcome.Report
				c.Verdicts = rep.Verdicts
				c.Outcome = reports.Outcome(rep)
				c.StaleAccepted, c.StaleRejected = rep.Evidence.StaleAccepted, rep.Evidence.StaleRejected
				c.ValidityGap = rep.Evidence.ValidityGapNanos
				c.Diffs = c.exp.Diff(rep)
				c.Match = len(c.Diffs) == 0
				prog.Done(c.Scenario, cellResult(c.MatrixCell, res.Took))
			}
		})
	}
	interrupted := false
	for i := range plan {
		if plan[i].Outcome == "n/a" {
			continue
		}
		if ctx.Err() != nil {
			interrupted = true
			plan[i].Outcome, plan[i].Error = "error", "interrupted before it ran"
			continue
		}
		select {
		case jobs <- i:
		case <-ctx.Done():
			interrupted = true
			plan[i].Outcome, plan[i].Error = "error", "interrupted before it ran"
		}
	}
	close(jobs)
	wg.Wait()
	return interrupted
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
