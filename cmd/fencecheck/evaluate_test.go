package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/fencecheck/fencecheck/harness/lease/etcd/etcdtest"
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
		require.Equal(t, "stale writes got through", r.Unfenced, r.Fault)
		require.Equal(t, "held", r.Fenced, r.Fault)
		require.Equal(t, "monotonic", r.Tokens)
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
	require.Equal(t, "held", sc.Rows[0].Native)
}
