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

	"github.com/fencecheck/fencecheck/reports"
	"github.com/fencecheck/fencecheck/scenarios"
)

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
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
		clients  = fs.Int("clients", 0, fmt.Sprintf("number of clients (default %d)", scenarios.DefaultClients))
		ttl      = fs.Duration("ttl", 0, fmt.Sprintf("lease TTL (default %v)", scenarios.DefaultTTL))
		duration = fs.Duration("duration", 0, fmt.Sprintf("least workload time (default %v); the run also waits for its faults to heal", scenarios.DefaultDuration))
		seed     = fs.Int64("seed", 1, "seed of the workload and the fault schedule")
		policy   = fs.String("policy", "", "client policy: trusting (default) or careful (checks its lease by its own clock before writing)")
		members  = fs.Int("members", 0, "lock-service cluster size: etcd 1 (default) or 3, raft 3 (default) or 5")
		keys     = fs.Int("keys", 0, "independent locks and registers; each critical section picks one (seeded). Naive backends with fenced/unfenced/toctou only")
		etcdEPs  = fs.String("etcd-endpoints", "", "comma-separated host:port of an existing etcd cluster to use instead of an embedded one")
		redisAdr = fs.String("redis-addrs", "", "host:port of an existing redis-server for the redis backends, instead of one fencecheck starts (client-side faults only)")
		natsURL  = fs.String("nats-url", "", "nats://host:port of an existing nats-server with JetStream for the nats backend (client-side faults only)")
		pgDSN    = fs.String("postgres-dsn", "", "PostgreSQL server of the postgres resources, e.g. postgres://user:pass@127.0.0.1:5432/db (default $FENCECHECK_POSTGRES_DSN)")
		out      = fs.String("out", "fencecheck-results", "results folder; the run writes DIR/<scenario>/<timestamp>/")
		failOn   = fs.String("fail-on", "register,updates", "properties whose violation makes the exit code 1")
		verbose  = fs.Bool("v", false, "log progress to stderr")
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

	var spec scenarios.Spec
	if *name != "" {
		sc, ok := scenarios.Lookup(*name)
		if !ok {
			fmt.Fprintf(stderr, "fencecheck run: unknown scenario %q (see 'fencecheck list')\n", *name)
			return exitUsage
		}
		spec = sc.Spec
	}
	// Flags given explicitly override the scenario's settings.
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "backend":
			spec.Backend = *backend
		case "resource":
			spec.Resource = *resource
		case "fence":
			spec.Fence = *fence
		case "fault":
			spec.Faults = splitList(*fault)
		case "faults":
			spec.RandomFaults = splitList(*faults)
		case "interval":
			spec.Interval = *interval
		case "clients":
			spec.Clients = *clients
		case "ttl":
			spec.TTL = *ttl
		case "duration":
			spec.Duration = *duration
		case "members":
			spec.Members = *members
		case "keys":
			spec.Keys = *keys
		case "policy":
			spec.Policy = *policy
		case "nats-url":
			spec.NatsURL = *natsURL
		case "redis-addrs":
			spec.RedisAddrs = splitList(*redisAdr)
		case "etcd-endpoints":
			spec.EtcdEndpoints = splitList(*etcdEPs)
			if spec.Backend == "" {
				spec.Backend = "etcd"
			}
		}
	})
	spec.Seed = *seed
	spec.PostgresDSN = *pgDSN // empty: $FENCECHECK_POSTGRES_DSN
	if spec.Clients < 0 || spec.TTL < 0 || spec.Duration < 0 || spec.Members < 0 {
		fmt.Fprintln(stderr, "fencecheck run: --clients, --ttl, --duration and --members must not be negative")
		return exitUsage
	}
	label := spec.Name
	if label == "" {
		label = adhocName(spec)
	}
	// Bad input is reported before anything is written to the results store.
	if _, err := scenarios.Normalize(spec); err != nil {
		fmt.Fprintln(stderr, "fencecheck run:", err)
		return exitUsage
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
	fmt.Fprintf(stdout, "running %s (seed %d) ...\n", label, spec.Seed)
	sched, skipped, random, err := scenarios.Schedule(spec)
	if err != nil {
		fmt.Fprintln(stderr, "fencecheck run:", err)
		return exitUsage
	}
	for _, s := range skipped {
		fmt.Fprintln(stdout, "left out of the schedule:", s)
	}
	if random {
		fmt.Fprint(stdout, sched.String())
	}
	o, err := scenarios.Execute(ctx, spec, scenarios.Options{OutDir: dir, Logger: logger})
	if err != nil {
		fmt.Fprintln(stderr, "fencecheck run:", err)
		if errors.Is(err, scenarios.ErrSpec) {
			return exitUsage
		}
		return exitInternal
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

func adhocName(s scenarios.Spec) string {
	be := orDefault(s.Backend, "naive")
	if s.Members > 1 {
		be = fmt.Sprintf("%s-%d", be, s.Members)
	}
	parts := []string{be, orDefault(s.Resource, "fenced")}
	if s.Fence != "" {
		parts = append(parts, s.Fence)
	}
	switch {
	case len(s.Faults) > 0:
		parts = append(parts, strings.Join(s.Faults, "+"))
	case len(s.RandomFaults) > 0:
		parts = append(parts, "random", strings.Join(s.RandomFaults, "+"))
	default:
		parts = append(parts, "nofault")
	}
	return strings.Join(parts, "-")
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
