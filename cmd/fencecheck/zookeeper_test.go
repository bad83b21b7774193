package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/backend/zookeeper"
	"github.com/fencecheck/fencecheck/harness/proc"
)

// Ctrl-C (the context main cancels on SIGINT) while the servers start, or in the middle
// of the workload, leaves no ZooKeeper server behind: every JVM fencecheck started is
// gone when run returns.
func TestRunInterruptedStopsZookeeper(t *testing.T) {
	needBackend(t, zookeeper.Name)
	for _, tc := range []struct {
		name string
		// ready says when to interrupt, given the run's results folder.
		ready func(out string) bool
	}{
		{"while the servers start", func(string) bool { return len(zookeeperJVMs()) >= 3 }},
		{"during the workload", func(out string) bool {
			// The probe session Start opens and closes is the last thing before the workload.
			logs, _ := filepath.Glob(filepath.Join(out, "*", "2*", "zookeeper.log"))
			for _, l := range logs {
				if b, _ := os.ReadFile(l); bytes.Contains(b, []byte("Submitting global closeSession request")) {
					return true
				}
			}
			return false
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			out := t.TempDir()
			var stdout, stderr bytes.Buffer
			done := make(chan int, 1)
			go func() {
				done <- Main(ctx, []string{"run", "--backend", "zookeeper", "--members", "3", "--duration", "2m", "--out", out}, &stdout, &stderr)
			}()
			require.Eventually(t, func() bool { return tc.ready(out) }, 90*time.Second, 20*time.Millisecond, "the run never got there")
			cancel()
			select {
			case code := <-done:
				t.Logf("exit %d after the interrupt: %s", code, stderr.String())
				require.NotEqual(t, exitSafe, code)
			case <-time.After(90 * time.Second):
				t.Fatal("run did not return after the interrupt")
			}
			require.Empty(t, zookeeperJVMs(), "a server outlived the interrupted run")
		})
	}
}

// zookeeperJVMs lists this test process's descendants that are ZooKeeper servers (other
// tests of the package, run in parallel, start processes of their own).
func zookeeperJVMs() []int {
	var out []int
	for _, pid := range proc.Descendants(os.Getpid()) {
		cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err == nil && bytes.Contains(cmd, []byte("QuorumPeerMain")) {
			out = append(out, pid)
		}
	}
	return out
}

// --zookeeper-servers implies the zookeeper backend; an ensemble that does not answer is
// bad input: one line, exit 2.
func TestRunZookeeperServersDown(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), []string{"run", "--zookeeper-servers", "127.0.0.1:1", "--out", t.TempDir()}, &stdout, &stderr)
	require.Equal(t, exitUsage, code, stderr.String())
	require.Contains(t, stdout.String(), "zookeeper-external")
	require.Contains(t, stderr.String(), "zookeeper: no server answers at [127.0.0.1:1]")
}
