package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/fencecheck/fencecheck/campaign"
	"github.com/fencecheck/fencecheck/harness/builtin"
	"github.com/fencecheck/fencecheck/reports"
	"github.com/fencecheck/fencecheck/spec"
)

func cmdSoak(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		named    = fs.String("scenarios", "all", "comma-separated catalogue scenarios, or 'all'")
		runs     = fs.Int("runs", 20, "runs per scenario, with seeds 1..N")
		random   = fs.Bool("random", false, "replace each scenario's targeted faults with a random schedule of the same kinds drawn from the seed (verdicts reported, not compared)")
		asJSON   = fs.Bool("json", false, "print the result as one JSON document instead of a table")
		out      = outFlag(fs, defaultOut, "results store: every run goes to DIR/<scenario>/<timestamp>/, the soak's page to DIR/soak/<timestamp>/index.html (empty: a temporary folder keeps only the runs that differ)")
		timeout  = fs.Duration("check-timeout", 0, "per-property checker timeout (0: the default)")
		parallel = parallelFlag(fs, "runs")
		verbose  = verboseFlag(fs, "log every run's progress to stderr as well as to its run.log")
	)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: fencecheck soak [flags]\n\nRuns each scenario N times (seeds 1..N), one run at a time by default, and reports per scenario the\ndetection rate (expected violations found), false-alarm rate (expected-held properties found\nviolated), inconclusive rate, time to the first stale write accepted, checker time and ops/s.\nExit 0: every run as the catalogue expects; 1: some run differed; 2: bad input; 3: a run\nfailed to complete.\n\nflags:")
		fs.PrintDefaults()
	}
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "fencecheck soak: unexpected arguments %q (choose scenarios with --scenarios)\n", fs.Args())
		return exitUsage
	}
	if *runs < 1 {
		fmt.Fprintf(stderr, "fencecheck soak: --runs must be at least 1, got %d\n", *runs)
		return exitUsage
	}
	if !checkParallel(*parallel) {
		fmt.Fprintf(stderr, "fencecheck soak: --parallel must be between 1 and 8, got %d\n", *parallel)
		return exitUsage
	}
	var logTo io.Writer
	if *verbose {
		logTo = stderr
	}
	reg, cat := builtin.Registry(), builtin.Catalogue()
	list, skipped, err := cat.Select(reg, *named)
	if err != nil {
		fmt.Fprintln(stderr, "fencecheck soak:", err)
		return exitUsage
	}
	// One line per reason, naming the scenarios it skips.
	var reasons []string
	byReason := map[string][]string{}
	for _, name := range skipped {
		sc, _ := cat.Lookup(name)
		why := spec.Unavailable(reg, sc.Spec)
		if _, ok := byReason[why]; !ok {
			reasons = append(reasons, why)
		}
		byReason[why] = append(byReason[why], name)
	}
	for _, why := range reasons {
		fmt.Fprintf(stderr, "fencecheck soak: skipping %s: %s\n", strings.Join(byReason[why], ", "), why)
	}
	began := time.Now()
	res, err := campaign.Soak(ctx, campaign.SoakConfig{
		Registry: reg, Scenarios: list, Runs: *runs, Random: *random, Store: *out, CheckTimeout: *timeout, Parallel: *parallel, Log: logTo,
		Progress: func(name string, r campaign.SoakRun) {
			status := "as expected"
			switch {
			case r.Err != "":
				status = "ERROR: " + r.Err
			case len(r.Diffs) > 0:
				status = "DIFFERS: " + strings.Join(r.Diffs, "; ")
			case *random:
				status = "done"
			}
			if r.Evidence != "" && status != "as expected" && status != "done" {
				ev := r.Evidence
				if *out != "" {
					ev = filepath.Join(*out, ev)
				}
				status += " (evidence: " + ev + ")"
			}
			fmt.Fprintf(stderr, "soak %s seed %d: %s\n", name, r.Seed, status)
		},
	})
	interrupted := false
	switch {
	case errors.Is(err, spec.ErrSpec):
		fmt.Fprintln(stderr, "fencecheck soak:", err)
		return exitUsage
	case err != nil && res != nil && ctx.Err() != nil:
		interrupted = true // keep what finished
	case err != nil:
		fmt.Fprintln(stderr, "fencecheck soak:", err)
		return exitInternal
	}
	if *out != "" {
		page, err := writeSoak(*out, res, began, interrupted)
		if err != nil {
			fmt.Fprintln(stderr, "fencecheck soak:", err)
			return exitInternal
		}
		pageTo := stdout
		if *asJSON {
			pageTo = stderr // stdout is one JSON document
		}
		defer fmt.Fprintf(pageTo, "soak page: %s\n", page)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			fmt.Fprintln(stderr, "fencecheck soak:", err)
			return exitInternal
		}
	} else {
		soakTable(stdout, res)
		fmt.Fprintf(stdout, "soak: %d scenario(s) × %d run(s) in %s\n", len(res.Scenarios), res.Runs, time.Since(began).Round(time.Second))
	}
	switch {
	case interrupted:
		fmt.Fprintln(stderr, "fencecheck soak: interrupted; the runs that finished are in the results (exit 3)")
		return exitInternal
	case res.Mismatches() > 0:
		fmt.Fprintf(stderr, "fencecheck soak: %d run(s) differ from the catalogue (exit 1)\n", res.Mismatches())
		return exitViolated
	case res.Errors() > 0:
		fmt.Fprintf(stderr, "fencecheck soak: %d run(s) failed to complete (exit 3)\n", res.Errors())
		return exitInternal
	}
	return exitSafe
}

// writeSoak writes the soak's page into the results store and refreshes its index.
func writeSoak(store string, res *campaign.SoakResult, began time.Time, interrupted bool) (string, error) {
	dir, err := reports.NewRunDir(store, "soak", began)
	if err != nil {
		return "", err
	}
	doc := &reports.SoakDoc{Started: began, Seconds: time.Since(began).Seconds(), Interrupted: interrupted, SoakResult: *res}
	if err := reports.WriteSoak(dir, doc); err != nil {
		return "", err
	}
	if err := reports.MarkLatest(dir); err != nil {
		return "", err
	}
	if err := reports.WriteStoreIndex(store); err != nil {
		return "", fmt.Errorf("store index: %w", err)
	}
	return filepath.Join(dir, reports.SoakPage), nil
}

// soakTable prints one row per scenario.
func soakTable(w io.Writer, res *campaign.SoakResult) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "scenario\truns\tdetect\tfalse alarm\tinconcl.\tdiffer\terrors\tfirst violation p50/p95/max\tcheck p50/p95/max\tops/s")
	for _, s := range res.Scenarios {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%.0f\n", s.Scenario, s.Runs,
			pct(s.DetectionRate), pct(s.FalseAlarmRate), pct(&s.InconclusiveRate), s.Mismatches, s.Errors,
			pctiles(s.TimeToFirstViolation), pctiles(s.Check), s.OpsPerSec)
	}
	tw.Flush()
}

func pct(f *float64) string {
	if f == nil {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", *f*100)
}

func pctiles(p campaign.Percentiles) string {
	if p.N == 0 {
		return "-"
	}
	s := func(ns int64) string { return fmt.Sprintf("%.3g", float64(ns)/1e9) }
	return s(p.P50ns) + "/" + s(p.P95ns) + "/" + s(p.MaxNs) + " s"
}
