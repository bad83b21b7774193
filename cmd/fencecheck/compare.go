package main

import (
	"errors"
	"fmt"
	execlock "github.com/fencecheck/fencecheck/backend/execlock"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fencecheck/fencecheck/campaign"
	"github.com/fencecheck/fencecheck/judge"
	"github.com/fencecheck/fencecheck/reports"
	"github.com/fencecheck/fencecheck/spec"
)

// compareFlags are `fencecheck compare`'s flags.
type compareFlags struct {
	backends      []string
	faults        []string
	parallel      int
	runs          int
	seed          int64
	ttl           time.Duration
	out           string
	json, verbose bool
	checkTimeout  time.Duration
	options       func() map[string]string
	clients       []string
	shard         campaign.Shard
}

// compareJSON is `compare --json`: the comparison (as compare.json has it), its outcome
// and exit code.
type compareJSON struct {
	// Outcome: "complete" (every run decided), "unsafe" (a service with a fencing token
	// let a stale write through the fence, or its tokens went backwards), "incomplete",
	// "inconclusive" (every run decided, but a service's runs lack the evidence).
	Outcome judge.RunOutcome `json:"outcome"`
	Exit    int              `json:"exit"`
	Page    string           `json:"page"`
	*reports.Comparison
}

// defaultCompareParallel: runs of different services at a time on a 2-core machine;
// most of a run is waiting for a fault to heal (six at a time keep about one core busy).
const defaultCompareParallel = 6

// defaultCompareRuns is how many times each cell runs: enough for a median and a spread
// (with the fenced twin, 10 samples of every fault's timing).
const defaultCompareRuns = 5

// estimateCompare is a rough estimate of how long a comparison's jobs take: a run
// without a fault about one TTL (or its grants) and its start, alone; a fault run about
// 4 TTLs (armed after one, healed after two more and a takeover) and its start, parallel
// at a time.
func estimateCompare(jobs []campaign.CompareJob, ttl time.Duration, parallel int) time.Duration {
	const start = 1500 * time.Millisecond
	var alone, rest time.Duration
	for _, j := range jobs {
		if j.Alone() {
			alone += max(ttl, 2*time.Second) + start
		} else {
			rest += 4*ttl + start
		}
	}
	return alone + rest/time.Duration(max(parallel, 1))
}

func (a *app) compareCmd() *cobra.Command {
	f := &compareFlags{}
	c := &cobra.Command{
		Use:   "compare [--backend A,B,...]",
		Short: "which lock should a team adopt? every service's recommended variant on the same terms",
		Long: `Runs the recommended variant of every lock service that can run on this machine (or the
backends given with --backend) on the same terms: one lease TTL, the same client-side faults
(a pause of the holder, a partition of the holder from the lock service), each against an
unfenced and a fenced register, and without a fault for acquire latency and throughput
(those runs alone, nothing beside them). Every cell runs --runs times (default 5, at seeds
--seed, --seed+1, ...), and every figure is shown per fault as the median over the runs with
the least-greatest and n. Writes one comparison into the results store (DIR/compare/<timestamp>/compare.html and
compare.json) and prints it as a table. A backend that cannot run here is listed with why.
An option naming an existing service (--etcd-endpoints, --redis-addrs, ...) adds a row for
it; --client-cmd adds your exec client's row. With --shard I/N it makes only that shard's
runs; 'fencecheck merge' judges the shards' runs into one comparison (docs/sharding.md).`,
		Example: `  fencecheck compare
  fencecheck compare --backend etcd,zookeeper,redis --ttl 2s
  fencecheck compare --etcd-endpoints 127.0.0.1:2379 --json
  fencecheck compare --client-cmd 'python3 my_lock_client.py'
  fencecheck compare --backend zookeeper,redis \
    --client 'kazoo=zookeeper:/usr/bin/python3 kazoo_lock.py' \
    --client 'redis-py=redis:/usr/bin/python3 redis_lock.py'`,
		Args: noArgs("name backends with --backend"),
		RunE: func(cmd *cobra.Command, _ []string) error { return a.compare(cmd, f) },
	}
	fs := c.Flags()
	fs.StringSliceVar(&f.backends, "backend", nil, "backends to compare, comma-separated (default: the recommended variant of every service that can run here)")
	fs.StringSliceVar(&f.faults, "fault", nil, "faults every service runs under, comma-separated (default: "+strings.Join(campaign.CompareFaults(), ",")+"; each must apply to every service)")
	fs.IntVar(&f.parallel, "parallel", defaultCompareParallel, "fault runs at a time, 1 to 8 (the runs at a time are of different services; the runs without a fault run alone)")
	fs.IntVar(&f.runs, "runs", defaultCompareRuns, fmt.Sprintf("how many times each cell runs, 1 to %d (seeds --seed, --seed+1, …; every figure is their median, least–greatest and n)", campaign.MaxCompareRuns))
	seedFlag(fs, &f.seed, "every run's workload")
	fs.DurationVar(&f.ttl, "ttl", campaign.DefaultCompareTTL, fmt.Sprintf("lease TTL of every run, %v to %v (a service that would grant another is skipped)", spec.MinTTL, spec.MaxTTL))
	outFlag(fs, &f.out, defaultOut, "results store: runs go to DIR/<run>/<timestamp>/, the comparison to DIR/compare/<timestamp>/")
	fs.StringVar(&f.out, "store", defaultOut, "")
	_ = fs.MarkHidden("store") // --out's name in some scripts; the same flag
	checkTimeoutFlag(fs, &f.checkTimeout, false)
	jsonFlag(fs, &f.json, "the comparison")
	verboseFlag(fs, &f.verbose, "log every run's progress to stderr as well as to its run.log")
	fs.StringArrayVar(&f.clients, "client", nil, "a lock client of yours as a row of its own, [NAME=]SERVICE:CMD (the exec backend's --client-cmd CMD against --lock-service SERVICE); repeatable")
	shardFlag(fs, &f.shard)
	f.options = a.optionFlags(fs)
	a.completeCommon(c)
	setExitCodes(c, exitCodes{
		exitSafe:         "every run was made and decided, and every service with a fencing token held with fencing (a shard: its runs completed and none showed fencing fail)",
		exitViolated:     "a service with a fencing token let a stale write through the fence, or its tokens went backwards",
		exitUsage:        "bad input, no backend that can run here, a backend asked for (--backend, --client, an external option) that cannot, or an interrupt",
		exitInternal:     "a run failed or the checker did not decide (fencecheck's own failure)",
		exitInconclusive: inconclusiveText + ": a service's fenced runs had no stale write attempted, or one tested nothing",
	})
	return c
}

func (a *app) compare(cmd *cobra.Command, f *compareFlags) error {
	ctx := cmd.Context()
	reg := a.reg
	fail := a.failer(f.json)
	if err := writableDir("--out", f.out); err != nil {
		return fail(err)
	}
	backends := trimList(f.backends)
	for _, b := range backends {
		if err := checkName("backend", b, a.backendNames()); err != nil {
			return fail(err)
		}
	}
	faults := trimList(f.faults)
	for _, fl := range faults {
		if err := checkName("fault", fl, a.faultNames()); err != nil {
			return fail(err)
		}
	}
	if err := checkParallel(f.parallel); err != nil {
		return fail(err)
	}
	if f.ttl <= 0 {
		return fail(badInput("--ttl must be positive, got %v", f.ttl))
	}
	if f.runs < 1 {
		return fail(badInput("--runs must be at least 1, got %d", f.runs))
	}
	out := a.stdout
	if f.json {
		out = a.stderr
	}
	extra, err := clientRows(f.clients)
	if err != nil {
		return fail(err)
	}
	if err := a.checkClientServices(f.clients, extra); err != nil {
		return fail(err)
	}
	cfg := campaign.CompareConfig{Backends: backends, Options: f.options(), TTL: f.ttl, Faults: faults, Seed: f.seed, Extra: extra, Runs: f.runs, Parallel: f.parallel}
	if f.runs > campaign.MaxCompareRuns {
		// Say what it would have cost: the plan of one run per cell, times the runs.
		one := cfg
		one.Runs = 1
		p, err := campaign.PlanCompare(ctx, reg, a.cat, one)
		if err != nil {
			return fail(err)
		}
		est := time.Duration(f.runs) * estimateCompare(p.Jobs, f.ttl, f.parallel)
		return fail(badInput("--runs %d is above the most compare makes, %d: %d runs of each of %d cells would take about %s here; pass --runs 1 to %d",
			f.runs, campaign.MaxCompareRuns, f.runs, len(p.Jobs), est.Round(time.Minute), campaign.MaxCompareRuns))
	}
	plan, err := campaign.PlanCompare(ctx, reg, a.cat, cfg)
	if err != nil {
		return fail(err)
	}
	cmpn := plan.Comparison
	for _, s := range cmpn.Skipped {
		fmt.Fprintf(out, "compare: skipping %s: %s\n", s.Backend, a.red.String(s.Reason))
	}
	record, err := plan.Record(reg, a.cat, f.shard, a.red)
	if err != nil {
		return fail(&exitError{code: exitInternal, msg: err.Error()})
	}
	started := time.Now()
	dir, err := reports.NewRunDir(f.out, plan.Name, started)
	if err != nil {
		return fail(&exitError{code: exitInternal, msg: err.Error()})
	}
	fmt.Fprintf(out, "compare: %d services × (1 run without a fault + %d faults × without/with fencing) × %d run(s) = %d runs at TTL %s (the runs without a fault alone, then %d at a time; about %s); results in %s\n",
		len(cmpn.Services), len(cmpn.Faults), cmpn.Runs, len(plan.Jobs), reports.Duration(cmpn.TTLNanos), f.parallel, estimateCompare(plan.Jobs, f.ttl, f.parallel).Round(time.Minute), f.out)
	torun := len(plan.Jobs)
	if !f.shard.Whole() {
		torun = len(f.shard.Select(len(plan.Jobs)))
		fmt.Fprintf(out, "compare: shard %s of plan %s: %d of the %d runs\n", f.shard, record.ShortID(), torun, len(plan.Jobs))
	}
	var logTo io.Writer
	if f.verbose {
		logTo = a.stderr
	}
	prog := newProgress(a.bar, a.isTerminal(), torun)
	results, interrupted := campaign.Campaign{
		Registry: reg, Catalogue: a.cat, Store: f.out, Parallel: f.parallel, Log: logTo, CheckTimeout: f.checkTimeout, Host: a.host, Redact: a.red, Shard: f.shard, Alone: plan.Alone,
		Started: func(_ int, label string) { prog.Start(label) },
		Finished: func(i int, r campaign.RunResult) {
			switch {
			case errors.Is(r.Err, spec.ErrNoToken):
				prog.Done(r.Label, "refused: "+errText(r.Err))
			case r.Err != nil || r.Outcome == nil || r.Outcome.Report == nil:
				prog.Done(r.Label, "ERROR: "+errText(r.Err))
			default:
				ev := r.Outcome.Report.Evidence
				prog.Done(r.Label, fmt.Sprintf("%s, stale %d/%d/%d (attempted/rejected/accepted), validity gap %s",
					judge.Outcome(r.Outcome.Report), ev.StaleAttempted, ev.StaleRejected, ev.StaleAccepted, reports.Duration(ev.ValidityGapNanos)))
			}
		},
	}.Run(ctx, plan.Specs())
	prog.Close()
	cmpn = plan.Judge(results, f.out, started)
	campaign.RedactComparison(a.red, cmpn)
	cmpn.Sharding = sharding(record)
	record.Record(results, f.out, started, a.red)
	if err := reports.WriteComparison(dir, cmpn); err != nil {
		return fail(&exitError{code: exitInternal, msg: err.Error()})
	}
	if err := finishCampaign(f.out, dir, record); err != nil {
		return fail(&exitError{code: exitInternal, msg: err.Error()})
	}
	code := compareExit(cmpn, results, interrupted, !f.shard.Whole())
	page := filepath.Join(dir, reports.ComparePage)
	if f.json {
		doc := compareJSON{Outcome: cmpn.Outcome(), Exit: code, Page: page, Comparison: cmpn}
		if err := a.printJSON(doc); err != nil {
			return &exitError{code: exitInternal, msg: err.Error()}
		}
	} else {
		reports.PrintComparison(out, cmpn)
		fmt.Fprintf(out, "comparison: %s (took %s)\n", page, time.Duration(cmpn.Seconds*float64(time.Second)).Round(time.Second))
	}
	for _, s := range cmpn.Skipped {
		if s.Asked {
			fmt.Fprintf(a.stderr, "fencecheck compare: %s was asked for and cannot run here, so the comparison is incomplete: %s\n", s.Backend, s.Reason)
		}
	}
	if interrupted {
		fmt.Fprintln(a.stderr, "fencecheck compare: interrupted; the runs that finished are in the comparison")
	}
	return withCode(code)
}

// clientRows turns each --client [NAME=]SERVICE:CMD into a row of the exec backend
// (named exec-NAME, or exec-2, exec-3, … by position).
func clientRows(values []string) ([]campaign.CompareRow, error) {
	var rows []campaign.CompareRow
	for i, v := range values {
		name := fmt.Sprintf("%d", i+2)
		rest := v
		if n, r, ok := strings.Cut(v, "="); ok && !strings.ContainsAny(n, " :/") {
			name, rest = n, r
		}
		service, cmd, ok := strings.Cut(rest, ":")
		service, cmd = strings.TrimSpace(service), strings.TrimSpace(cmd)
		if !ok || service == "" || cmd == "" || strings.Contains(service, " ") {
			return nil, badInput("--client %q: want [NAME=]SERVICE:CMD, e.g. kazoo=zookeeper:'python3 kazoo_lock.py'", v)
		}
		rows = append(rows, campaign.CompareRow{
			Name: "exec-" + name, Backend: "exec",
			Options: map[string]string{execlock.OptionClientCmd: cmd, execlock.OptionLockService: service},
		})
	}
	return rows, nil
}

// checkClientServices refuses a --client row whose SERVICE is no lock service: an
// unknown name is a mistake in the command line (exit 2 before anything runs), not a
// service that cannot run here, which compare skips.
func (a *app) checkClientServices(values []string, rows []campaign.CompareRow) error {
	var services []string
	for _, n := range a.backendNames() {
		if n != execlock.Name {
			services = append(services, n)
		}
	}
	for i, r := range rows {
		svc := r.Options[execlock.OptionLockService]
		if !slices.Contains(services, svc) {
			return badInput("--client %q: unknown lock service %q%s (a backend from 'fencecheck list' other than exec)", values[i], svc, didYouMean(svc, services))
		}
	}
	return nil
}

// compareExit: 1 when a service with a fencing token was unsafe with fencing (a
// service without a token is a finding of the comparison, not a failure of it); else 3
// when a run failed or the checker did not decide, 2 when a run or a backend asked for could not be made as
// asked or the comparison was interrupted; 4 when every run was decided but a service's
// runs lack the evidence (judge.VerdictInconclusive); else 0. A shard (or a partial merge: only
// part of the runs, so no service's verdict is complete) is 0 when its runs completed
// and none showed fencing fail.
func compareExit(c *reports.Comparison, results []campaign.RunResult, interrupted, shard bool) int {
	if c.Outcome() == judge.OutcomeUnsafe {
		return exitViolated
	}
	code := exitSafe
	for _, r := range results {
		if r.Err != nil && !errors.Is(r.Err, campaign.ErrInterrupted) && !errors.Is(r.Err, campaign.ErrNotInShard) && !errors.Is(r.Err, spec.ErrNoToken) {
			code = worst(code, codeOf(r.Err))
		}
	}
	if interrupted {
		code = worst(code, exitUsage)
	}
	for _, s := range c.Skipped {
		if s.Asked { // a backend asked for could not run as asked
			code = worst(code, exitUsage)
		}
	}
	if code == exitSafe && !c.Complete && !shard {
		code = exitInternal // no run failed, yet a verdict is undecided
	}
	if code == exitSafe && c.Outcome() == judge.OutcomeInconclusive {
		code = exitInconclusive
	}
	return code
}
