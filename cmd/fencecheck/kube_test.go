package main

// The kube-lease runs go against a real kube-apiserver fencecheck starts (built by
// backend/kubelease/apiserver/build.sh; skipped with one line without it).

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/backend/kubelease"
	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/harness/proc"
)

func TestRunKubeLease(t *testing.T) {
	for _, tc := range []struct {
		backend, resource, fault string
		code                     int
		want                     string
	}{
		{"kube-lease", "unfenced", "pause", exitViolated, "result: UNSAFE"},
		{"kube-lease", "fenced", "pause", exitSafe, "result: safe"},
		{"kube-lease", "fenced", "node-pause", exitSafe, "SIGSTOP to node 0 (pid "},
		{"kube-lease-rv", "fenced", "crash", exitSafe, "SIGKILL to node 0 (pid "},
	} {
		t.Run(strings.Join([]string{tc.backend, tc.resource, tc.fault}, "-"), func(t *testing.T) {
			needBackend(t, kubelease.Name)
			t.Parallel()
			out := t.TempDir()
			code, stdout, stderr := run(t, "run", "--out", out, "--backend", tc.backend, "--resource", tc.resource, "--fault", tc.fault)
			require.Equal(t, tc.code, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			require.Contains(t, stdout, tc.want)
			files, err := filepath.Glob(filepath.Join(out, "*", "2*", "history.json"))
			require.NoError(t, err)
			require.Len(t, files, 1)
			h, err := history.ReadFile(files[0])
			require.NoError(t, err)
			settings, ok := h.Run.Extra["backend_settings"].(map[string]any)
			require.True(t, ok, "client-go's timing is not in the history")
			require.EqualValues(t, 1000, settings["lease_duration_ms"])
			require.EqualValues(t, 666, settings["renew_deadline_ms"])
			require.EqualValues(t, 133, settings["retry_period_ms"])
			for _, f := range []string{"kube-apiserver.log", "etcd.log"} {
				require.FileExists(t, filepath.Join(filepath.Dir(files[0]), f))
			}
		})
	}
}

// The scorecard end to end: every applicable fault, without and with fencing. (That no
// kube-apiserver outlives it is TestMain's check: a test that runs beside others cannot
// look at the whole process tree.)
func TestEvaluateKubeLease(t *testing.T) {
	needBackend(t, kubelease.Name)
	t.Parallel()
	out := t.TempDir()
	code, stdout, stderr := run(t, "evaluate", "--backend", "kube-lease", "--out", out)
	require.Equal(t, exitSafe, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	require.Contains(t, stdout, "verdict: SAFE with fencing")
	for _, f := range []string{"pause", "pause-before-read", "delay", "partition", "node-pause", "crash"} {
		require.Regexp(t, `(?m)^`+f+` +STALE WRITES GOT THROUGH \(\d+\) +held, \d+ rejected +monotonic`, stdout)
	}
	require.NotContains(t, stdout, "skew", "skew needs a clock fencecheck owns")
}

// Ctrl-C in the middle of a run: the kube-apiserver is gone when Main returns.
func TestRunKubeLeaseInterrupted(t *testing.T) {
	needBackend(t, kubelease.Name)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := t.TempDir()
	done := make(chan int, 1)
	go func() {
		var o, e strings.Builder
		done <- Main(ctx, []string{"run", "--out", out, "--backend", "kube-lease", "--resource", "unfenced", "--fault", "pause", "--duration", "30s"}, &o, &e)
	}()
	// Into the 30 s workload: the kube-apiserver and every client are up.
	waitForWorkload(t, out)
	require.NotEmpty(t, proc.Descendants(os.Getpid()), "no kube-apiserver started")
	cancel()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("run did not return after cancel")
	}
	require.Empty(t, proc.Descendants(os.Getpid()), "a kube-apiserver outlived the interrupted run")
}

// An existing cluster by --kubeconfig (here one the test starts): client-side faults
// only, runs labelled -external, node faults refused in one line, the run's Lease gone
// afterwards.
func TestKubeLeaseExternal(t *testing.T) {
	needBackend(t, kubelease.Name)
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	own, err := kubelease.Start(ctx, kubelease.Config{TTL: time.Second, Dir: t.TempDir()})
	require.NoError(t, err)
	defer func() { require.NoError(t, own.Close()) }()
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, own.Servers[0].WriteKubeconfig(kc))

	out := t.TempDir()
	code, stdout, stderr := run(t, "run", "--out", out, "--backend", "kube-lease", "--kubeconfig", kc, "--resource", "fenced", "--fault", "pause")
	require.Equal(t, exitSafe, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	require.Contains(t, stdout, "kube-lease-external")

	code, _, stderr = run(t, "run", "--out", out, "--backend", "kube-lease", "--kubeconfig", kc, "--fault", "node-pause")
	require.Equal(t, exitUsage, code)
	require.Contains(t, stderr, "takes client-side faults only")
	require.Equal(t, 1, strings.Count(strings.TrimSpace(stderr), "\n")+1, "one line: %q", stderr)

	code, _, stderr = run(t, "run", "--out", out, "--backend", "kube-lease", "--kube-namespace", "x")
	require.Equal(t, exitUsage, code)
	require.Contains(t, stderr, "--kube-namespace is for an existing cluster")

	// Only the Lease the test's own cluster started with is left.
	lctx, lcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer lcancel()
	names, err := own.LeaseNames(lctx)
	require.NoError(t, err)
	require.Equal(t, []string{kubelease.LeaseName}, names)
}
