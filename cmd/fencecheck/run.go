package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fencecheck/fencecheck/campaign"
	"github.com/fencecheck/fencecheck/internal/term"
	"github.com/fencecheck/fencecheck/judge"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/reports"
	"github.com/fencecheck/fencecheck/spec"
)

// runFlags are `fencecheck run`'s flags.
type runFlags struct {
	scenario, backend, resource, fence, policy, out string
	schedule                                        string
	faults, oldRandom, failOn                       []string
	random, json, verbose                           bool
	interval, ttl, duration, checkTimeout           time.Duration
	clients, members, keys                          int
	seed                                            int64
	options                                         func() map[string]string
}

func (a *app) runCmd() *cobra.Command {
	f := &runFlags{}
	c := &cobra.Command{
		Use:   "run [SCENARIO]",
		Short: "run one scenario, by name or built from flags",
		Long: `Runs one scenario: a catalogue scenario by name ('fencecheck list'), or one built from
--backend, --resource and --fault; flags given with a name override its settings. The run
goes into the results store (--out DIR: DIR/<scenario>/<timestamp>/ with history.json,
verdict.json, report.html and run.log; DIR/<scenario>/latest points at the newest run
with a history), and a summary of the verdicts is printed.

The exit code follows --fail-on: by default only the register and updates properties (the
protected data) decide it; a violated mutex under a pause is expected and fencing is what
makes it harmless.`,
		Example: `  fencecheck run naive-unfenced-pause
  fencecheck run --backend etcd --resource fenced --fault pause,partition
  fencecheck run --backend redis --fault pause --random --duration 10s
  fencecheck run --schedule fencecheck-results/explore/<timestamp>/finding-1/shrunk.json
  fencecheck run naive-postgres-outbox-pause --postgres-dsn postgres://app:PASSWORD@127.0.0.1:5432/app`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageError("want at most one scenario name, got %d arguments", len(args))
			}
			return nil
		},
		ValidArgsFunction: func(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return complete(a.scenarioNames)(nil, nil, toComplete)
		},
		RunE: func(cmd *cobra.Command, args []string) error { return a.run(cmd, f, args) },
	}
	fs := c.Flags()
	fs.StringVar(&f.scenario, "scenario", "", "scenario name from 'fencecheck list' (or give it as the argument)")
	fs.StringVar(&f.backend, "backend", "", "lock backend (default naive)")
	fs.StringVar(&f.resource, "resource", "", "protected resource (default fenced)")
	fs.StringVar(&f.fence, "fence", "", "fence rule: strict (token > stored) or monotonic (token >= stored)")
	fs.StringSliceVar(&f.faults, "fault", nil, "faults, comma-separated: targeted (each strikes the lock holder once), or with --random the kinds of a random schedule")
	fs.BoolVar(&f.random, "random", false, "draw a random schedule of the --fault kinds (or the scenario's) from --seed instead of targeting the holder; verdicts are reported, not expected")
	fs.StringVar(&f.schedule, "schedule", "", "replay a schedule file (what 'fencecheck explore' saves; docs/explore.md): its backend, resource, settings and faults; --seed, --duration and the options given override it")
	fs.StringSliceVar(&f.oldRandom, "faults", nil, "")
	deprecate(fs, "faults", "fault with --random")
	fs.DurationVar(&f.interval, "interval", 0, "mean quiet time between faults of a random schedule (default 2x TTL)")
	fs.IntVar(&f.clients, "clients", 0, fmt.Sprintf("number of clients (default %d)", spec.DefaultClients))
	fs.DurationVar(&f.ttl, "ttl", 0, fmt.Sprintf("lease TTL, %v to %v (default: the backend's, else %v)", spec.MinTTL, spec.MaxTTL, spec.DefaultTTL))
	fs.DurationVar(&f.duration, "duration", 0, fmt.Sprintf("least workload time (default %v); the run also waits for its faults to heal", spec.DefaultDuration))
	seedFlag(fs, &f.seed, "the workload and the fault schedule")
	fs.StringVar(&f.policy, "policy", "", "client policy: trusting (default), careful (checks its lease by its own clock before writing) or heeding (writes no more once its lock client said the lease was lost)")
	fs.IntVar(&f.members, "members", 0, "lock-service cluster size (default: the backend's; e.g. etcd 1 or 3, raft 3 or 5)")
	fs.IntVar(&f.keys, "keys", 0, "independent locks and registers; each critical section picks one (seeded). Backends and resources that serve keys only")
	outFlag(fs, &f.out, defaultOut, "results store; the run writes DIR/<scenario>/<timestamp>/")
	failOnFlag(fs, &f.failOn)
	checkTimeoutFlag(fs, &f.checkTimeout, false)
	jsonFlag(fs, &f.json, "the verdicts")
	verboseFlag(fs, &f.verbose, "log progress to stderr as well as to run.log")
	f.options = a.optionFlags(fs)
	a.completeCommon(c)
	setExitCodes(c, exitCodes{
		exitSafe:         "safe: the protected data held (the properties of --fail-on)",
		exitViolated:     "unsafe: a stale write got through or an update was lost (a property of --fail-on violated)",
		exitUsage:        "the run could not be made as asked: bad input, a missing program or service (with the line that installs it), an unreachable endpoint, a setup error (no acquire was granted: the line names the first error), an interrupt",
		exitInternal:     "fencecheck's own failure: the checkers disagree or timed out, or the run broke",
		exitInconclusive: inconclusiveText,
	})
	return c
}

// runJSON is `run --json`: the check's document, and where the run is.
type runJSON struct {
	checkJSON
	Scenario string `json:"scenario"`
	Seed     int64  `json:"seed"`
	Dir      string `json:"dir,omitempty"`
	Report   string `json:"report,omitempty"`
	// WorkloadSeconds and CheckSeconds are how long the workload and the check took.
	WorkloadSeconds float64 `json:"workload_seconds,omitempty"`
	CheckSeconds    float64 `json:"check_seconds,omitempty"`
}

func (a *app) run(cmd *cobra.Command, f *runFlags, args []string) error {
	ctx := cmd.Context()
	props, err := parseFailOn(f.failOn)
	if err != nil {
		return a.failer(f.json)(err)
	}
	out := a.stdout
	if f.json {
		out = a.stderr // stdout is the JSON document
	}
	fail := a.failer(f.json)
	sp, err := a.runSpec(cmd, f, args)
	if err != nil {
		return fail(err)
	}
	if err := writableDir("--out", f.out); err != nil {
		return fail(err)
	}
	label := a.cat.Label(a.reg, sp)
	// Bad input is reported before anything is written to the results store.
	r, err := spec.Resolve(a.reg, sp)
	if err != nil {
		if f.schedule != "" {
			err = spec.InFile(f.schedule, err)
		}
		return fail(err)
	}
	if why := r.Unavailable(); why != "" {
		return fail(badInput("%s", why))
	}
	// An external etcd decides the TTL it grants: settle it before the schedule is drawn.
	r, note, err := r.SettleTTL(ctx, sp)
	if err != nil {
		return fail(err)
	}
	if note != "" {
		fmt.Fprintln(out, note)
	}
	sched, random := r.Schedule()
	fmt.Fprintf(out, "running %s (seed %d) ...\n", label, r.Spec.Seed)
	for _, s := range r.Spec.Skipped {
		fmt.Fprintln(out, "left out of the schedule:", s)
	}
	if random {
		fmt.Fprint(out, sched.String())
	}
	// A scenario's own properties (Spec.Check) decide the exit beside --fail-on's.
	props = r.Spec.Selection(props)
	c := campaign.Campaign{Registry: a.reg, Store: f.out, CheckTimeout: f.checkTimeout, Select: props, Host: a.host, Redact: a.red}
	if f.verbose {
		c.Log = a.stderr
	}
	res := c.RunResolved(ctx, r, label)
	dir, o, runErr := res.Dir, res.Outcome, res.Err
	if o != nil && errors.Is(runErr, campaign.ErrStore) {
		// The run has its verdicts; only the note of how it ended could not be written.
		fmt.Fprintln(a.stderr, "fencecheck run: warning:", message(runErr))
		runErr = nil
	}
	switch {
	case errors.Is(runErr, campaign.ErrStore):
		// The store passed writableDir: a folder it cannot take now is the machine's
		// (a full disk, a mount gone), not fencecheck's failure.
		runErr = badInput("%s", message(runErr))
	case runErr != nil && ctx.Err() != nil:
		// An interrupt (Ctrl-C, SIGTERM, SIGHUP) is said as one, here and in the run's note.
		msg := message(runErr)
		if !strings.HasPrefix(msg, "interrupted") {
			msg = "interrupted: " + msg
		}
		if !strings.Contains(msg, dir) {
			msg += fmt.Sprintf(" (evidence so far: %s)", dir)
		}
		runErr = badInput("%s", msg)
	}
	if dir != "" {
		if err := reports.WriteStoreIndex(f.out); err != nil {
			fmt.Fprintln(a.stderr, "fencecheck run: warning: store index:", err)
		}
	}
	if runErr != nil {
		return fail(runErr)
	}
	if o.CloseErr != nil {
		for _, w := range strings.Split(o.CloseErr.Error(), "\n") { // one line per problem
			fmt.Fprintln(a.stderr, "fencecheck run: warning:", w)
		}
	}
	code := exitFor(o.Report, props)
	if f.json {
		hist := filepath.Join(dir, reports.HistoryFile)
		doc := runJSON{checkJSON: newCheckJSON(hist, o.Report, code), Scenario: label, Seed: r.Spec.Seed, Dir: dir,
			Report: filepath.Join(dir, reports.ReportFile), WorkloadSeconds: o.Workload.Seconds(), CheckSeconds: o.Check.Seconds()}
		if err := a.printJSON(doc); err != nil {
			return &exitError{code: exitInternal, msg: err.Error()}
		}
		return withCode(code)
	}
	reports.Summary(out, o.History, o.Report)
	fmt.Fprintf(out, "timing: workload %.2f s, check %.3f s\n", o.Workload.Seconds(), o.Check.Seconds())
	fmt.Fprintf(out, "evidence: %s\n", dir)
	fmt.Fprintf(out, "report: %s\n", filepath.Join(dir, reports.ReportFile))
	fmt.Fprintln(out, resultLine(code, o.Report))
	return withCode(code)
}

// runSpec builds the spec a run's flags and argument ask for, checking every name.
func (a *app) runSpec(cmd *cobra.Command, f *runFlags, args []string) (spec.Spec, error) {
	var sp spec.Spec
	if f.schedule != "" {
		return a.scheduleSpec(cmd, f, args)
	}
	name := f.scenario
	if len(args) == 1 {
		if name != "" && name != args[0] {
			return sp, usageError("two scenario names: --scenario %q and %q", name, args[0])
		}
		name = args[0]
	}
	if name != "" {
		sc, ok := a.cat.Lookup(name)
		if !ok {
			return sp, checkName("scenario", name, a.scenarioNames())
		}
		sp = sc.Spec
	}
	// Flags given explicitly override the scenario's settings.
	set := cmd.Flags().Changed
	if set("backend") {
		sp.Backend = f.backend
	}
	if set("resource") {
		sp.Resource = f.resource
	}
	if set("fence") {
		sp.Fence = f.fence
	}
	if set("fault") {
		sp.Faults = trimList(f.faults)
	}
	if f.random {
		sp.RandomFaults, sp.Faults = sp.Faults, nil
		if len(sp.RandomFaults) == 0 {
			return sp, badInput("--random draws a schedule from the fault kinds of --fault (or the scenario's): none given")
		}
	}
	if set("faults") {
		sp.RandomFaults, sp.Faults = trimList(f.oldRandom), nil
	}
	if set("interval") {
		sp.Interval = f.interval
	}
	if set("clients") {
		sp.Clients = f.clients
	}
	if set("ttl") {
		sp.TTL = f.ttl
	}
	if set("duration") {
		sp.Duration = f.duration
	}
	if set("members") {
		sp.Members = f.members
	}
	if set("keys") {
		sp.Keys = f.keys
	}
	if set("policy") {
		sp.Policy = f.policy
	}
	// Backend and resource options (an option names its backend when none is given;
	// an unset one falls back to its environment variable, e.g. the PostgreSQL DSN).
	for k, v := range f.options() {
		if sp.Options == nil {
			sp.Options = map[string]string{}
		}
		sp.Options[k] = v
	}
	sp.Seed = f.seed
	if sp.Clients < 0 || sp.TTL < 0 || sp.Duration < 0 || sp.Members < 0 || sp.Interval < 0 {
		return sp, badInput("--clients, --ttl, --duration, --interval and --members must not be negative")
	}
	if sp.Backend != "" {
		if err := checkName("backend", sp.Backend, a.backendNames()); err != nil {
			return sp, err
		}
	}
	if sp.Resource != "" {
		if err := checkName("resource", sp.Resource, a.resourceNames()); err != nil {
			return sp, err
		}
	}
	for _, fl := range append(append([]string(nil), sp.Faults...), sp.RandomFaults...) {
		if err := checkName("fault", fl, a.faultNames()); err != nil {
			return sp, err
		}
	}
	if sp.Policy != "" {
		if err := checkName("policy", sp.Policy, namesOf(spec.Policies())); err != nil {
			return sp, err
		}
	}
	return sp, nil
}

// scheduleSpec is the spec of run --schedule FILE: the file's, with --seed, --duration
// and the registry options given on top (a secret option is never saved in a file).
// Flags that would change the faults or what runs are refused: the file says them.
func (a *app) scheduleSpec(cmd *cobra.Command, f *runFlags, args []string) (spec.Spec, error) {
	if len(args) > 0 || f.scenario != "" {
		return spec.Spec{}, usageError("--schedule replays a schedule file: give no scenario")
	}
	for _, name := range []string{"fault", "random", "faults", "interval", "backend", "resource", "clients", "ttl", "policy", "keys", "fence"} {
		if cmd.Flags().Changed(name) {
			return spec.Spec{}, usageError("--schedule replays a schedule file as it is: --%s cannot change it (edit the file)", name)
		}
	}
	sp, err := spec.ReadScheduleFile(f.schedule)
	if err != nil {
		return sp, err
	}
	set := cmd.Flags().Changed
	if set("seed") {
		sp.Seed = f.seed
	}
	if set("duration") {
		sp.Duration = f.duration
	}
	if set("members") {
		sp.Members = f.members
	}
	for k, v := range f.options() {
		if sp.Options == nil {
			sp.Options = map[string]string{}
		}
		sp.Options[k] = v
	}
	return sp, nil
}

// resultLine is the last line of a checked run or history: what its exit code says,
// and for an inconclusive one why (models' Why: the checker's own words, which quote a
// client's error escaped).
func resultLine(code int, rep *models.Report) string {
	switch code {
	case exitViolated:
		return "result: UNSAFE: a stale write got through or an update was lost (exit 1)"
	case exitInternal:
		return "result: UNPROVEN: the checker timed out or the checkers disagree (exit 3)"
	case exitInconclusive:
		return term.Sprintf("result: INCONCLUSIVE: %s, so it proves nothing (exit 4)", inconclusiveWhy(rep)) // the why may quote an op's error
	}
	return "result: safe: the protected data held (exit 0)"
}

// inconclusiveWhy is why a report is inconclusive, in a phrase: its outcome's reason, or
// the first inconclusive property's (--fail-on may name tokens or mutex).
func inconclusiveWhy(rep *models.Report) string {
	if _, why := judge.Why(rep); why != "" {
		return why
	}
	for _, r := range rep.Results {
		if r.Verdict == models.Inconclusive && r.Why != "" {
			return fmt.Sprintf("%s: %s", r.Property, r.Why)
		}
	}
	return "a property of --fail-on is inconclusive"
}

// printJSON writes v, the command's one document, to stdout, indented.
func (a *app) printJSON(v any) error {
	a.printed = true
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
