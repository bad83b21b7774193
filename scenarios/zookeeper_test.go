package scenarios

import (
	"context"
	"errors"
	"net"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/harness/lease/zookeeper"
	"github.com/fencecheck/fencecheck/harness/proc"
	"github.com/fencecheck/fencecheck/models"
)

// TestZookeeper runs the zookeeper backend end to end against Debian's ZooKeeper: a
// pause breaks an unfenced register and not a fenced one, and node faults are real
// signals whose PID and signal the history records. Issue 14: temporary until these
// become catalogue entries of the registry (issue 13).
func TestZookeeper(t *testing.T) {
	if _, err := os.Stat("/usr/share/java/zookeeper.jar"); err != nil {
		t.Skip("ZooKeeper is not installed: apt-get install zookeeper")
	}
	held, violated := models.Held, models.Violated
	for _, tc := range []struct {
		name   string
		spec   Spec
		expect Expect
		detail []string // what the node fault's detail must name
	}{
		{"unfenced pause", Spec{Backend: "zookeeper", Resource: "unfenced", Faults: []string{"pause"}},
			Expect{Verdicts: map[models.Property]models.Verdict{models.Register: violated, models.Updates: violated, models.Tokens: held}, MinStaleAccepted: 1}, nil},
		{"fenced pause", Spec{Backend: "zookeeper", Resource: "fenced", Faults: []string{"pause"}},
			Expect{Verdicts: map[models.Property]models.Verdict{models.Register: held, models.Updates: held, models.Tokens: held}, MinStaleRejected: 1, NoStaleAccepted: true}, nil},
		{"fenced crash of the standalone server", Spec{Backend: "zookeeper", Resource: "fenced", Faults: []string{"crash"}},
			Expect{Verdicts: map[models.Property]models.Verdict{models.Register: held, models.Tokens: held}, MinStaleRejected: 1, NoStaleAccepted: true}, []string{"pid ", "SIGKILL"}},
		{"unfenced skew: the server's clock 2x fast", Spec{Backend: "zookeeper", Resource: "unfenced", Faults: []string{"skew"}},
			Expect{Verdicts: map[models.Property]models.Verdict{models.Register: violated, models.Tokens: held}, MinStaleAccepted: 1}, []string{"pid ", "2x fast"}},
		{"unfenced node-pause of the ensemble's leader", Spec{Backend: "zookeeper", Members: 3, Resource: "unfenced", Faults: []string{"node-pause"}},
			Expect{Verdicts: map[models.Property]models.Verdict{models.Register: violated, models.Tokens: held}, MinStaleAccepted: 1}, []string{"pid ", "SIGSTOP"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := Execute(context.Background(), tc.spec, Options{OutDir: t.TempDir()})
			if errors.Is(err, proc.ErrNotFound) {
				t.Skip(err) // names the Debian package to install
			}
			require.NoError(t, err)
			if diffs := tc.expect.Diff(o.Report); len(diffs) > 0 {
				t.Errorf("verdicts: %v\nfaults: %+v\nstale writes: %+v", diffs, o.History.Faults, o.Report.StaleWrites)
			}
			require.True(t, o.Report.Agree, "porcupine and the direct analysis disagree")
			require.NotEmpty(t, o.History.Faults)
			found := false
			for _, f := range o.History.Faults {
				require.NotNil(t, f.End, "fault %s never healed", f.Kind)
				if f.Kind == tc.spec.Faults[0] {
					found = true
					for _, want := range tc.detail {
						require.Contains(t, f.Detail, want)
					}
				}
			}
			require.True(t, found, "no %s fault in the history", tc.spec.Faults[0])
			require.Empty(t, proc.Descendants(os.Getpid()), "every server stopped")
		})
	}
}

// An existing ensemble (--zookeeper-servers): a server started on its own, reached only
// at its address. Client-side faults go through the local proxies; node faults are
// refused; an address where nothing listens is bad input.
func TestExternalZookeeper(t *testing.T) {
	ctx := context.Background()
	b, err := zookeeper.Start(ctx, zookeeper.Config{TTL: DefaultTTL, Dir: t.TempDir()})
	if errors.Is(err, proc.ErrNotFound) {
		t.Skip(err)
	}
	require.NoError(t, err)
	defer b.Close()

	o, err := Execute(ctx, Spec{Backend: "zookeeper", ZookeeperServers: b.Endpoints(), Resource: "unfenced", Faults: []string{"pause"}}, Options{})
	require.NoError(t, err)
	require.Equal(t, models.Violated, o.Report.Verdicts[models.Register])

	_, err = Execute(ctx, Spec{Backend: "zookeeper", ZookeeperServers: b.Endpoints(), Faults: []string{"crash"}}, Options{})
	require.ErrorIs(t, err, ErrSpec)
	require.ErrorContains(t, err, "needs servers fencecheck started itself")

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := ln.Addr().String()
	require.NoError(t, ln.Close())
	_, err = Execute(ctx, Spec{Backend: "zookeeper", ZookeeperServers: []string{dead}}, Options{})
	require.ErrorIs(t, err, ErrSpec, "an unreachable server is bad input (exit 2)")
	require.ErrorContains(t, err, dead)
}
