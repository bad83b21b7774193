package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/fencecheck/fencecheck/campaign"
	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/internal/term"
	"github.com/fencecheck/fencecheck/judge"
	"github.com/fencecheck/fencecheck/reports"
	"github.com/fencecheck/fencecheck/spec"
)

// soakFlags are `fencecheck soak`'s flags.
type soakFlags struct {
	named        []string
	runs         int
	random, json bool
	out          string
	checkTimeout time.Duration
	parallel     int
	verbose      bool
	shard        campaign.Shard
	options      func() map[string]string
}

// soakJSON is `soak --json`: the soak's result, its outcome and exit code.
type soakJSON struct {
	// Outcome: "as-expected", "differs" (some run differs from the catalogue),
	// "incomplete" (some run failed, or the soak was interrupted).
	Outcome judge.RunOutcome `json:"outcome"`
	Exit    int              `json:"exit"`
	*campaign.SoakResult
}

// soakDoc is the --json document of a soak whose exit code is code.
func soakDoc(res *campaign.SoakResult, code int, interrupted bool) soakJSON {
	doc := soakJSON{Outcome: campaignOutcome(res.Mismatches(), res.Errors(), interrupted), Exit: code, SoakResult: res}
	if n, _ := res.Untested(); n > 0 && doc.Outcome == outcomeAsExpected {
		doc.Outcome = judge.OutcomeInconclusive
	}
	return doc
}

// soakExit is a soak's exit code from its runs: 1 when a run differed from the
// catalogue, else 3 when one failed to complete (unless failed, the code of the runs
// that failed, says more), else 4 when one tested nothing (no grant, no accepted write,
// the fault never struck), else 0.
func soakExit(res *campaign.SoakResult, failed int) int {
	n, _ := res.Untested()
	switch {
	case res.Mismatches() > 0:
		return exitViolated
	case res.Errors() > 0 && failed == exitSafe:
		return exitInternal
	case failed != exitSafe:
		return failed
	case n > 0:
		return exitInconclusive
	}
	return exitSafe
}

func (a *app) soakCmd() *cobra.Command {
	f := &soakFlags{}
	c := &cobra.Command{
		Use:   "soak",
		Short: "run scenarios N times each: detection and false-alarm rates",
		Long: `Runs each scenario N times (seeds 1..N), one run at a time by default, and reports per
scenario the detection rate (expected violations found), the false-alarm rate
(expected-held properties found violated), the inconclusive rate, the time to the first
stale write accepted, the checker's time and ops/s. 'all' is the catalogue without the
scenarios that cannot run here (each named on stderr with what it needs).`,
		Example: `  fencecheck soak --scenario naive-unfenced-pause,naive-fenced-pause --runs 50
  fencecheck soak --scenario all --runs 5 --random --json`,
		Args: noArgs("choose scenarios with --scenario"),
		RunE: func(cmd *cobra.Command, _ []string) error { return a.soak(cmd, f) },
	}
	fs := c.Flags()
	fs.StringSliceVar(&f.named, "scenario", []string{"all"}, "catalogue scenarios, comma-separated, or 'all'")
	fs.StringSliceVar(&f.named, "scenarios", []string{"all"}, "")
	deprecate(fs, "scenarios", "scenario")
	fs.IntVar(&f.runs, "runs", 20, fmt.Sprintf("runs per scenario, with seeds 1..N (1 to %d)", maxSoakRuns))
	fs.BoolVar(&f.random, "random", false, "replace each scenario's targeted faults with a random schedule of the same kinds drawn from the seed (verdicts reported, not compared)")
	outFlag(fs, &f.out, defaultOut, "results store: every run goes to DIR/<scenario>/<timestamp>/, the soak's page to DIR/soak/<timestamp>/index.html (empty: a temporary folder keeps only the runs that differ)")
	checkTimeoutFlag(fs, &f.checkTimeout, false)
	parallelFlag(fs, &f.parallel, "runs")
	jsonFlag(fs, &f.json, "the result")
	verboseFlag(fs, &f.verbose, "log every run's progress to stderr as well as to its run.log")
	shardFlag(fs, &f.shard)
	f.options = a.optionFlags(fs)
	a.completeCommon(c)
	setExitCodes(c, exitCodes{
		exitSafe:         "every run as the catalogue expects",
		exitViolated:     "some run differed from the catalogue",
		exitUsage:        "bad input, a scenario asked for that cannot run here, or an interrupt",
		exitInternal:     "a run failed to complete (fencecheck's own failure)",
		exitInconclusive: inconclusiveText + ": every run as expected, but one tested nothing (no grant, no accepted write, the fault never struck)",
	})
	return c
}

// maxSoakRuns bounds --runs: the plan holds every run before the first starts, so a
// number far beyond any soak's (10^11) would only fill memory before it began.
const maxSoakRuns = 10000

func (a *app) soak(cmd *cobra.Command, f *soakFlags) error {
	ctx := cmd.Context()
	fail := a.failer(f.json)
	if f.runs < 1 {
		return fail(badInput("--runs must be at least 1, got %d", f.runs))
	}
	if f.runs > maxSoakRuns {
		return fail(badInput("--runs %d is above the most a soak makes, %d runs per scenario (shard a longer soak: --shard, docs/sharding.md)", f.runs, maxSoakRuns))
	}
	if err := checkParallel(f.parallel); err != nil {
		return fail(err)
	}
	if !f.shard.Whole() && f.out == "" {
		return fail(badInput("--shard %s needs a results store (--out DIR) for 'fencecheck merge' to combine", f.shard))
	}
	if f.out != "" { // empty: a temporary folder (documented)
		if err := writableDir("--out", f.out); err != nil {
			return fail(err)
		}
	}
	var logTo io.Writer
	if f.verbose {
		logTo = a.stderr
	}
	list, err := a.selectScenarios("soak", trimList(f.named), f.options())
	if err != nil {
		return fail(err)
	}
	began := time.Now()
	var mu sync.Mutex
	failedCode := exitSafe // of the runs that failed
	res, plan, err := campaign.SoakPlanned(ctx, campaign.SoakConfig{
		Scenarios: list, Runs: f.runs, Random: f.random, Store: f.out, CheckTimeout: f.checkTimeout, Parallel: f.parallel, Log: logTo,
		Registry: a.reg, Redact: a.red, Shard: f.shard,
		Failed: func(_ string, err error) {
			mu.Lock()
			defer mu.Unlock()
			failedCode = worst(failedCode, codeOf(err))
		},
		Progress: func(name string, r campaign.SoakRun) {
			status := "as expected"
			switch {
			case r.Err != "":
				status = "ERROR: " + r.Err
			case len(r.Diffs) > 0:
				status = "DIFFERS: " + strings.Join(r.Diffs, "; ")
			case f.random:
				status = "done"
			}
			if r.Evidence != "" && status != "as expected" && status != "done" {
				ev := r.Evidence
				if f.out != "" {
					ev = filepath.Join(f.out, ev)
				}
				status += " (evidence: " + ev + ")"
			}
			term.Fprintf(a.stderr, "soak %s seed %d: %s\n", name, r.Seed, status)
		},
	})
	interrupted := false
	switch {
	case errors.Is(err, spec.ErrSpec):
		return fail(err)
	case err != nil && res != nil && ctx.Err() != nil:
		interrupted = true // keep what finished
	case err != nil:
		return fail(&exitError{code: exitInternal, msg: err.Error()})
	}
	out := a.stdout
	if f.json {
		out = a.stderr // stdout is one JSON document
	}
	if f.out != "" {
		page, err := writeSoak(f.out, res, plan, began, interrupted)
		if err != nil {
			return fail(&exitError{code: exitInternal, msg: err.Error()})
		}
		defer term.Fprintf(out, "soak page: %s\n", page)
	}
	code := soakExit(res, failedCode)
	if interrupted {
		code = worst(code, exitUsage)
	}
	if f.json {
		if err := a.printJSON(soakDoc(res, code, interrupted)); err != nil {
			return &exitError{code: exitInternal, msg: err.Error()}
		}
	} else {
		soakTable(out, res)
		fmt.Fprintf(out, "soak: %d scenario(s) × %d run(s)%s in %s\n", len(res.Scenarios), res.Runs, shardNote(plan), time.Since(began).Round(time.Second))
	}
	switch {
	case res.Mismatches() > 0:
		fmt.Fprintf(a.stderr, "fencecheck soak: %d run(s) differ from the catalogue (exit %d)\n", res.Mismatches(), code)
	case res.Errors() > 0:
		fmt.Fprintf(a.stderr, "fencecheck soak: %d run(s) failed to complete (exit %d)\n", res.Errors(), code)
	case interrupted:
		fmt.Fprintf(a.stderr, "fencecheck soak: interrupted; the runs that finished are in the results (exit %d)\n", code)
	case code == exitInconclusive:
		n, first := res.Untested()
		term.Fprintf(a.stderr, "fencecheck soak: %d run(s) tested nothing, the first: %s (exit %d)\n", n, first, code)
	}
	return withCode(code)
}

// selectScenarios resolves catalogue names for matrix --scenario and soak: each name
// (a near miss gets a suggestion), or all (or none) for the catalogue without what cannot
// run here, each left out named on stderr once per reason. A named scenario that cannot
// run here is bad input. The registry options given go to the scenarios whose backend or
// resource declares them; one that none of them takes is bad input.
func (a *app) selectScenarios(cmd string, names []string, opts map[string]string) ([]catalogue.Scenario, error) {
	all := len(names) == 0 || len(names) == 1 && names[0] == "all"
	var picked []catalogue.Scenario
	if all {
		picked = a.cat
	} else {
		for _, n := range names {
			sc, ok := a.cat.Lookup(n)
			if !ok {
				return nil, checkName("scenario", n, append(a.scenarioNames(), "all"))
			}
			picked = append(picked, sc)
		}
	}
	used := map[string]bool{}
	var out []catalogue.Scenario
	var reasons []string
	byReason := map[string][]string{}
	for _, sc := range picked {
		sc = a.withOptions(sc, opts, used)
		if why := spec.Unavailable(a.reg, sc.Spec); why != "" {
			if !all {
				return nil, badInput("scenario %s cannot run here: %s", sc.Name, why)
			}
			if _, ok := byReason[why]; !ok {
				reasons = append(reasons, why)
			}
			byReason[why] = append(byReason[why], sc.Name)
			continue
		}
		out = append(out, sc)
	}
	if err := a.unusedOption(opts, used); err != nil {
		return nil, err
	}
	for _, why := range reasons {
		fmt.Fprintf(a.stderr, "fencecheck %s: skipping %s: %s\n", cmd, strings.Join(byReason[why], ", "), why)
	}
	if len(out) == 0 {
		return nil, badInput("no scenario to run")
	}
	return out, nil
}

// withOptions gives sc the registry options of opts that its backend or resource
// declares, marking each one given in used.
func (a *app) withOptions(sc catalogue.Scenario, opts map[string]string, used map[string]bool) catalogue.Scenario {
	for k, v := range opts {
		backends, resources := a.reg.OptionOwners(k)
		if slices.Contains(backends, sc.Backend) || slices.Contains(resources, sc.Resource) {
			sc.Spec.Options = maps.Clone(sc.Spec.Options)
			if sc.Spec.Options == nil {
				sc.Spec.Options = map[string]string{}
			}
			sc.Spec.Options[k] = v
			used[k] = true
		}
	}
	return sc
}

// unusedOption refuses a registry option that no chosen scenario took.
func (a *app) unusedOption(opts map[string]string, used map[string]bool) error {
	for k := range opts {
		if !used[k] {
			backends, resources := a.reg.OptionOwners(k)
			return badInput("--%s is for %s, and none of the scenarios chosen uses one", k, strings.Join(append(backends, resources...), ", "))
		}
	}
	return nil
}

// writeSoak writes the soak's page and its plan record into the results store and
// refreshes its index.
func writeSoak(store string, res *campaign.SoakResult, plan *campaign.Plan, began time.Time, interrupted bool) (string, error) {
	dir, err := reports.NewRunDir(store, "soak", began)
	if err != nil {
		return "", err
	}
	doc := &reports.SoakDoc{Started: began, Seconds: time.Since(began).Seconds(), Interrupted: interrupted, Sharding: sharding(plan), SoakResult: *res}
	if err := reports.WriteSoak(dir, doc); err != nil {
		return "", err
	}
	if err := finishCampaign(store, dir, plan); err != nil {
		return "", err
	}
	return filepath.Join(dir, reports.SoakPage), nil
}

// finishCampaign completes a campaign's folder dir in the results store once its page
// is written: its plan record (when it has one), the latest link, the store's index.
func finishCampaign(store, dir string, plan *campaign.Plan) error {
	if plan != nil {
		if err := campaign.WritePlan(dir, plan); err != nil {
			return err
		}
	}
	if err := reports.MarkLatest(dir); err != nil {
		return err
	}
	if err := reports.WriteStoreIndex(store); err != nil {
		return fmt.Errorf("store index: %w", err)
	}
	return nil
}

// soakTable prints one row per scenario.
func soakTable(w io.Writer, res *campaign.SoakResult) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "scenario\truns\tdetect\tfalse alarm\tinconcl.\tuntested\tdiffer\terrors\tfirst violation p50/p95/max\tcheck p50/p95/max\tops/s")
	for _, s := range res.Scenarios {
		term.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\t%.0f\n", s.Scenario, s.Runs,
			pct(s.DetectionRate), pct(s.FalseAlarmRate), pct(&s.InconclusiveRate), s.Untested, s.Mismatches, s.Errors,
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
