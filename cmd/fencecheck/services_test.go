package main

// The redis, redlock and nats runs go against real redis-server and nats-server processes, through
// the registry entries (backend/{redis,redlock,nats}/descriptor.go).

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/harness/proc/proctest"

	redislock "github.com/fencecheck/fencecheck/backend/redis"
	"github.com/fencecheck/fencecheck/builtin"
	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/harness/proc"
	"github.com/fencecheck/fencecheck/harness/registry"
)

// needBackend skips t, in one line naming what is missing, unless the backend's servers
// can start here.
func needBackend(t *testing.T, backend string) {
	t.Helper()
	b, ok := builtin.Registry().Backend(backend)
	if !ok {
		t.Fatalf("no backend %q", backend)
	}
	if why := b.Unavailability(registry.Settings{TTL: time.Second, Members: 1}); why != "" {
		t.Skipf("backend %s: %s", backend, why)
	}
}

// newProcesses lists, with their command lines, the processes below this test binary
// that were not there before: what a run left behind.
func newProcesses(before []int) []string {
	var out []string
	for _, p := range proc.Descendants(os.Getpid()) {
		if !slices.Contains(before, p) {
			b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p), "cmdline"))
			out = append(out, fmt.Sprintf("%d %s", p, strings.ReplaceAll(string(b), "\x00", " ")))
		}
	}
	return out
}

// workloadStarted says whether a run writing into the results store out has started
// its workload (every client connected): the runner says so in the run's run.log.
func workloadStarted(out string) bool {
	logs, _ := filepath.Glob(filepath.Join(out, "*", "2*", "run.log"))
	for _, l := range logs {
		if b, _ := os.ReadFile(l); strings.Contains(string(b), "workload started") {
			return true
		}
	}
	return false
}

// waitForWorkload waits until workloadStarted(out), within a generous ceiling.
func waitForWorkload(t *testing.T, out string) {
	t.Helper()
	require.Eventually(t, func() bool { return workloadStarted(out) }, 90*time.Second, 10*time.Millisecond, "the run never started its workload")
}

func TestRunServices(t *testing.T) {
	for _, tc := range []struct {
		backend, resource, fault string
		code                     int
		want                     string
	}{
		{"redis", "unfenced", "pause", exitViolated, "result: UNSAFE"},
		{"redis", "fenced", "pause", exitSafe, "result: safe"},
		{"nats", "unfenced", "pause", exitViolated, "result: UNSAFE"},
		{"nats", "fenced", "pause", exitSafe, "result: safe"},
		{"redlock", "unfenced", "pause", exitViolated, "result: UNSAFE"},
		{"redlock", "fenced", "pause", exitUsage, "no fencing token: cannot be made safe by fencing"},
		{"redis", "fenced", "node-pause", exitSafe, "SIGSTOP to node 0 (pid "},
		{"nats", "fenced", "crash", exitSafe, "SIGKILL to node 0 (pid "},
		{"redlock", "unfenced", "crash", exitViolated, "SIGKILL to node 0 (pid "},
	} {
		t.Run(strings.Join([]string{tc.backend, tc.resource, tc.fault}, "-"), func(t *testing.T) {
			needBackend(t, tc.backend)
			out := t.TempDir()
			before := proc.Descendants(os.Getpid())
			code, stdout, stderr := run(t, "run", "--out", out, "--backend", tc.backend, "--resource", tc.resource, "--fault", tc.fault)
			require.Equal(t, tc.code, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			require.Contains(t, stdout+stderr, tc.want)
			if code == exitUsage {
				require.Equal(t, 1, strings.Count(strings.TrimSpace(stderr), "\n")+1, "one line: %q", stderr)
				return
			}
			files, err := filepath.Glob(filepath.Join(out, "*", "2*", "history.json"))
			require.NoError(t, err)
			require.Len(t, files, 1)
			h, err := history.ReadFile(files[0])
			require.NoError(t, err)
			for _, f := range h.Faults {
				if f.Kind == "node-pause" || f.Kind == "crash" {
					require.Regexp(t, `SIG(STOP|KILL).*\(pid [1-9][0-9]*\)|\(pid [1-9][0-9]*\).*SIG(STOP|KILL)`, f.Detail)
				}
			}
			require.Empty(t, newProcesses(before), "a server outlived the run")
		})
	}
}

// Ctrl-C in the middle of a run: every server fencecheck started is gone when Main
// returns.
func TestRunInterruptedLeavesNoServer(t *testing.T) {
	for _, backend := range []string{"redlock", "nats"} {
		t.Run(backend, func(t *testing.T) {
			needBackend(t, backend)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			before := proc.Descendants(os.Getpid())
			out := t.TempDir()
			done := make(chan int, 1)
			go func() {
				var o, e strings.Builder
				done <- Main(ctx, []string{"run", "--out", out, "--backend", backend, "--resource", "unfenced", "--fault", "pause", "--duration", "30s"}, &o, &e)
			}()
			waitForWorkload(t, out) // the run lasts 30 s
			require.NotEmpty(t, newProcesses(before), "no server started")
			cancel()
			select {
			case <-done:
			case <-time.After(60 * time.Second):
				t.Fatal("run did not return after cancel")
			}
			require.Empty(t, newProcesses(before), "a server outlived the interrupted run")
		})
	}
}

func TestServicesBadInput(t *testing.T) {
	needBackend(t, "redis")
	free := proctest.DeadAddr(t)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"redis wrong address", []string{"run", "--backend", "redis", "--redis-addrs", free, "--resource", "fenced"}, "no server answers PING at " + free},
		{"nats wrong url", []string{"run", "--backend", "nats", "--nats-url", "nats://" + free}, "no server at nats://" + free},
		{"redis no leader", []string{"run", "--backend", "redis", "--fault", "leader-isolation"}, "needs a lock-service cluster of at least 3 nodes"},
		{"redlock members", []string{"run", "--backend", "redlock", "--members", "4", "--resource", "unfenced"}, "--members must be 3 or 5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := run(t, append(tc.args, "--out", t.TempDir())...)
			require.Equal(t, exitUsage, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			require.Contains(t, stderr, tc.want)
			require.Equal(t, 1, strings.Count(strings.TrimSpace(stderr), "\n")+1, "one line: %q", stderr)
		})
	}
}

// evaluate against an existing redis-server: client-side faults only, one scorecard.
func TestEvaluateExternalRedis(t *testing.T) {
	needBackend(t, "redis")
	s, err := redislock.StartServer(context.Background(), redislock.ServerConfig{Dir: t.TempDir()})
	require.NoError(t, err)
	defer s.Close()
	out := t.TempDir()
	code, stdout, stderr := run(t, "evaluate", "--backend", "redis", "--redis-addrs", s.Addr(), "--fault", "pause", "--out", out)
	require.Equal(t, exitSafe, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	require.Contains(t, stdout, "existing redis-server at "+s.Addr())
	require.Contains(t, stdout, "verdict: SAFE with fencing")
	code, _, stderr = run(t, "evaluate", "--backend", "redis", "--redis-addrs", s.Addr(), "--fault", "crash", "--out", out)
	require.Equal(t, exitUsage, code)
	require.Contains(t, stderr, "takes client-side faults only")
	code, _, stderr = run(t, "evaluate", "--backend", "nats", "--redis-addrs", s.Addr(), "--out", out)
	require.Equal(t, exitUsage, code)
	require.Contains(t, stderr, "--redis-addrs is for the redis or redis-volatile or redis-notoken or redlock backend (got \"nats\")")
}
