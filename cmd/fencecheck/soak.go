package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/fencecheck/fencecheck/scenarios"
)

func cmdSoak(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		named   = fs.String("scenarios", "all", "comma-separated catalogue scenarios, or 'all'")
		runs    = fs.Int("runs", 20, "runs per scenario, with seeds 1..N")
		random  = fs.Bool("random", false, "replace each scenario's targeted faults with a random schedule of the same kinds drawn from the seed (verdicts reported, not compared)")
		asJSON  = fs.Bool("json", false, "print the result as one JSON document instead of a table")
		out     = fs.String("out", "", "keep every run's evidence in DIR/<scenario>/seed-<N>/ (default: only that of runs that differ, in a temporary directory)")
		timeout = fs.Duration("check-timeout", 0, "per-property checker timeout (0: the default)")
	)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: fencecheck soak [flags]\n\nRuns each scenario N times (seeds 1..N), one run at a time, and reports per scenario the\ndetection rate (expected violations found), false-alarm rate (expected-held properties found\nviolated), inconclusive rate, time to the first stale write accepted, checker time and ops/s.\nExit 0: every run as the catalogue expects; 1: some run differed; 2: bad input; 3: a run\nfailed to complete.\n\nflags:")
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
	list, skipped, err := scenarios.SelectScenarios(*named)
	if err != nil {
		fmt.Fprintln(stderr, "fencecheck soak:", err)
		return exitUsage
	}
	if len(skipped) > 0 {
		fmt.Fprintf(stderr, "fencecheck soak: skipping %s: no PostgreSQL server configured (--postgres-dsn of fencecheck run, or $FENCECHECK_POSTGRES_DSN)\n", strings.Join(skipped, ", "))
	}
	began := time.Now()
	res, err := scenarios.Soak(ctx, scenarios.SoakConfig{
		Scenarios: list, Runs: *runs, Random: *random, OutDir: *out, CheckTimeout: *timeout,
		Progress: func(name string, r scenarios.SoakRun) {
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
				status += " (evidence: " + r.Evidence + ")"
			}
			fmt.Fprintf(stderr, "soak %s seed %d: %s\n", name, r.Seed, status)
		},
	})
	switch {
	case errors.Is(err, scenarios.ErrSpec):
		fmt.Fprintln(stderr, "fencecheck soak:", err)
		return exitUsage
	case err != nil:
		fmt.Fprintln(stderr, "fencecheck soak:", err)
		return exitInternal
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
	case res.Mismatches() > 0:
		fmt.Fprintf(stderr, "fencecheck soak: %d run(s) differ from the catalogue (exit 1)\n", res.Mismatches())
		return exitViolated
	case res.Errors() > 0:
		fmt.Fprintf(stderr, "fencecheck soak: %d run(s) failed to complete (exit 3)\n", res.Errors())
		return exitInternal
	}
	return exitSafe
}

// soakTable prints one row per scenario.
func soakTable(w io.Writer, res *scenarios.SoakResult) {
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

func pctiles(p scenarios.Percentiles) string {
	if p.N == 0 {
		return "-"
	}
	s := func(ns int64) string { return fmt.Sprintf("%.3g", float64(ns)/1e9) }
	return s(p.P50ns) + "/" + s(p.P95ns) + "/" + s(p.MaxNs) + " s"
}
