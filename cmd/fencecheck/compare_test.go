package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/backend/etcd/etcdtest"
	"github.com/fencecheck/fencecheck/campaign"
	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/harness/proc"
	"github.com/fencecheck/fencecheck/harness/proc/proctest"
	"github.com/fencecheck/fencecheck/judge"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/reports"
)

// compare of three embedded services at --runs 2: every row has a verdict and its
// figures at the common TTL, every cell its two runs at the recorded seeds, each figure
// its median, least, greatest and n over them, and each run's figures are what the
// checker gives on that run's history.json in the store. At the default TTL: at 1 s,
// an etcd run without a fault came out unsafe on a machine at load 30 (a lease that
// outlived a late renewal), and every row must be safe here.
func TestCompareFiguresMatchHistories(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 42 runs of three lock services")
	}
	proctest.SkipInBareStage(t) // the longest test here (two minutes); three embedded services
	t.Parallel()
	out := t.TempDir()
	code, stdout, stderr := run(t, "compare", "--backend", "naive,raft,etcd", "--runs", "2", "--seed", "7", "--parallel", "3", "--json", "--out", out)
	require.Equal(t, exitSafe, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)

	var doc compareJSON
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc))
	require.Equal(t, judge.RunOutcome("complete"), doc.Outcome)
	require.FileExists(t, doc.Page)
	require.Equal(t, campaign.DefaultCompareTTL.Nanoseconds(), doc.TTLNanos)
	require.Equal(t, campaign.CompareFaults(), doc.Faults)
	require.Positive(t, doc.Machine.CPUs)
	require.Equal(t, 2, doc.Runs)
	require.Equal(t, []int64{7, 8}, doc.Seeds)
	require.Equal(t, 3, doc.Parallel)
	names := []string{}
	for _, s := range doc.Services {
		names = append(names, s.Name)
	}
	require.Equal(t, []string{"naive", "raft", "etcd"}, names)
	// The rows carry what the runs' histories say of the service: etcd's server version
	// (Maintenance Status), its client module and the TTL its leases were granted.
	etcdRow := doc.Services[2]
	require.Regexp(t, `^etcd 3\.\d+\.\d+`, etcdRow.ServerVersion)
	require.Regexp(t, `^go\.etcd\.io/etcd/client/v3`, etcdRow.ClientLibrary)
	require.Equal(t, doc.TTLNanos, etcdRow.GrantedTTLNanos)
	require.Contains(t, etcdRow.Paragraph, "For this result to hold in production, set what the runs relied on: a session lease TTL")

	// The figures of a run are models.Check's on its history.
	checkRun := func(svc string, r judge.CompareRun) {
		t.Helper()
		require.NotEmpty(t, r.Dir, "%s %s: no run folder", svc, r.Scenario)
		require.Equal(t, doc.TTLNanos, r.TTLNanos, "%s %s: not at the common TTL", svc, r.Scenario)
		h, err := history.ReadFile(filepath.Join(out, r.Dir, reports.HistoryFile))
		require.NoError(t, err)
		require.Equal(t, doc.TTLNanos/1e6, h.Run.TTLms, "%s %s: the history's TTL", svc, r.Scenario)
		rep, err := models.Check(context.Background(), h, models.Options{PorcupineBudget: models.NoPorcupine})
		require.NoError(t, err)
		ev := rep.Evidence
		require.Equal(t, judge.Outcome(rep), r.Outcome, "%s %s", svc, r.Scenario)
		require.Equal(t, ev.StaleAttempted, r.StaleAttempted, "%s %s", svc, r.Scenario)
		require.Equal(t, ev.StaleRejected, r.StaleRejected, "%s %s", svc, r.Scenario)
		require.Equal(t, ev.StaleAccepted, r.StaleAccepted, "%s %s", svc, r.Scenario)
		require.Equal(t, ev.ValidityGapNanos, r.ValidityGapNanos, "%s %s", svc, r.Scenario)
		require.Equal(t, ev.LongestNoAcceptedWriteNanos, r.LongestNoAcceptedWriteNanos, "%s %s", svc, r.Scenario)
		require.Equal(t, ev.NoticeDelayNanos, r.NoticeDelayNanos, "%s %s", svc, r.Scenario)
		require.Equal(t, ev.NeverNoticed, r.NeverNoticed, "%s %s", svc, r.Scenario)
		require.Equal(t, ev.TakeoverNanos, r.TakeoverNanos, "%s %s", svc, r.Scenario)
		require.Equal(t, ev.OvershootNanos, r.OvershootNanos, "%s %s", svc, r.Scenario)
		require.Equal(t, ev.Estimated, r.Estimated, "%s %s", svc, r.Scenario)
		require.Equal(t, ev.AcquireP50Nanos, r.AcquireP50Nanos, "%s %s", svc, r.Scenario)
		require.Equal(t, ev.GrantsPerSecond, r.GrantsPerSecond, "%s %s", svc, r.Scenario)
	}
	for _, s := range doc.Services {
		require.Equal(t, judge.VerdictSafe, s.Verdict, s.Name)
		require.NotEmpty(t, s.Paragraph, s.Name)
		require.NotEmpty(t, s.Version, s.Name)
		require.Len(t, s.Baseline, 2, s.Name)
		var p50 []int64
		for k, b := range s.Baseline {
			checkRun(s.Name, b)
			require.Equal(t, doc.Seeds[k], b.Seed, s.Name)
			require.Equal(t, judge.OutcomeSafe, b.Outcome, "%s: the run without a fault", s.Name)
			require.Positive(t, b.Grants, s.Name)
			p50 = append(p50, b.AcquireP50Nanos)
		}
		require.Equal(t, judge.SpreadOf(p50), s.Latency.AcquireP50, "%s: the latency is the spread of its runs'", s.Name)
		require.Len(t, s.Faults, len(doc.Faults), s.Name)
		for _, f := range s.Faults {
			require.Len(t, f.Unfenced, 2, "%s %s", s.Name, f.Fault)
			require.Len(t, f.Fenced, 2, "%s %s", s.Name, f.Fault)
			var gaps []int64
			for k := range 2 {
				u, fe := f.Unfenced[k], f.Fenced[k]
				checkRun(s.Name, u)
				checkRun(s.Name, fe)
				require.Equal(t, doc.Seeds[k], u.Seed)
				require.NotEqual(t, u.Dir, f.Unfenced[1-k].Dir, "each run has a folder of its own")
				// The faults are deterministic: the holder is struck and a stale write is
				// attempted on every run, let through without fencing and refused with it.
				require.Positive(t, fe.StaleRejected, "%s %s", s.Name, f.Fault)
				require.Positive(t, u.ValidityGapNanos, "%s %s", s.Name, f.Fault)
				require.Positive(t, u.FaultNanos, "%s %s", s.Name, f.Fault)
				gaps = append(gaps, u.ValidityGapNanos, fe.ValidityGapNanos)
			}
			require.Equal(t, "stale writes got through", f.UnfencedWord, "%s %s", s.Name, f.Fault)
			require.Equal(t, "held", f.FencedWord, "%s %s", s.Name, f.Fault)
			require.Equal(t, judge.SpreadOf(gaps), f.Figures.ValidityGap, "%s %s: the fenced twin counts", s.Name, f.Fault)
			require.Equal(t, 4, f.Figures.Runs, "%s %s", s.Name, f.Fault)
			require.Equal(t, 4, f.Figures.FaultLength.N, "%s %s", s.Name, f.Fault)
			if s.Name == "raft" { // its leases keep their end (harness.Expiring): every holder recorded it
				require.Equal(t, f.Figures.Superseded, f.Figures.Overshoot.N, "%s %s", s.Name, f.Fault)
			}
		}
		require.NotEmpty(t, s.Takeover.Fault, s.Name)
		require.Contains(t, s.Paragraph, "`fencecheck evaluate --backend "+s.Backend+"`", s.Name)
	}
	// No process id or absolute path in what compare writes.
	for _, f := range []string{reports.CompareJSON, reports.ComparePage} {
		b, err := os.ReadFile(filepath.Join(out, campaign.CompareName, "latest", f))
		require.NoError(t, err)
		require.NotContains(t, string(b), "/tmp/", f)
		require.NotRegexp(t, `(?i)\bpid\b`, string(b), f)
		require.NotContains(t, string(b), out, f)
	}
	// compare.json in the store is the printed document, and both match the schema.
	saved, err := reports.ReadComparison(filepath.Join(out, campaign.CompareName, "latest", reports.CompareJSON))
	require.NoError(t, err)
	require.Equal(t, doc.Services[0].Paragraph, saved.Services[0].Paragraph)
	schema := loadSchema(t, "../../docs/compare.schema.json")
	require.Empty(t, schema.validate(readJSON(t, filepath.Join(out, campaign.CompareName, "latest", reports.CompareJSON))))
	var printed map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &printed))
	require.Empty(t, schema.validate(printed))
	require.FileExists(t, filepath.Join(out, reports.StoreIndex))
}

// A password given in a DSN, a process id and an absolute path appear in neither
// compare.json nor the page, even when the runs against that DSN fail. At a 1 s TTL:
// what is written does not depend on it, and the test runs alone (t.Setenv).
func TestCompareWritesNoSecret(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a comparison")
	}
	t.Setenv(proc.HideEnv, "all") // naive only; the server backends are skipped
	out := t.TempDir()
	const password = "s3cretPw77"
	dsn := "postgres://fc:" + password + "@127.0.0.1:1/fc?sslmode=disable"
	_, stdout, stderr := run(t, "compare", "--backend", "naive,postgres-advisory", "--postgres-lock-dsn", dsn, "--fault", "pause", "--ttl", "1s", "--runs", "1", "--out", out)
	require.NotContains(t, stdout+stderr, password)
	for _, f := range []string{reports.CompareJSON, reports.ComparePage} {
		b, err := os.ReadFile(filepath.Join(out, campaign.CompareName, "latest", f))
		require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
		require.NotContains(t, string(b), password, f)
		require.NotContains(t, string(b), "/tmp/", f)
		require.NotRegexp(t, `(?i)\bpid\b`, string(b), f)
	}
}

// Bad input: one line, exit 2, with a suggestion for a near name.
func TestCompareBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown backend", []string{"compare", "--backend", "nope"}, `unknown backend "nope" (see 'fencecheck list')`},
		{"near backend", []string{"compare", "--backend", "etcdd"}, `unknown backend "etcdd"; did you mean "etcd"?`},
		{"near fault", []string{"compare", "--fault", "pase"}, `did you mean "pause"?`},
		{"fault that does not apply", []string{"compare", "--backend", "naive", "--fault", "leader-isolation"}, `fault "leader-isolation" does not apply to naive`},
		{"ttl", []string{"compare", "--ttl", "0s"}, "--ttl must be positive"},
		{"ttl etcd refuses", []string{"compare", "--backend", "etcd", "--ttl", "1500ms"}, "no backend to compare can run here (etcd: etcd leases are whole seconds"},
		{"option of a backend not compared", []string{"compare", "--backend", "naive", "--etcd-endpoints", "127.0.0.1:1"}, "--etcd-endpoints is for the etcd backend, which is not compared"},
		{"exec without a client", []string{"compare", "--backend", "exec"}, "backend exec needs --client-cmd"},
		{"parallel", []string{"compare", "--parallel", "0"}, "--parallel"},
		{"no runs", []string{"compare", "--runs", "0"}, "--runs must be at least 1, got 0"},
		{"negative runs", []string{"compare", "--runs", "-1"}, "--runs must be at least 1, got -1"},
		{"too many runs", []string{"compare", "--backend", "naive", "--runs", "500"}, "--runs 500 is above the most compare makes, 50: 500 runs of each of 7 cells would take about"},
		{"client without a service", []string{"compare", "--client", "python3 x.py"}, `--client "python3 x.py": want [NAME=]SERVICE:CMD`},
		{"client with an empty command", []string{"compare", "--client", "kazoo=zookeeper:"}, `--client "kazoo=zookeeper:": want [NAME=]SERVICE:CMD`},
		{"client of an unknown service", []string{"compare", "--backend", "naive", "--client", "n=navie:true"}, `--client "n=navie:true": unknown lock service "navie"; did you mean "naive"?`},
		{"client of exec", []string{"compare", "--backend", "naive", "--client", "n=exec:true"}, `--client "n=exec:true": unknown lock service "exec"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := run(t, tc.args...)
			require.Equal(t, exitUsage, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			require.Contains(t, stderr, tc.want)
			require.NotContains(t, stderr, "panic")
			require.Len(t, strings.Split(strings.TrimSpace(stderr), "\n"), 1, stderr)
		})
	}
}

// A backend whose program is missing is skipped with its one line; with nothing left
// to compare the command ends with exit 2 and runs nothing.
func TestCompareMissingProgram(t *testing.T) {
	t.Setenv(proc.HideEnv, "redis-server")
	out := t.TempDir()
	code, stdout, stderr := run(t, "compare", "--backend", "redis,redlock", "--out", out)
	require.Equal(t, exitUsage, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	require.Len(t, strings.Split(strings.TrimSpace(stderr), "\n"), 1, stderr)
	require.Contains(t, stderr, "no backend to compare can run here (redis: redis-server not found (hidden by FENCECHECK_HIDE_PROGRAMS): apt-get install redis-server; redlock: redis-server not found")
	entries, err := os.ReadDir(out)
	require.NoError(t, err)
	require.Empty(t, entries, "nothing runs")

	p, err := campaign.PlanCompare(context.Background(), newApp(nil, io.Discard, io.Discard).reg, nil, campaign.CompareConfig{Backends: []string{"naive", "redis"}})
	require.NoError(t, err)
	require.Len(t, p.Comparison.Services, 1)
	require.Equal(t, []judge.SkippedEntry{{Backend: "redis", Reason: "redis-server not found (hidden by FENCECHECK_HIDE_PROGRAMS): apt-get install redis-server", Asked: true}}, p.Comparison.Skipped)
}

// --etcd-endpoints adds a row for the existing cluster beside the one fencecheck starts;
// the row is labelled external and its options are kept.
func TestCompareExternalRow(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd: skipped with -short")
	}
	t.Parallel() // TestMain waits for etcd's goroutines to drain, and checks no server is left
	cluster := etcdtest.StartCluster(t, 1)
	eps := strings.Join(cluster.Endpoints(), ",")
	out := t.TempDir()
	code, stdout, stderr := run(t, "compare", "--backend", "etcd", "--etcd-endpoints", eps, "--fault", "pause", "--runs", "1", "--out", out, "--json")
	require.Equal(t, exitSafe, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	var doc compareJSON
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc))
	require.Len(t, doc.Services, 2)
	local, ext := doc.Services[0], doc.Services[1]
	require.Equal(t, "etcd", local.Name)
	require.Empty(t, local.Options)
	require.Equal(t, "etcd-external", ext.Name)
	require.Equal(t, map[string]string{"etcd-endpoints": eps}, ext.Options)
	require.NotEmpty(t, ext.Facts.External)
	require.Contains(t, ext.Setup, "existing etcd cluster at "+eps)
	for _, s := range doc.Services {
		require.Equal(t, judge.VerdictSafe, s.Verdict, s.Name)
		require.Equal(t, "held", s.Faults[0].FencedWord, s.Name)
	}
}
