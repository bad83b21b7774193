package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/campaign"
	"github.com/fencecheck/fencecheck/harness/builtin"
	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/reports"
	"github.com/fencecheck/fencecheck/spec"
)

func cmdEvaluate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	reg, cat := builtin.Registry(), builtin.Catalogue()
	fs := flag.NewFlagSet("evaluate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		backend  = fs.String("backend", "", "the lock backend to evaluate (see 'fencecheck list'); required")
		faults   = fs.String("fault", "", "comma-separated faults to run (default: every fault that applies to the backend)")
		parallel = parallelFlag(fs, "runs")
		seed     = seedFlag(fs, "every run's workload")
		ttl      = fs.Duration("ttl", 0, "lease TTL of every run (default: the backend's; an existing etcd cluster: the TTL it grants)")
		out      = outFlag(fs, defaultOut, "results store: runs go to DIR/<scenario>/<timestamp>/, the scorecard to DIR/evaluate-<backend>/<timestamp>/")
		asJSON   = fs.Bool("json", false, "print the scorecard as JSON instead of a table")
		verbose  = verboseFlag(fs, "log every run's progress to stderr as well as to its run.log")
		options  = optionFlags(fs, reg)
	)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: fencecheck evaluate --backend NAME [flags]\n\nRuns every fault that applies to a lock backend against an unfenced register, a fenced one\nand the backend's own store (etcd: etcd-txn), and writes a scorecard: may we adopt this\nbackend, and what must our resource do?\nExit 0: safe with fencing under every applicable fault; 1: not safe; 2: bad input; 3: a run\nfailed or the checker timed out.\n\nflags:")
		fs.PrintDefaults()
	}
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "fencecheck evaluate: unexpected arguments %q\n", fs.Args())
		return exitUsage
	}
	opts := options()
	if *backend == "" {
		*backend = impliedBackend(reg, opts)
	}
	if *backend == "" {
		fmt.Fprintf(stderr, "fencecheck evaluate: --backend is required (one of %s)\n", strings.Join(backendList(reg), ", "))
		return exitUsage
	}
	if err := checkNames("backend", []string{*backend}, reg.BackendNames()); err != nil {
		fmt.Fprintln(stderr, "fencecheck evaluate:", err)
		return exitUsage
	}
	if !checkParallel(*parallel) {
		fmt.Fprintf(stderr, "fencecheck evaluate: --parallel must be between 1 and 8, got %d\n", *parallel)
		return exitUsage
	}
	if *ttl < 0 {
		fmt.Fprintln(stderr, "fencecheck evaluate: --ttl must not be negative")
		return exitUsage
	}
	cfg := campaign.EvaluateConfig{Backend: *backend, Options: opts, Faults: splitList(*faults), Seed: *seed, TTL: *ttl}
	// An existing etcd cluster decides the TTL it grants: settle it once, for every run.
	cfg, note, err := campaign.ResolveEvaluateTTL(ctx, reg, cfg)
	if err != nil {
		fmt.Fprintln(stderr, "fencecheck evaluate:", strings.TrimPrefix(err.Error(), spec.ErrSpec.Error()+": "))
		return exitUsage
	}
	if note != "" {
		fmt.Fprintln(stdout, note)
	}
	plan, err := campaign.PlanEvaluate(reg, cat, cfg)
	if err != nil {
		fmt.Fprintln(stderr, "fencecheck evaluate:", strings.TrimPrefix(err.Error(), spec.ErrSpec.Error()+": "))
		return exitUsage
	}
	sc := plan.Scorecard
	started := time.Now()
	dir, err := reports.NewRunDir(*out, plan.Name, started)
	if err != nil {
		fmt.Fprintln(stderr, "fencecheck evaluate:", err)
		return exitInternal
	}
	fmt.Fprintf(stdout, "evaluate %s: %d faults × %d resources = %d runs (%d at a time); results in %s\n", *backend, len(sc.Rows), len(sc.Resources), len(plan.Jobs), *parallel, *out)
	if sc.NoToken != "" {
		fmt.Fprintf(stdout, "evaluate %s: %s: %s; only the unfenced runs are made\n", *backend, spec.ErrNoToken, sc.NoToken)
	}
	var logTo io.Writer
	if *verbose {
		logTo = stderr
	}
	prog := newProgress(stderr, len(plan.Jobs))
	results, interrupted := campaign.Campaign{
		Registry: reg, Catalogue: cat, Store: *out, Parallel: *parallel, Log: logTo,
		Started: func(_ int, label string) { prog.Start(label) },
		Finished: func(i int, r campaign.RunResult) {
			if r.Err != nil || r.Outcome == nil || r.Outcome.Report == nil {
				prog.Done(r.Label, "ERROR: "+errText(r.Err))
				return
			}
			line := runResult(reports.NewScoreRun(plan.Jobs[i].Resource, r.Label, r.Outcome.Report, nil))
			if r.Outcome.CloseErr != nil {
				line += "; warning: " + r.Outcome.CloseErr.Error()
			}
			prog.Done(r.Label, line)
		},
	}.Run(ctx, plan.Specs())
	prog.Close()
	sc = plan.Judge(results, *out, started)
	if err := reports.WriteScorecard(dir, sc); err != nil {
		fmt.Fprintln(stderr, "fencecheck evaluate:", err)
		return exitInternal
	}
	if err := reports.MarkLatest(dir); err != nil {
		fmt.Fprintln(stderr, "fencecheck evaluate:", err)
		return exitInternal
	}
	if err := reports.WriteStoreIndex(*out); err != nil {
		fmt.Fprintln(stderr, "fencecheck evaluate: store index:", err)
		return exitInternal
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(sc); err != nil {
			fmt.Fprintln(stderr, "fencecheck evaluate:", err)
			return exitInternal
		}
	} else {
		reports.PrintScorecard(stdout, sc)
		fmt.Fprintf(stdout, "scorecard: %s (took %s)\n", filepath.Join(dir, reports.ScorecardPage), time.Duration(sc.Seconds*float64(time.Second)).Round(time.Second))
	}
	return evaluateExit(sc, interrupted)
}

// evaluateExit: 0 safe with fencing everywhere; 1 fencing or tokens failed somewhere; 3
// otherwise (a run failed, the checker timed out, or the evaluation was interrupted).
func evaluateExit(sc *reports.Scorecard, interrupted bool) int {
	if sc.Safe && !interrupted {
		return exitSafe
	}
	if sc.NoToken != "" {
		return exitViolated // not safe with fencing: there is nothing to fence with
	}
	for _, r := range sc.Rows {
		if r.Fenced == "VIOLATED" || r.Tokens == "WENT BACKWARDS" {
			return exitViolated
		}
	}
	return exitInternal
}

func runResult(r reports.ScoreRun) string {
	var vs []string
	for _, p := range models.Properties {
		vs = append(vs, fmt.Sprintf("%s=%s", p, r.Verdicts[p]))
	}
	return fmt.Sprintf("%s (%s), %d stale accepted, %d rejected", r.Outcome, strings.Join(vs, " "), r.StaleAccepted, r.StaleRejected)
}

// impliedBackend is the one backend that declares every given option, if any.
func impliedBackend(reg *registry.Registry, opts map[string]string) string {
	for k := range opts {
		if owners, _ := reg.OptionOwners(k); len(owners) == 1 {
			return owners[0]
		}
	}
	return ""
}

// backendList names the registry's backends.
func backendList(reg *registry.Registry) []string {
	var out []string
	for _, b := range reg.Backends() {
		out = append(out, b.Name)
	}
	return out
}

// errText is an error's message, or "no report" for a run without error or report.
func errText(err error) string {
	if err == nil {
		return "no report"
	}
	return err.Error()
}
