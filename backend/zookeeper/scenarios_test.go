package zookeeper_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/harness/proc/proctest"

	"github.com/fencecheck/fencecheck/backend/zookeeper"
	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/harness/proc"
	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/harnesstest"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/spec"
	"github.com/fencecheck/fencecheck/trial"
)

// A crash run's fault names the server, its PID and the signal, and every server process
// is gone once the run returns.
func TestCrashLeavesNoServer(t *testing.T) {
	reg := newReg(t)
	sc, ok := catalogue.Catalogue(zookeeper.Scenarios()).Lookup("zookeeper-fenced-crash")
	require.True(t, ok)
	harnesstest.SkipUnavailable(t, reg, sc.Spec)
	o, err := trial.Run(context.Background(), reg, sc.Spec, trial.Options{Dir: t.TempDir()})
	require.NoError(t, err)
	require.Empty(t, sc.Expect.Diff(o.Report))
	require.NoError(t, sc.Check(o.History))
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
		{"clock-jump", spec.Spec{Backend: "zookeeper", Faults: []string{"clock-jump"}}, "can only be run fast from the server's start (skew), not stepped back while it runs"},
		{"careful", spec.Spec{Backend: "zookeeper", Policy: "careful", Faults: []string{"pause"}}, "careful policy"},
		{"members", spec.Spec{Backend: "zookeeper", Members: 2}, "--members must be 1, 3 or 5"},
		{"external node fault", spec.Spec{Backend: "zookeeper", Options: map[string]string{zookeeper.OptionServers: "127.0.0.1:2181"}, Faults: []string{"crash"}}, "which fencecheck must have started itself"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := spec.Normalize(newReg(t), tc.s)
			require.ErrorIs(t, err, spec.ErrSpec)
			require.ErrorContains(t, err, tc.want)
		})
	}
	// In a random schedule skew is skipped with its reason: the clock is fast from the
	// server's start or not at all.
	s, err := spec.Normalize(newReg(t), spec.Spec{Backend: "zookeeper", RandomFaults: []string{"pause", "skew"}, Duration: 10 * spec.DefaultTTL})
	require.NoError(t, err)
	require.Equal(t, []string{"pause"}, s.RandomFaults)
	require.Len(t, s.Skipped, 1)
	require.Contains(t, s.Skipped[0], "not in a random schedule")
}

// An existing ensemble (--zookeeper-servers): a server started on its own, reached only
// at its address. Client-side faults go through the local proxies; node faults are
// refused; an address where nothing listens is bad input.
func TestExternalZookeeper(t *testing.T) {
	harnesstest.SkipUnavailable(t, newReg(t), spec.Spec{Backend: zookeeper.Name})
	ctx := context.Background()
	b, err := zookeeper.Start(ctx, zookeeper.Config{TTL: spec.DefaultTTL, Dir: t.TempDir()})
	if errors.Is(err, proc.ErrNotFound) {
		t.Skip(err)
	}
	require.NoError(t, err)
	defer b.Close()
	servers := map[string]string{zookeeper.OptionServers: strings.Join(b.Endpoints(), ",")}

	o, err := trial.Run(ctx, newReg(t), spec.Spec{Backend: "zookeeper", Options: servers, Resource: "unfenced", Faults: []string{"pause"}}, trial.Options{})
	require.NoError(t, err)
	require.Equal(t, models.Violated, o.Report.Verdicts[models.Register])

	_, err = trial.Run(ctx, newReg(t), spec.Spec{Backend: "zookeeper", Options: servers, Faults: []string{"crash"}}, trial.Options{})
	require.ErrorIs(t, err, spec.ErrSpec)
	require.ErrorContains(t, err, "which fencecheck must have started itself")

	dead := proctest.DeadAddr(t)
	_, err = trial.Run(ctx, newReg(t), spec.Spec{Backend: "zookeeper", Options: map[string]string{zookeeper.OptionServers: dead}}, trial.Options{})
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

// newReg is fencecheck's registry with this package's backends: what its scenarios run in.
func newReg(t testing.TB) *registry.Registry {
	return harnesstest.Registry(t, zookeeper.Descriptors()...)
}
