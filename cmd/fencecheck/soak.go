package main

import (
	"context"
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
	soakCommon
	named   []string
	random  bool
	options func() map[string]string
}

// soakCommon are the flags of the commands whose runs are a soak (soak, zoo).
type soakCommon struct {
	runs         int
	json         bool
	out          string
	checkTimeout time.Duration
	parallel     int
	verbose      bool
	shard        campaign.Shard
	// early is soak's --early (zoo runs its entries as catalogued).
	early bool
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
	fs.BoolVar(&f.early, "early", true, "arm each targeted strike at the run's first critical sections and heal it on the takeover, so the stale write comes about one TTL in (false: after a TTL of normal critical sections and a hold of twice the TTL, as run does)")
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
	fail := a.failer(f.json)
	if err := f.check(); err != nil {
		return fail(err)
	}
	list, err := a.selectScenarios("soak", trimList(f.named), f.options())
	if err != nil {
		return fail(err)
	}
	done, err := a.runSoak(cmd.Context(), "soak", &f.soakCommon, list, f.random, func(r campaign.SoakRun) string {
		switch {
		case r.Err != "":
			return "ERROR: " + r.Err
		case len(r.Diffs) > 0:
			return "DIFFERS: " + strings.Join(r.Diffs, "; ")
		case f.random:
			return "done"
		}
		return ""
	})
	if err != nil {
		return fail(err)
	}
	defer done.pageLine()
	if f.json {
		if err := a.printJSON(soakDoc(done.res, done.code, done.interrupted)); err != nil {
			return &exitError{code: exitInternal, msg: err.Error()}
		}
	} else {
		soakTable(done.out, done.res)
		fmt.Fprintf(done.out, "soak: %d scenario(s) × %d run(s)%s in %s\n", len(done.res.Scenarios), done.res.Runs, shardNote(done.plan), time.Since(done.began).Round(time.Second))
	}
	a.soakClosing("soak", "differ from the catalogue", done)
	return withCode(done.code)
}

// check refuses the common flags' bad values: runs out of bounds, a bad --parallel, a
// shard without a store, a store that cannot be written.
func (c *soakCommon) check() error {
	if c.runs < 1 {
		return badInput("--runs must be at least 1, got %d", c.runs)
	}
	if c.runs > maxSoakRuns {
		return badInput("--runs %d is above the most a soak makes, %d runs per scenario (shard a longer soak: --shard, docs/sharding.md)", c.runs, maxSoakRuns)
	}
	if err := checkParallel(c.parallel); err != nil {
		return err
	}
	if !c.shard.Whole() && c.out == "" {
		return badInput("--shard %s needs a results store (--out DIR) for 'fencecheck merge' to combine", c.shard)
	}
	if c.out != "" { // empty: a temporary folder (documented)
		if err := writableDir("--out", c.out); err != nil {
			return err
		}
	}
	return nil
}

// soaked is a finished soak of soak's or zoo's: its result and plan, its exit code,
// where its text goes (stderr when stdout is one JSON document), and its page.
type soaked struct {
	res         *campaign.SoakResult
	plan        *campaign.Plan
	code        int
	interrupted bool
	began       time.Time
	out         io.Writer
	page        string
}

// pageLine says where the soak's page is, when it wrote one.
func (s *soaked) pageLine() {
	if s.page != "" {
		term.Fprintf(s.out, "%s page: %s\n", "soak", s.page)
	}
}

// runSoak runs the scenarios as a soak over the campaign runner, printing each run's
// status on stderr ("as expected" when status says ""), writes its page into the store,
// and works out its exit code. The error is ready for fail: a bad spec, or
// fencecheck's own failure; an interrupt is not one (soaked.interrupted).
func (a *app) runSoak(ctx context.Context, cmd string, c *soakCommon, list []catalogue.Scenario, random bool, status func(campaign.SoakRun) string) (*soaked, error) {
	var logTo io.Writer
	if c.verbose {
		logTo = a.stderr
	}
	began := time.Now()
	var mu sync.Mutex
	failedCode := exitSafe // of the runs that failed
	res, plan, err := campaign.SoakPlanned(ctx, campaign.SoakConfig{
		Scenarios: list, Runs: c.runs, Random: random, Early: c.early, Store: c.out, CheckTimeout: c.checkTimeout, Parallel: c.parallel, Log: logTo,
		Registry: a.reg, Redact: a.red, Shard: c.shard,
		Failed: func(_ string, err error) {
			mu.Lock()
			defer mu.Unlock()
			failedCode = worst(failedCode, codeOf(err))
		},
		Progress: func(name string, r campaign.SoakRun) {
			st := status(r)
			if st == "" {
				st = "as expected"
			} else if r.Evidence != "" && st != "done" {
				ev := r.Evidence
				if c.out != "" {
					ev = filepath.Join(c.out, ev)
				}
				st += " (evidence: " + ev + ")"
			}
			term.Fprintf(a.stderr, "%s %s seed %d: %s\n", cmd, name, r.Seed, st)
		},
	})
	done := &soaked{res: res, plan: plan, began: began, out: a.stdout}
	switch {
	case errors.Is(err, spec.ErrSpec):
		return nil, err
	case err != nil && res != nil && ctx.Err() != nil:
		done.interrupted = true // keep what finished
	case err != nil:
		return nil, &exitError{code: exitInternal, msg: err.Error()}
	}
	if c.json {
		done.out = a.stderr // stdout is one JSON document
	}
	if c.out != "" {
		page, err := writeSoak(c.out, res, plan, began, done.interrupted)
		if err != nil {
			return nil, &exitError{code: exitInternal, msg: err.Error()}
		}
		done.page = page
	}
	done.code = soakExit(res, failedCode)
	if done.interrupted {
		done.code = worst(done.code, exitUsage)
	}
	return done, nil
}

// soakClosing says on stderr, in one line, why a soak of cmd's did not exit 0; differ
// says what a run that differed from its expectation did.
func (a *app) soakClosing(cmd, differ string, s *soaked) {
	res, code := s.res, s.code
	switch {
	case res.Mismatches() > 0:
		fmt.Fprintf(a.stderr, "fencecheck %s: %d run(s) %s (exit %d)\n", cmd, res.Mismatches(), differ, code)
	case res.Errors() > 0:
		fmt.Fprintf(a.stderr, "fencecheck %s: %d run(s) failed to complete (exit %d)\n", cmd, res.Errors(), code)
	case s.interrupted:
		fmt.Fprintf(a.stderr, "fencecheck %s: interrupted; the runs that finished are in the results (exit %d)\n", cmd, code)
	case code == exitInconclusive:
		n, first := res.Untested()
		term.Fprintf(a.stderr, "fencecheck %s: %d run(s) tested nothing, the first: %s (exit %d)\n", cmd, n, first, code)
	}
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
