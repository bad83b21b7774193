package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/fencecheck/fencecheck/backend/etcd/etcdtest"
	"github.com/fencecheck/fencecheck/judge"
	"github.com/fencecheck/fencecheck/reports"
)

func TestEvaluateSafe(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	code, stdout, stderr := run(t, "evaluate", "--backend", "naive", "--fault", "pause,delay", "--out", out)
	require.Equal(t, exitSafe, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	for _, w := range []string{
		"scorecard: naive", "verdict: SAFE with fencing",
		"naive is safe to adopt with a fenced resource that uses the lock server's in-memory counter",
		"It is unsafe as a bare lock", "STALE WRITES GOT THROUGH", "held, 1 rejected", "conditions:",
	} {
		require.Contains(t, stdout, w)
	}
	sc, err := reports.ReadScorecard(filepath.Join(out, "evaluate-naive", "latest", "scorecard.json"))
	require.NoError(t, err)
	require.True(t, sc.Safe)
	require.Equal(t, []string{"unfenced", "fenced"}, sc.Resources)
	require.Len(t, sc.Rows, 2)
	for _, r := range sc.Rows {
		require.Len(t, r.Runs, 2)
		require.Equal(t, judge.Cell("stale writes got through"), r.Unfenced, r.Fault)
		require.Equal(t, judge.Cell("held"), r.Fenced, r.Fault)
		require.Equal(t, judge.Cell("monotonic"), r.Tokens)
		require.Positive(t, r.GapMax)
		for _, run := range r.Runs {
			requireRunFolder(t, filepath.Join(out, run.Dir))
		}
	}
	require.FileExists(t, filepath.Join(out, "evaluate-naive", "latest", "scorecard.html"))
}

// The naive lock server's in-memory counter restarts after a crash: tokens go backwards,
// so the backend is not safe even with fencing (exit 1).
func TestEvaluateUnsafe(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	code, stdout, stderr := run(t, "evaluate", "--backend", "naive", "--fault", "crash", "--out", out, "--json")
	require.Equal(t, exitViolated, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	require.Contains(t, stdout, `"safe": false`)
	require.Contains(t, stdout, "tokens went backwards or were reused")
}

// --etcd-endpoints evaluates an existing cluster: client-side faults only, against the
// unfenced and fenced registers and etcd itself (etcd-txn).
func TestEvaluateExternalEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd: skipped with -short")
	}
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() {
		// etcd's goroutines take a moment to drain after its close.
		deadline := time.Now().Add(15 * time.Second)
		for goleak.Find(ignore) != nil && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
	})
	cluster := etcdtest.StartCluster(t, 1)
	out := t.TempDir()
	eps := strings.Join(cluster.Endpoints(), ",")
	code, stdout, stderr := run(t, "evaluate", "--etcd-endpoints", eps, "--fault", "pause", "--out", out)
	require.Equal(t, exitSafe, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	require.Contains(t, stdout, "existing etcd cluster at "+eps)
	require.Contains(t, stdout, "the lock key's CreateRevision")
	require.Contains(t, stdout, "The backend-native etcd-txn resource held")
	sc, err := reports.ReadScorecard(filepath.Join(out, "evaluate-etcd-external", "latest", "scorecard.json"))
	require.NoError(t, err)
	require.Equal(t, []string{"unfenced", "fenced", "etcd-txn"}, sc.Resources)
	require.Len(t, sc.Rows, 1)
	require.Len(t, sc.Rows[0].Runs, 3)
	require.Equal(t, judge.Cell("held"), sc.Rows[0].Native)
}

// Against an etcd server started on its own with its defaults (Debian's etcd-server,
// 1000 ms election timeout): it grants at least 2 s leases, so an explicit --ttl 1s is
// refused in one line and the default runs with the granted 2 s, which the scorecard
// reports.
func TestExternalEtcdGrantedTTL(t *testing.T) {
	if testing.Short() {
		t.Skip("runs against an etcd server process: skipped with -short")
	}
	// Parallel first: a server started before it would live through the sequential
	// tests, whose checks for left-over processes would see it.
	t.Parallel()
	x := etcdtest.StartExternal(t)
	want := "this cluster grants at least 2s leases; use --ttl 2s"
	for _, args := range [][]string{
		{"run", "--etcd-endpoints", x.Endpoint, "--ttl", "1s", "--fault", "pause", "--out", t.TempDir()},
		{"evaluate", "--etcd-endpoints", x.Endpoint, "--ttl", "1s", "--out", t.TempDir()},
	} {
		code, stdout, stderr := run(t, args...)
		require.Equal(t, exitUsage, code, "%v\nstdout:\n%s\nstderr:\n%s", args, stdout, stderr)
		require.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
		require.Contains(t, stderr, want)
	}

	out := t.TempDir()
	code, stdout, stderr := run(t, "evaluate", "--etcd-endpoints", x.Endpoint, "--fault", "pause", "--out", out)
	require.Equal(t, exitSafe, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	require.Contains(t, stdout, "grants at least 2s leases (asked for the default 1s): running with TTL 2s")
	require.Contains(t, stdout, "(TTL 2.00 s)")
	require.NotContains(t, stdout, "TTL 1.00 s")
	sc, err := reports.ReadScorecard(filepath.Join(out, "evaluate-etcd-external", "latest", "scorecard.json"))
	require.NoError(t, err)
	require.Equal(t, (2 * time.Second).Nanoseconds(), sc.TTLNanos)
	require.Len(t, sc.Rows, 1)
	for _, r := range sc.Rows[0].Runs {
		require.Empty(t, r.Error)
		// A validity gap from a 2 s lease paused for twice that: well above the few ms
		// that faults timed from a 1 s TTL left.
		require.Greater(t, r.ValidityGapNanos, (250 * time.Millisecond).Nanoseconds(), r.Resource)
	}
}
