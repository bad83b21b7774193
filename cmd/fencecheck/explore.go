package main

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/fencecheck/fencecheck/campaign"
	"github.com/fencecheck/fencecheck/internal/term"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/reports"
	"github.com/fencecheck/fencecheck/spec"
)

// exploreFlags are `fencecheck explore`'s flags.
type exploreFlags struct {
	backend, resource, policy, out string
	// bug and control: explore a zoo entry's configuration (its control's).
	bug                      string
	control                  bool
	failOn, faults           []string
	seed                     int64
	budget, checkTimeout     time.Duration
	parallel, replays        int
	keepGoing, json, verbose bool
	shard                    campaign.Shard
	options                  func() map[string]string
}

// exploreJSON is `explore --json`: the exploration, its outcome and exit code.
type exploreJSON struct {
	// Outcome: "found" (a finding), "nothing-found" (none within the budget),
	// "incomplete" (interrupted, or tries failed, before anything was found).
	Outcome string `json:"outcome"`
	Exit    int    `json:"exit"`
	*campaign.ExploreResult
}

// The outcomes of an exploration.
const (
	outcomeFound        = "found"
	outcomeNothingFound = "nothing-found"
	outcomeIncomplete   = "incomplete"
)

func (a *app) exploreCmd() *cobra.Command {
	f := &exploreFlags{}
	c := &cobra.Command{
		Use:   "explore",
		Short: "run random fault schedules until a property breaks, and shrink the schedule",
		Long: `Runs random fault schedules against one backend, all drawn from --seed: each try draws its own
seed, then which of the faults that apply to the backend it uses (on clients and on the
lock service), the TTL (half, once or twice the backend's default), 2 to 4 clients, 1 to 3
keys where the backend serves them, and the schedule; half the faults on clients heal on the takeover (the first write another
client gets accepted) instead of after a drawn hold. Tries go --parallel at a time into
the results store until --budget is spent or one violates a property of --fail-on (a
finding; --keep-going collects distinct ones: another property or another set of fault
kinds). --bug explores the configuration of a zoo entry (fencecheck zoo) without its
faults, failing on its property; --control that of its control.

A finding's schedule is shrunk greedily: drop faults one at a time, make the timing
simpler (strike at the first critical section and heal on the takeover), arm earlier,
halve holds, one key, take clients away, cap the operations, keeping a step only if at least 9 in 10 of its
--replays (other workload seeds) still violate the property. The original and shrunk
schedule files and both runs' folders go to DIR/explore/<timestamp>/finding-N/, and
three lines say what broke, the command that replays it ('fencecheck run --schedule
FILE') and the file (docs/explore.md).`,
		Example: `  fencecheck explore --backend naive --budget 2m
  fencecheck explore --bug etcd-11457 --budget 10m
  fencecheck explore --backend redis --resource fenced --budget 10m --keep-going --json`,
		Args: noArgs("choose the backend with --backend"),
		RunE: func(cmd *cobra.Command, _ []string) error { return a.explore(cmd, f) },
	}
	fs := c.Flags()
	fs.StringVar(&f.backend, "backend", "", "lock backend to explore (required, unless --bug)")
	fs.StringVar(&f.bug, "bug", "", "explore the configuration of a zoo entry ('fencecheck zoo'): its backend, resource, policy, TTL, members and options, never its faults; --fail-on defaults to its property")
	fs.BoolVar(&f.control, "control", false, "with --bug: the entry's control (the fixed version or configuration) instead")
	fs.StringVar(&f.resource, "resource", "unfenced", "protected resource")
	fs.StringVar(&f.policy, "policy", "", "client policy: trusting (default) or careful")
	fs.StringSliceVar(&f.faults, "fault", nil, "fault kinds the tries draw from, comma-separated (default: every fault that applies to the backend in a random schedule)")
	seedFlag(fs, &f.seed, "the exploration: every try draws its own seed from it")
	fs.DurationVar(&f.budget, "budget", 10*time.Minute, "how long tries are started for (shrinking a finding goes on past it)")
	autoParallelFlag(fs, &f.parallel, "tries and replays")
	fs.IntVar(&f.replays, "replays", 10, "replays of each shrink step, with other workload seeds; a step is kept if 9 in 10 of them (rounded up) still fail (1 to 100)")
	fs.BoolVar(&f.keepGoing, "keep-going", false, "collect distinct findings until the budget is spent instead of stopping at the first")
	outFlag(fs, &f.out, defaultOut, "results store: tries go to DIR/<label>/<timestamp>/, findings to DIR/explore/<timestamp>/finding-N/")
	failOnFlag(fs, &f.failOn)
	checkTimeoutFlag(fs, &f.checkTimeout, false)
	jsonFlag(fs, &f.json, "the exploration")
	verboseFlag(fs, &f.verbose, "log every run's progress to stderr as well as to its run.log")
	fs.Var((*shardValue)(&f.shard), "shard", "run only shard I of N of the exploration's tries (I/N: every N-th try the seed draws, from the I-th), so N machines with the same --seed and --budget explore N times as many schedules; 'fencecheck merge' lists every shard's findings in one store")
	f.options = a.optionFlags(fs)
	a.completeCommon(c)
	completeNames(c, func() []string { return a.bugs.IDs() }, "bug")
	setExitCodes(c, exitCodes{
		exitSafe:     "nothing found within the budget",
		exitViolated: "a finding: a property of --fail-on violated (saved, shrunk, and its replay command printed)",
		exitUsage:    "bad input (a budget that is not positive, an unknown backend, one that cannot run here), or an interrupt before anything was found",
		exitInternal: "fencecheck's own failure: a try or a replay failed to complete",
	})
	return c
}

func (a *app) explore(cmd *cobra.Command, f *exploreFlags) error {
	ctx := cmd.Context()
	fail := a.failer(f.json)
	props, err := parseFailOn(f.failOn)
	if err != nil {
		return fail(err)
	}
	switch {
	case f.bug != "" && (f.backend != "" || cmd.Flags().Changed("resource") || f.policy != ""):
		return fail(usageError("--bug explores the entry's own backend, resource and policy: give either --bug or --backend"))
	case f.control && f.bug == "":
		return fail(usageError("--control needs --bug (the entry whose control to explore)"))
	case f.backend == "" && f.bug == "":
		return fail(usageError("choose the backend to explore with --backend (or a zoo entry's configuration with --bug)"))
	case f.budget <= 0:
		return fail(badInput("--budget must be positive, got %v", f.budget))
	case f.replays < 1 || f.replays > 100:
		return fail(badInput("--replays must be between 1 and 100, got %d", f.replays))
	}
	if f.parallel == 0 {
		f.parallel = campaign.DefaultParallel()
	}
	if err := checkParallel(f.parallel); err != nil {
		return fail(err)
	}
	base := spec.Spec{Backend: f.backend, Resource: f.resource, Policy: f.policy, Options: f.options()}
	if f.bug != "" {
		entries, _, err := a.selectBugs([]string{f.bug}, base.Options)
		if err != nil {
			return fail(err)
		}
		b := entries[0]
		base = exploreBase(b.Spec)
		if f.control {
			base = exploreBase(b.Control)
		}
		if !cmd.Flags().Changed("fail-on") {
			props = []models.Property{b.Property}
		}
	} else {
		if err := checkName("backend", f.backend, a.backendNames()); err != nil {
			return fail(err)
		}
		if err := checkName("resource", f.resource, a.resourceNames()); err != nil {
			return fail(err)
		}
	}
	kinds := trimList(f.faults)
	for _, k := range kinds {
		if err := checkName("fault", k, a.faultNames()); err != nil {
			return fail(err)
		}
	}
	if err := writableDir("--out", f.out); err != nil {
		return fail(err)
	}
	var logTo io.Writer
	if f.verbose {
		logTo = a.stderr
	}
	var mu sync.Mutex
	failedCode := exitSafe
	res, err := campaign.Explore(ctx, campaign.ExploreConfig{
		Registry: a.reg, Base: base, Kinds: kinds, Seed: f.seed, Budget: f.budget, Parallel: f.parallel, FailOn: props,
		KeepGoing: f.keepGoing, Replays: f.replays, Shard: f.shard, Store: f.out, CheckTimeout: f.checkTimeout, Log: logTo,
		Redact: a.red, Host: a.host,
		Progress: func(line string) { term.Fprintf(a.stderr, "explore: %s\n", line) },
		Failed: func(err error) {
			mu.Lock()
			defer mu.Unlock()
			failedCode = worst(failedCode, codeOf(err))
		},
	})
	interrupted := false
	switch {
	case res == nil && err != nil:
		return fail(err)
	case err != nil && ctx.Err() != nil:
		interrupted = true
	case errors.Is(err, campaign.ErrStore):
		return fail(badInput("%s", message(err)))
	case err != nil:
		return fail(&exitError{code: exitInternal, msg: message(err)})
	}
	if ierr := reports.WriteStoreIndex(f.out); ierr != nil {
		fmt.Fprintln(a.stderr, "fencecheck explore: warning: store index:", ierr)
	}
	code, outcome := exitSafe, outcomeNothingFound
	switch {
	case len(res.Findings) > 0:
		code, outcome = exitViolated, outcomeFound
	case interrupted:
		code, outcome = exitUsage, outcomeIncomplete
	case res.Errors > 0:
		code, outcome = worst(exitInternal, failedCode), outcomeIncomplete
		if failedCode != exitSafe {
			code = failedCode
		}
	}
	out := a.stdout
	if f.json {
		out = a.stderr
	}
	for _, fd := range res.Findings {
		findingLines(out, fd)
	}
	term.Fprintf(out, "explore: %d tries, %d findings in %s (seed %d); results in %s\n", res.Tries, len(res.Findings), time.Duration(res.Seconds*float64(time.Second)).Round(time.Second), res.Seed, res.Dir)
	if f.json {
		if err := a.printJSON(exploreJSON{Outcome: outcome, Exit: code, ExploreResult: res}); err != nil {
			return &exitError{code: exitInternal, msg: err.Error()}
		}
	}
	switch {
	case interrupted:
		fmt.Fprintf(a.stderr, "fencecheck explore: interrupted; the findings so far are saved (exit %d)\n", code)
	case code != exitSafe && code != exitViolated:
		fmt.Fprintf(a.stderr, "fencecheck explore: %d of %d tries failed to complete (exit %d)\n", res.Errors, res.Tries, code)
	}
	return withCode(code)
}

// exploreBase is the configuration of a zoo entry's run: its backend, resource, fence,
// policy, TTL, members, keys, grants, options and asked properties, without what a try
// draws (faults, schedule, clients, seed, duration).
func exploreBase(s spec.Spec) spec.Spec {
	return spec.Spec{Backend: s.Backend, Resource: s.Resource, Fence: s.Fence, Policy: s.Policy, TTL: s.TTL, Members: s.Members,
		Keys: s.Keys, MinGrants: s.MinGrants, Options: s.Options, Check: s.Check}
}

// findingLines prints a finding's three lines: what broke, the command that replays its
// shrunk schedule, the file.
func findingLines(w io.Writer, fd campaign.Finding) {
	how := fmt.Sprintf("shrunk to %d of %d faults, %d clients, %d ops; %d/%d replays violate it", fd.ShrunkFaults, fd.OriginalFaults, fd.ShrunkClients, fd.ShrunkOps, fd.Hits, fd.Replays)
	if !fd.Reproducible {
		how = fmt.Sprintf("not shrunk: only %d/%d replays violate it", fd.Hits, fd.Replays)
	}
	if fd.Note != "" {
		how += "; " + fd.Note
	}
	term.Fprintf(w, "broke: %s: %s (%s)\n", fd.Property, oneLine(fd.Explanation), how)
	term.Fprintf(w, "replay: fencecheck run --schedule %s\n", fd.Shrunk)
	term.Fprintf(w, "file: %s\n", fd.Shrunk)
}
