package scenarios

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/harness/builtin"
	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/harness/lease/zookeeper"
	"github.com/fencecheck/fencecheck/harness/proc"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/spec"
	"github.com/fencecheck/fencecheck/trial"
)

// zookeeperDetails is what the node faults of the zookeeper catalogue scenarios must
// name in the history: the server's PID and the real signal (or the real fast clock).
var zookeeperDetails = map[string][]string{
	"zookeeper-fenced-crash":         {"the only server (pid ", "SIGKILL", "restarted at once"},
	"zookeeper-unfenced-skew":        {"the only server (pid ", "2x fast"},
	"zookeeper3-unfenced-node-pause": {"leader node ", "(pid ", "SIGSTOP", "SIGCONT"},
	"zookeeper3-fenced-node-pause":   {"leader node ", "(pid ", "SIGSTOP"},
	"zookeeper3-fenced-crash":        {"leader node ", "(pid ", "SIGKILL"},
}

// checkZookeeperRun checks what a zookeeper catalogue run left: the node fault's
// detail, and no JVM still running.
func checkZookeeperRun(t *testing.T, sc catalogue.Scenario, h *history.History) {
	t.Helper()
	want, ok := zookeeperDetails[sc.Name]
	if !ok {
		return
	}
	found := false
	for _, f := range h.Faults {
		if f.Kind == sc.Faults[0] {
			found = true
			for _, w := range want {
				require.Contains(t, f.Detail, w)
			}
		}
	}
	require.True(t, found, "no %s fault in the history", sc.Faults[0])
}

// The zookeeper scenarios cover what the branch's end-to-end test did, and every
// server process is gone once a run returns.
func TestZookeeperCatalogue(t *testing.T) {
	for name := range zookeeperDetails {
		sc, ok := builtin.Catalogue().Lookup(name)
		require.True(t, ok, "%s is not in the catalogue", name)
		require.NotEmpty(t, sc.Faults)
	}
	skipUnavailable(t, spec.Spec{Backend: zookeeper.Name})
	// One run here, the rest in TestCatalogue: the servers must be gone afterwards.
	sc, _ := builtin.Catalogue().Lookup("zookeeper-fenced-crash")
	o, err := trial.Run(context.Background(), builtin.Registry(), sc.Spec, trial.Options{Dir: t.TempDir()})
	require.NoError(t, err)
	require.Empty(t, sc.Expect.Diff(o.Report))
	checkZookeeperRun(t, sc, o.History)
	require.Empty(t, zookeeperJVMs(), "every server stopped")
}

// What cannot apply to ZooKeeper is refused with one clear line, before anything starts.
func TestZookeeperRefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    spec.Spec
		want string
	}{
		{"node-pause standalone", spec.Spec{Backend: "zookeeper", Faults: []string{"node-pause"}}, "needs a cluster of at least 3 zookeeper servers (--members 3)"},
		{"cluster-crash", spec.Spec{Backend: "zookeeper", Members: 3, Faults: []string{"cluster-crash"}}, `fault "cluster-crash"`},
		{"clock-jump", spec.Spec{Backend: "zookeeper", Faults: []string{"clock-jump"}}, "only run fast from the start (skew), not step"},
		{"careful", spec.Spec{Backend: "zookeeper", Policy: "careful", Faults: []string{"pause"}}, "careful policy"},
		{"members", spec.Spec{Backend: "zookeeper", Members: 2}, "--members must be 1, 3 or 5"},
		{"external node fault", spec.Spec{Backend: "zookeeper", Options: map[string]string{zookeeper.OptionServers: "127.0.0.1:2181"}, Faults: []string{"crash"}}, "which fencecheck must have started itself"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := spec.Normalize(builtin.Registry(), tc.s)
			require.ErrorIs(t, err, spec.ErrSpec)
			require.ErrorContains(t, err, tc.want)
		})
	}
	// In a random schedule skew is skipped with its reason: the clock is fast from the
	// server's start or not at all.
	s, err := spec.Normalize(builtin.Registry(), spec.Spec{Backend: "zookeeper", RandomFaults: []string{"pause", "skew"}, Duration: 10 * spec.DefaultTTL})
	require.NoError(t, err)
	require.Equal(t, []string{"pause"}, s.RandomFaults)
	require.Len(t, s.Skipped, 1)
	require.Contains(t, s.Skipped[0], "not in a random schedule")
}

// An existing ensemble (--zookeeper-servers): a server started on its own, reached only
// at its address. Client-side faults go through the local proxies; node faults are
// refused; an address where nothing listens is bad input.
func TestExternalZookeeper(t *testing.T) {
	skipUnavailable(t, spec.Spec{Backend: zookeeper.Name})
	ctx := context.Background()
	b, err := zookeeper.Start(ctx, zookeeper.Config{TTL: spec.DefaultTTL, Dir: t.TempDir()})
	if errors.Is(err, proc.ErrNotFound) {
		t.Skip(err)
	}
	require.NoError(t, err)
	defer b.Close()
	servers := map[string]string{zookeeper.OptionServers: strings.Join(b.Endpoints(), ",")}

	o, err := trial.Run(ctx, builtin.Registry(), spec.Spec{Backend: "zookeeper", Options: servers, Resource: "unfenced", Faults: []string{"pause"}}, trial.Options{})
	require.NoError(t, err)
	require.Equal(t, models.Violated, o.Report.Verdicts[models.Register])

	_, err = trial.Run(ctx, builtin.Registry(), spec.Spec{Backend: "zookeeper", Options: servers, Faults: []string{"crash"}}, trial.Options{})
	require.ErrorIs(t, err, spec.ErrSpec)
	require.ErrorContains(t, err, "which fencecheck must have started itself")

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := ln.Addr().String()
	require.NoError(t, ln.Close())
	_, err = trial.Run(ctx, builtin.Registry(), spec.Spec{Backend: "zookeeper", Options: map[string]string{zookeeper.OptionServers: dead}}, trial.Options{})
	require.ErrorIs(t, err, spec.ErrSpec, "an unreachable server is bad input (exit 2)")
	require.ErrorContains(t, err, dead)
}

// zookeeperJVMs lists this test process's descendants that are ZooKeeper servers (tests
// running in parallel start processes of their own).
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
