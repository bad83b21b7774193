package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/harness/builtin"
	"github.com/fencecheck/fencecheck/reports"
	"github.com/fencecheck/fencecheck/spec"
	"github.com/fencecheck/fencecheck/trial"
)

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	reg, cat := builtin.Registry(), builtin.Catalogue()
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		name     = fs.String("scenario", "", "scenario name from 'fencecheck list' (or give it as the argument)")
		backend  = fs.String("backend", "", "lock backend (default naive)")
		resource = fs.String("resource", "", "protected resource (default fenced)")
		fence    = fs.String("fence", "", "fence rule: strict (token > stored) or monotonic (token >= stored)")
		fault    = fs.String("fault", "", "comma-separated targeted faults, e.g. pause or delay")
		faults   = fs.String("faults", "", "comma-separated fault kinds for a random schedule drawn from --seed, e.g. pause,partition,skew")
		interval = fs.Duration("interval", 0, "mean quiet time between faults of a random schedule (default 2x TTL)")
		clients  = fs.Int("clients", 0, fmt.Sprintf("number of clients (default %d)", spec.DefaultClients))
		ttl      = fs.Duration("ttl", 0, fmt.Sprintf("lease TTL (default %v)", spec.DefaultTTL))
		duration = fs.Duration("duration", 0, fmt.Sprintf("least workload time (default %v); the run also waits for its faults to heal", spec.DefaultDuration))
		seed     = seedFlag(fs, "the workload and the fault schedule")
		policy   = fs.String("policy", "", "client policy: trusting (default) or careful (checks its lease by its own clock before writing)")
		members  = fs.Int("members", 0, "lock-service cluster size: etcd 1 (default) or 3, raft 3 (default) or 5")
		keys     = fs.Int("keys", 0, "independent locks and registers; each critical section picks one (seeded). Naive backends with fenced/unfenced/toctou only")
		out      = outFlag(fs, defaultOut, "results folder; the run writes DIR/<scenario>/<timestamp>/")
		failOn   = fs.String("fail-on", "register,updates", "properties whose violation makes the exit code 1")
		verbose  = verboseFlag(fs, "log progress to stderr")
		options  = optionFlags(fs, reg)
	)
	if code, done := parseFlags(fs, args); done {
		return code
	}
	props, err := parseFailOn(*failOn)
	if err != nil {
		fmt.Fprintln(stderr, "fencecheck run:", err)
		return exitUsage
	}
	if fs.NArg() > 1 {
		fmt.Fprintf(stderr, "fencecheck run: want at most one scenario name, got %q\n", fs.Args())
		return exitUsage
	}
	if fs.NArg() == 1 {
		if *name != "" && *name != fs.Arg(0) {
			fmt.Fprintf(stderr, "fencecheck run: two scenario names: --scenario %q and %q\n", *name, fs.Arg(0))
			return exitUsage
		}
		*name = fs.Arg(0)
	}

	var sp spec.Spec
	if *name != "" {
		sc, ok := cat.Lookup(*name)
		if !ok {
			fmt.Fprintf(stderr, "fencecheck run: unknown scenario %q (see 'fencecheck list')\n", *name)
			return exitUsage
		}
		sp = sc.Spec
	}
	// Flags given explicitly override the scenario's settings.
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "backend":
			sp.Backend = *backend
		case "resource":
			sp.Resource = *resource
		case "fence":
			sp.Fence = *fence
		case "fault":
			sp.Faults = splitList(*fault)
		case "faults":
			sp.RandomFaults = splitList(*faults)
		case "interval":
			sp.Interval = *interval
		case "clients":
			sp.Clients = *clients
		case "ttl":
			sp.TTL = *ttl
		case "duration":
			sp.Duration = *duration
		case "members":
			sp.Members = *members
		case "keys":
			sp.Keys = *keys
		case "policy":
			sp.Policy = *policy
		}
	})
	// Backend and resource options (an option names its backend when none is given;
	// an unset one falls back to its environment variable, e.g. the PostgreSQL DSN).
	for k, v := range options() {
		if sp.Options == nil {
			sp.Options = map[string]string{}
		}
		sp.Options[k] = v
	}
	sp.Seed = *seed
	if sp.Clients < 0 || sp.TTL < 0 || sp.Duration < 0 || sp.Members < 0 {
		fmt.Fprintln(stderr, "fencecheck run: --clients, --ttl, --duration and --members must not be negative")
		return exitUsage
	}
	label := cat.Label(reg, sp)
	// Bad input is reported before anything is written to the results store.
	r, err := spec.Resolve(reg, sp)
	if err != nil {
		fmt.Fprintln(stderr, "fencecheck run:", err)
		return exitUsage
	}
	// An external etcd decides the TTL it grants: settle it before the schedule is drawn.
	r, note, err := r.SettleTTL(ctx, sp)
	if err != nil {
		fmt.Fprintln(stderr, "fencecheck run:", err)
		return exitUsage
	}
	if note != "" {
		fmt.Fprintln(stdout, note)
	}
	dir, err := reports.NewRunDir(*out, label, time.Now())
	if err != nil {
		fmt.Fprintln(stderr, "fencecheck run:", err)
		return exitInternal
	}
	logFile, err := os.Create(filepath.Join(dir, reports.RunLog))
	if err != nil {
		fmt.Fprintln(stderr, "fencecheck run:", err)
		return exitInternal
	}
	defer logFile.Close()
	var logTo slog.Handler = slog.NewTextHandler(logFile, nil)
	if *verbose {
		logTo = slog.NewMultiHandler(logTo, slog.NewTextHandler(stderr, nil))
	}
	logger := slog.New(logTo)
	// latest points at this run whatever its end: its folder holds the evidence.
	defer func() { _ = reports.MarkLatest(dir) }()
	fmt.Fprintf(stdout, "running %s (seed %d) ...\n", label, r.Spec.Seed)
	for _, line := range r.Spec.Skipped {
		fmt.Fprintln(stdout, "left out of the schedule:", line)
	}
	if sched, random := r.Schedule(); random {
		fmt.Fprint(stdout, sched.String())
	}
	o, err := trial.Execute(ctx, r, trial.Options{Dir: dir, Logger: logger})
	if err != nil {
		fmt.Fprintln(stderr, "fencecheck run:", err)
		if errors.Is(err, spec.ErrSpec) {
			return exitUsage
		}
		return exitInternal
	}
	if o.CloseErr != nil {
		for _, w := range strings.Split(o.CloseErr.Error(), "\n") { // one line per problem
			fmt.Fprintln(stderr, "fencecheck run: warning:", w)
		}
	}
	reports.Summary(stdout, o.History, o.Report)
	fmt.Fprintf(stdout, "timing: workload %.2f s, check %.3f s\n", o.Workload.Seconds(), o.Check.Seconds())
	fmt.Fprintf(stdout, "evidence: %s\n", dir)
	fmt.Fprintf(stdout, "report: %s\n", filepath.Join(dir, reports.ReportFile))
	code := exitFor(o.Report, props)
	fmt.Fprintln(stdout, resultLine(code))
	return code
}

func resultLine(code int) string {
	switch code {
	case exitViolated:
		return "result: UNSAFE: a stale write got through or an update was lost (exit 1)"
	case exitInternal:
		return "result: UNPROVEN: the checker timed out (exit 3)"
	}
	return "result: safe: the protected data held (exit 0)"
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
