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

	"github.com/fencecheck/fencecheck/campaign"
	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/harness/lease/etcd/etcdtest"
	"github.com/fencecheck/fencecheck/harness/proc"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/models/judge"
	"github.com/fencecheck/fencecheck/reports"
)

// compare of three embedded services: every row has a verdict and its figures at the
// common TTL, and each run's figures are what the checker gives on that run's
// history.json in the store.
func TestCompareFiguresMatchHistories(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 21 runs of three lock services")
	}
	t.Parallel()
	out := t.TempDir()
	code, stdout, stderr := run(t, "compare", "--backend", "naive,raft,etcd", "--json", "--out", out)
	require.Equal(t, exitSafe, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)

	var doc compareJSON
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc))
	require.Equal(t, "complete", doc.Outcome)
	require.FileExists(t, doc.Page)
	require.Equal(t, campaign.DefaultCompareTTL.Nanoseconds(), doc.TTLNanos)
	require.Equal(t, campaign.CompareFaults(), doc.Faults)
	require.Positive(t, doc.Machine.CPUs)
	names := []string{}
	for _, s := range doc.Services {
		names = append(names, s.Name)
	}
	require.Equal(t, []string{"naive", "raft", "etcd"}, names)

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
		require.Equal(t, ev.AcquireP50Nanos, r.AcquireP50Nanos, "%s %s", svc, r.Scenario)
		require.Equal(t, ev.GrantsPerSecond, r.GrantsPerSecond, "%s %s", svc, r.Scenario)
	}
	for _, s := range doc.Services {
		require.Equal(t, judge.VerdictSafe, s.Verdict, s.Name)
		require.NotEmpty(t, s.Paragraph, s.Name)
		require.NotEmpty(t, s.Version, s.Name)
		checkRun(s.Name, s.Baseline)
		require.Equal(t, judge.OutcomeSafe, s.Baseline.Outcome, "%s: the run without a fault", s.Name)
		require.Positive(t, s.Baseline.Grants, s.Name)
		require.Len(t, s.Faults, len(doc.Faults), s.Name)
		for _, f := range s.Faults {
			checkRun(s.Name, f.Unfenced)
			checkRun(s.Name, f.Fenced)
			// The faults are deterministic: the holder is struck and a stale write is
			// attempted on every run, let through without fencing and refused with it.
			require.Equal(t, "stale writes got through", f.UnfencedWord, "%s %s", s.Name, f.Fault)
			require.Equal(t, "held", f.FencedWord, "%s %s", s.Name, f.Fault)
			require.Positive(t, f.Fenced.StaleRejected, "%s %s", s.Name, f.Fault)
			require.Positive(t, f.Unfenced.ValidityGapNanos, "%s %s", s.Name, f.Fault)
		}
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
		{"client without a service", []string{"compare", "--client", "python3 x.py"}, `--client "python3 x.py": want [NAME=]SERVICE:CMD`},
		{"client with an empty command", []string{"compare", "--client", "kazoo=zookeeper:"}, `--client "kazoo=zookeeper:": want [NAME=]SERVICE:CMD`},
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
	code, stdout, stderr := run(t, "compare", "--backend", "etcd", "--etcd-endpoints", eps, "--fault", "pause", "--out", out, "--json")
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
