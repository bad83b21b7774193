package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/reports"
	"github.com/fencecheck/fencecheck/scenarios"
)

func cmdEvaluate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("evaluate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		backend  = fs.String("backend", "", "the lock backend to evaluate (see 'fencecheck list'); required")
		etcdEPs  = fs.String("etcd-endpoints", "", "comma-separated host:port of an existing etcd cluster to evaluate instead of an embedded one (client-side faults only)")
		redisAdr = fs.String("redis-addrs", "", "comma-separated host:port of existing redis-servers to evaluate (redis backends: one; redlock: 3 or more) instead of ones fencecheck starts (client-side faults only)")
		natsURL  = fs.String("nats-url", "", "nats://host:port of an existing nats-server with JetStream to evaluate with the nats backend (client-side faults only)")
		faults   = fs.String("fault", "", "comma-separated faults to run (default: every fault that applies to the backend)")
		parallel = fs.Int("parallel", 1, "runs at a time (timing-sensitive faults are most faithful at 1)")
		seed     = fs.Int64("seed", 1, "seed of every run's workload")
		out      = fs.String("out", defaultOut, "results store: runs go to DIR/<scenario>/<timestamp>/, the scorecard to DIR/evaluate-<backend>/<timestamp>/")
		asJSON   = fs.Bool("json", false, "print the scorecard as JSON instead of a table")
		verbose  = fs.Bool("v", false, "log every run's progress to stderr as well as to its run.log")
	)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: fencecheck evaluate --backend NAME [flags]\n\nRuns every fault that applies to a lock backend against an unfenced register, a fenced one\nand the backend's own store (etcd: etcd-txn), and writes a scorecard: may we adopt this\nbackend, and what must our resource do?\nExit 0: safe with fencing under every applicable fault; 1: not safe; 2: bad input; 3: a run\nfailed or the checker timed out.\n\nflags:")
		fs.PrintDefaults()
	}
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "fencecheck evaluate: unexpected arguments %q\n", fs.Args())
		return exitUsage
	}
	endpoints := splitList(*etcdEPs)
	if *backend == "" && len(endpoints) > 0 {
		*backend = "etcd"
	}
	if *backend == "" {
		fmt.Fprintln(stderr, "fencecheck evaluate: --backend is required (see 'fencecheck list')")
		return exitUsage
	}
	if err := checkNames("backend", []string{*backend}, scenarios.BackendNames()); err != nil {
		fmt.Fprintln(stderr, "fencecheck evaluate:", err)
		return exitUsage
	}
	if len(endpoints) > 0 && *backend != "etcd" {
		fmt.Fprintf(stderr, "fencecheck evaluate: --etcd-endpoints is for the etcd backend (got %q)\n", *backend)
		return exitUsage
	}
	if *parallel < 1 || *parallel > 8 {
		fmt.Fprintf(stderr, "fencecheck evaluate: --parallel must be between 1 and 8, got %d\n", *parallel)
		return exitUsage
	}
	// ext points a cell at the existing redis or nats servers, if given.
	redisAddrs := splitList(*redisAdr)
	ext := func(s scenarios.Spec) scenarios.Spec {
		s.RedisAddrs, s.NatsURL = redisAddrs, *natsURL
		if len(redisAddrs) > 0 || *natsURL != "" {
			s.Name = "" // an external server is never the catalogue's run
		}
		return s
	}
	if _, err := scenarios.Normalize(ext(scenarios.CellSpec(*backend, "unfenced", nil, endpoints))); err != nil && (len(redisAddrs) > 0 || *natsURL != "") {
		fmt.Fprintln(stderr, "fencecheck evaluate:", err)
		return exitUsage
	}
	applicable := scenarios.ApplicableFaultsFor(ext(scenarios.CellSpec(*backend, "unfenced", nil, endpoints)))
	chosen := applicable
	if *faults != "" {
		chosen = splitList(*faults)
		if err := checkNames("fault", chosen, scenarios.FaultNames()); err != nil {
			fmt.Fprintln(stderr, "fencecheck evaluate:", err)
			return exitUsage
		}
		for _, f := range chosen {
			if !slices.Contains(applicable, f) {
				_, err := scenarios.Normalize(ext(scenarios.CellSpec(*backend, "unfenced", []string{f}, endpoints)))
				fmt.Fprintf(stderr, "fencecheck evaluate: fault %q does not apply to %s: %v\n", f, *backend, err)
				return exitUsage
			}
		}
	}
	if len(chosen) == 0 {
		fmt.Fprintf(stderr, "fencecheck evaluate: no fault applies to backend %s\n", *backend)
		return exitUsage
	}
	resources := append([]string{"unfenced", "fenced"}, scenarios.NativeResources(*backend)...)

	setup := setupOf(*backend, endpoints, chosen)
	switch {
	case len(redisAddrs) > 0:
		setup = "existing redis-server(s) at " + strings.Join(redisAddrs, ",")
	case *natsURL != "":
		setup = "existing nats-server at " + *natsURL
	}
	sc := &reports.Scorecard{
		Backend: *backend, Endpoints: endpoints, Setup: setup,
		Token: scenarios.TokenSource(*backend), Native: scenarios.NativeResources(*backend),
		Resources: resources, Started: time.Now(), NoToken: scenarios.TokenlessReason(*backend),
	}
	if n, err := scenarios.Normalize(ext(scenarios.CellSpec(*backend, "unfenced", chosen[:1], endpoints))); err == nil {
		sc.TTLNanos = n.TTL.Nanoseconds()
	}
	meaning := map[string]string{}
	for _, f := range scenarios.FaultNames() {
		meaning[f.Name] = f.Meaning
	}
	type job struct {
		row, resource string
		spec          scenarios.Spec
	}
	var jobs []job
	for _, f := range chosen {
		sc.Rows = append(sc.Rows, reports.ScoreRow{Fault: f, Meaning: meaning[f]})
		for _, r := range resources {
			spec := ext(scenarios.CellSpec(*backend, r, []string{f}, endpoints))
			if _, err := scenarios.Normalize(spec); err != nil {
				continue // e.g. a resource that cannot take this fault
			}
			spec.Seed = *seed
			jobs = append(jobs, job{row: f, resource: r, spec: spec})
		}
	}
	name := "evaluate-" + *backend
	if len(endpoints) > 0 || len(redisAddrs) > 0 || *natsURL != "" {
		name += "-external"
	}
	dir, err := reports.NewRunDir(*out, name, sc.Started)
	if err != nil {
		fmt.Fprintln(stderr, "fencecheck evaluate:", err)
		return exitInternal
	}
	fmt.Fprintf(stdout, "evaluate %s: %d faults × %d resources = %d runs (%d at a time); results in %s\n", *backend, len(chosen), len(resources), len(jobs), *parallel, *out)
	var logTo io.Writer
	if *verbose {
		logTo = stderr
	}
	prog := newProgress(stderr, len(jobs))
	results := make([]reports.ScoreRun, len(jobs))
	queue := make(chan int)
	var wg sync.WaitGroup
	for range *parallel {
		wg.Go(func() {
			for i := range queue {
				j := jobs[i]
				label := scenarios.Label(j.spec)
				prog.Start(label)
				res := execute(ctx, j.spec, *out, logTo)
				var run reports.ScoreRun
				if res.Err != nil || res.Outcome == nil || res.Outcome.Report == nil {
					msg := "no report"
					if res.Err != nil {
						msg = res.Err.Error()
					}
					run = reports.ScoreRun{Resource: j.resource, Scenario: label, Outcome: "error", Error: msg}
					prog.Done(label, "ERROR: "+msg)
				} else {
					run = reports.NewScoreRun(j.resource, label, res.Outcome.Report, reports.GapSamples(res.Outcome.History))
					prog.Done(label, runResult(run))
				}
				if res.Dir != "" {
					run.Dir = relTo(*out, res.Dir)
				}
				run.Seconds = res.Took.Seconds()
				results[i] = run
			}
		})
	}
	interrupted := false
	for i := range jobs {
		if ctx.Err() != nil {
			interrupted = true
			results[i] = reports.ScoreRun{Resource: jobs[i].resource, Scenario: scenarios.Label(jobs[i].spec), Outcome: "error", Error: "interrupted before it ran"}
			continue
		}
		select {
		case queue <- i:
		case <-ctx.Done():
			interrupted = true
			results[i] = reports.ScoreRun{Resource: jobs[i].resource, Scenario: scenarios.Label(jobs[i].spec), Outcome: "error", Error: "interrupted before it ran"}
		}
	}
	close(queue)
	wg.Wait()
	prog.Close()
	for i, j := range jobs {
		for k := range sc.Rows {
			if sc.Rows[k].Fault == j.row {
				sc.Rows[k].Runs = append(sc.Rows[k].Runs, results[i])
			}
		}
	}
	sc.Seconds = time.Since(sc.Started).Seconds()
	sc.Judge()
	if err := reports.WriteScorecard(dir, sc); err != nil {
		fmt.Fprintln(stderr, "fencecheck evaluate:", err)
		return exitInternal
	}
	if err := reports.MarkLatest(dir); err != nil {
		fmt.Fprintln(stderr, "fencecheck evaluate:", err)
		return exitInternal
	}
	if err := reports.WriteStoreIndex(*out); err != nil {
		fmt.Fprintln(stderr, "fencecheck evaluate: store index:", err)
		return exitInternal
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(sc); err != nil {
			fmt.Fprintln(stderr, "fencecheck evaluate:", err)
			return exitInternal
		}
	} else {
		sc.Terminal(stdout)
		fmt.Fprintf(stdout, "scorecard: %s (took %s)\n", filepath.Join(dir, reports.ScorecardPage), time.Duration(sc.Seconds*float64(time.Second)).Round(time.Second))
	}
	return evaluateExit(sc, interrupted)
}

// evaluateExit: 0 safe with fencing everywhere; 1 fencing or tokens failed somewhere; 3
// otherwise (a run failed, the checker timed out, or the evaluation was interrupted).
func evaluateExit(sc *reports.Scorecard, interrupted bool) int {
	if sc.Safe && !interrupted {
		return exitSafe
	}
	if sc.NoToken != "" {
		return exitViolated // not safe to adopt with fencing: there is nothing to fence with
	}
	for _, r := range sc.Rows {
		if r.Fenced == "VIOLATED" || r.Tokens == "WENT BACKWARDS" {
			return exitViolated
		}
	}
	return exitInternal
}

func runResult(r reports.ScoreRun) string {
	var vs []string
	for _, p := range models.Properties {
		vs = append(vs, fmt.Sprintf("%s=%s", p, r.Verdicts[p]))
	}
	return fmt.Sprintf("%s (%s), %d stale accepted, %d rejected", r.Outcome, strings.Join(vs, " "), r.StaleAccepted, r.StaleRejected)
}

// setupOf describes the lock service the evaluation ran against.
func setupOf(backend string, endpoints []string, faults []string) string {
	switch {
	case len(endpoints) > 0:
		return "existing etcd cluster at " + strings.Join(endpoints, ",")
	case backend == "etcd":
		for _, f := range faults {
			if scenarios.IsNodeFault(f) {
				return "embedded etcd: 1 member, 3 members for node faults"
			}
		}
		return "embedded etcd, 1 member"
	case backend == "raft":
		return "hashicorp/raft lock service, 3 nodes"
	case scenarios.ServiceSetup(backend) != "":
		return scenarios.ServiceSetup(backend)
	}
	return "naive TTL lock server (" + backend + ")"
}
