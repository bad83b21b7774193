package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fencecheck/fencecheck/campaign"
	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/judge"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/reports"
	"github.com/fencecheck/fencecheck/spec"
)

// evaluateFlags are `fencecheck evaluate`'s flags.
type evaluateFlags struct {
	backend       string
	faults        []string
	parallel      int
	seed          int64
	ttl           time.Duration
	out           string
	json, verbose bool
	checkTimeout  time.Duration
	shard         campaign.Shard
	options       func() map[string]string
}

// evaluateJSON is `evaluate --json`: the scorecard (as scorecard.json has it), its
// outcome and exit code.
type evaluateJSON struct {
	// Outcome: "safe" (safe with fencing under every applicable fault), "unsafe",
	// "inconclusive" (nothing unsafe, but the fenced runs lack the evidence:
	// Scorecard.Inconclusive says why), "incomplete" (some run failed or was not
	// decided, or the evaluation was interrupted).
	Outcome judge.RunOutcome `json:"outcome"`
	Exit    int              `json:"exit"`
	Page    string           `json:"page"`
	*reports.Scorecard
}

// evaluateDoc is the --json document of a scorecard whose exit code is code.
func evaluateDoc(sc *reports.Scorecard, code int, page string) evaluateJSON {
	doc := evaluateJSON{Outcome: judge.OutcomeIncomplete, Exit: code, Page: page, Scorecard: sc}
	switch code {
	case exitSafe:
		doc.Outcome = judge.OutcomeSafe
	case exitViolated:
		doc.Outcome = judge.OutcomeUnsafe
	case exitInconclusive:
		doc.Outcome = judge.OutcomeInconclusive
	}
	return doc
}

func (a *app) evaluateCmd() *cobra.Command {
	f := &evaluateFlags{}
	c := &cobra.Command{
		Use:   "evaluate --backend NAME",
		Short: "a lock backend's scorecard: is it safe with fencing, and what must the resource do?",
		Long: `Runs every fault that applies to a lock backend against an unfenced register, a fenced one
and the backend's own store (etcd: etcd-txn), and writes a scorecard into the results store
(DIR/evaluate-<backend>/<timestamp>/scorecard.html and scorecard.json): may we adopt this
backend, and what must our resource do? With a backend option naming an existing service
(--etcd-endpoints, --redis-addrs, ...) the backend is implied and only client-side faults run.`,
		Example: `  fencecheck evaluate --backend etcd
  fencecheck evaluate --etcd-endpoints 127.0.0.1:2379 --fault pause
  fencecheck evaluate --backend exec --client-cmd 'python3 my_lock_client.py' --json`,
		Args: noArgs("name the backend with --backend"),
		RunE: func(cmd *cobra.Command, _ []string) error { return a.evaluate(cmd, f) },
	}
	fs := c.Flags()
	fs.StringVar(&f.backend, "backend", "", "the lock backend to evaluate (see 'fencecheck list'); required unless an option implies it")
	fs.StringSliceVar(&f.faults, "fault", nil, "faults to run, comma-separated (default: every fault that applies to the backend)")
	autoParallelFlag(fs, &f.parallel, "runs")
	seedFlag(fs, &f.seed, "every run's workload")
	fs.DurationVar(&f.ttl, "ttl", 0, fmt.Sprintf("lease TTL of every run, %v to %v (default: the backend's; an existing etcd cluster: the TTL it grants)", spec.MinTTL, spec.MaxTTL))
	outFlag(fs, &f.out, defaultOut, "results store: runs go to DIR/<scenario>/<timestamp>/, the scorecard to DIR/evaluate-<backend>/<timestamp>/")
	checkTimeoutFlag(fs, &f.checkTimeout, false)
	jsonFlag(fs, &f.json, "the scorecard")
	verboseFlag(fs, &f.verbose, "log every run's progress to stderr as well as to its run.log")
	shardFlag(fs, &f.shard)
	f.options = a.optionFlags(fs)
	a.completeCommon(c)
	setExitCodes(c, exitCodes{
		exitSafe:         "safe with fencing under every applicable fault (a shard: its runs completed and none showed fencing fail)",
		exitViolated:     "not safe: fencing failed or tokens went backwards under some fault, or the backend has no fencing token",
		exitUsage:        "bad input, a backend that cannot run here, or an interrupt",
		exitInternal:     "a run failed or the checker did not decide (fencecheck's own failure)",
		exitInconclusive: inconclusiveText + ": no fenced run had a stale write attempted, or one tested nothing",
	})
	return c
}

func (a *app) evaluate(cmd *cobra.Command, f *evaluateFlags) error {
	ctx := cmd.Context()
	reg := a.reg
	fail := a.failer(f.json)
	if err := writableDir("--out", f.out); err != nil {
		return fail(err)
	}
	opts := f.options()
	backend := f.backend
	if backend == "" {
		backend = impliedBackend(reg, opts)
	}
	if backend == "" {
		return fail(usageError("--backend is required (one of %s)", strings.Join(a.backendNames(), ", ")))
	}
	if err := checkName("backend", backend, a.backendNames()); err != nil {
		return fail(err)
	}
	for _, fl := range trimList(f.faults) {
		if err := checkName("fault", fl, a.faultNames()); err != nil {
			return fail(err)
		}
	}
	if f.parallel == 0 {
		f.parallel = campaign.DefaultParallel()
	}
	if err := checkParallel(f.parallel); err != nil {
		return fail(err)
	}
	if f.ttl < 0 {
		return fail(badInput("--ttl must not be negative"))
	}
	cfg := campaign.EvaluateConfig{Backend: backend, Options: opts, Faults: trimList(f.faults), Seed: f.seed, TTL: f.ttl}
	// An existing etcd cluster decides the TTL it grants: settle it once, for every run.
	cfg, note, err := campaign.ResolveEvaluateTTL(ctx, reg, cfg)
	if err != nil {
		return fail(err)
	}
	out := a.stdout
	if f.json {
		out = a.stderr
	}
	if note != "" {
		fmt.Fprintln(out, note)
	}
	plan, err := campaign.PlanEvaluate(reg, a.cat, cfg)
	if err != nil {
		return fail(err)
	}
	for _, s := range plan.Specs() {
		if why := spec.Unavailable(reg, s); why != "" {
			return fail(badInput("%s", why))
		}
	}
	record, err := plan.Record(reg, a.cat, f.shard, a.red)
	if err != nil {
		return fail(&exitError{code: exitInternal, msg: err.Error()})
	}
	sc := plan.Scorecard
	started := time.Now()
	dir, err := reports.NewRunDir(f.out, plan.Name, started)
	if err != nil {
		return fail(&exitError{code: exitInternal, msg: err.Error()})
	}
	fmt.Fprintf(out, "evaluate %s: %d faults × %d resources = %d runs (%d at a time); results in %s\n", backend, len(sc.Rows), len(sc.Resources), len(plan.Jobs), f.parallel, f.out)
	torun := len(plan.Jobs)
	if !f.shard.Whole() {
		torun = len(f.shard.Select(len(plan.Jobs)))
		fmt.Fprintf(out, "evaluate %s: shard %s of plan %s: %d of the %d runs\n", backend, f.shard, record.ShortID(), torun, len(plan.Jobs))
	}
	if sc.NoToken != "" {
		fmt.Fprintf(out, "evaluate %s: %s: %s; only the unfenced runs are made\n", backend, spec.ErrNoToken, sc.NoToken)
	}
	var logTo io.Writer
	if f.verbose {
		logTo = a.stderr
	}
	prog := newProgress(a.bar, a.isTerminal(), torun)
	results, interrupted := campaign.Campaign{
		Registry: reg, Catalogue: a.cat, Store: f.out, Parallel: f.parallel, Log: logTo, CheckTimeout: f.checkTimeout, Host: a.host, Redact: a.red, Shard: f.shard,
		Started: func(_ int, label string) { prog.Start(label) },
		Finished: func(i int, r campaign.RunResult) {
			if errors.Is(r.Err, spec.ErrNoToken) { // found out at its first grant (exec)
				prog.Done(r.Label, "refused: "+errText(r.Err))
				return
			}
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
	sc = plan.Judge(results, f.out, started)
	// The scorecard keeps the backend's options (an existing service's address): never
	// the credentials in them.
	for k, v := range sc.Options {
		sc.Options[k] = a.red.String(v)
	}
	sc.Setup = a.red.String(sc.Setup)
	sc.Sharding = sharding(record)
	record.Record(results, f.out, started, a.red)
	if err := reports.WriteScorecard(dir, sc); err != nil {
		return fail(&exitError{code: exitInternal, msg: err.Error()})
	}
	if err := finishCampaign(f.out, dir, record); err != nil {
		return fail(&exitError{code: exitInternal, msg: err.Error()})
	}
	code := evaluateExit(sc, results, interrupted, !f.shard.Whole())
	page := filepath.Join(dir, reports.ScorecardPage)
	if f.json {
		if err := a.printJSON(evaluateDoc(sc, code, page)); err != nil {
			return &exitError{code: exitInternal, msg: err.Error()}
		}
	} else {
		reports.PrintScorecard(out, sc)
		fmt.Fprintf(out, "scorecard: %s (took %s)\n", page, time.Duration(sc.Seconds*float64(time.Second)).Round(time.Second))
	}
	if interrupted {
		fmt.Fprintln(a.stderr, "fencecheck evaluate: interrupted; the runs that finished are in the scorecard")
	}
	return withCode(code)
}

// evaluateExit: 0 safe with fencing everywhere; 1 fencing or tokens failed somewhere (or
// there is no token to fence with); else 3 when a run failed or the checker did not
// decide, 2 when a run could not be made as asked or the evaluation was interrupted, 4
// when every run was decided and none failed but the fence was not tested. A
// shard (only part of the runs: no verdict on safety) is 0 when its runs completed
// and none showed fencing fail.
func evaluateExit(sc *reports.Scorecard, results []campaign.RunResult, interrupted, shard bool) int {
	if sc.Safe && !interrupted {
		return exitSafe
	}
	if sc.NoToken != "" {
		return exitViolated // not safe with fencing: there is nothing to fence with
	}
	for _, r := range sc.Rows {
		if r.Fenced == judge.CellViolated || r.Tokens == judge.CellBackwards {
			return exitViolated
		}
	}
	code := exitSafe
	for _, r := range results {
		if r.Err != nil && !errors.Is(r.Err, campaign.ErrInterrupted) && !errors.Is(r.Err, campaign.ErrNotInShard) {
			code = worst(code, codeOf(r.Err))
		}
	}
	if interrupted {
		code = worst(code, exitUsage)
	}
	if code == exitSafe && sc.Inconclusive != "" {
		return exitInconclusive // decided, nothing unsafe, and no evidence either
	}
	if code == exitSafe && !shard {
		code = exitInternal // not safe, yet no run failed: a verdict undecided
	}
	return code
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

// errText is an error's message, or "no report" for a run without error or report.
func errText(err error) string {
	if err == nil {
		return "no report"
	}
	return err.Error()
}
