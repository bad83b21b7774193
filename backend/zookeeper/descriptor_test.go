package zookeeper_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/backend/zookeeper"
	"github.com/fencecheck/fencecheck/harness/proc"
	"github.com/fencecheck/fencecheck/harness/proc/proctest"
	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/harnesstest"
)

func requireZookeeper(t *testing.T) {
	t.Helper()
	proctest.Skip(t, zookeeper.ServerNeeds(zookeeper.Config{})...)
}

// The contract suite on the czxid descriptor, started as a run starts it.
func TestDescriptorContract(t *testing.T) {
	requireZookeeper(t)
	harnesstest.Descriptor(t, zookeeper.Descriptors()[0])
}

// The capabilities each descriptor's Shape gives are the started value's: a standalone
// server, an ensemble, a fast clock only with skew, an existing ensemble only External.
func TestDescriptorCaps(t *testing.T) {
	requireZookeeper(t)
	ds := zookeeper.Descriptors()
	require.Len(t, ds, 2)
	external, err := zookeeper.Start(context.Background(), zookeeper.Config{TTL: registry.DefaultTTL, Dir: t.TempDir()})
	require.NoError(t, err)
	defer external.Close()
	for _, tc := range []struct {
		name    string
		d       registry.Backend
		s       registry.Settings
		check   func(t *testing.T, c registry.Caps)
		setupIs string
	}{
		{"standalone", ds[0], registry.Settings{Members: 1}, func(t *testing.T, c registry.Caps) {
			require.True(t, c.ProcessNodes && c.Crasher && c.DurableLeases && c.FastClock)
			require.False(t, c.Cluster)
			require.Zero(t, c.ClockRate)
		}, "Debian's ZooKeeper, 1 standalone server"},
		{"standalone with skew", ds[1], registry.Settings{Members: 1, Faults: []string{"pause", "skew"}}, func(t *testing.T, c registry.Caps) {
			require.Equal(t, zookeeper.SkewRate, c.ClockRate)
		}, "Debian's ZooKeeper, 1 standalone server"},
		{"ensemble", ds[0], registry.Settings{Members: 3}, func(t *testing.T, c registry.Caps) {
			require.True(t, c.Cluster && c.ProcessNodes && c.Crasher)
			require.Equal(t, 3, c.Nodes)
		}, "Debian's ZooKeeper: 1 standalone server, a 3-server ensemble for node faults"},
		{"existing ensemble", ds[0], registry.Settings{Members: 1, Options: map[string]string{zookeeper.OptionServers: external.Endpoints()[0]}}, func(t *testing.T, c registry.Caps) {
			require.Equal(t, registry.Caps{External: "an existing ensemble (--zookeeper-servers)", DurableLeases: true}, c)
		}, "existing ZooKeeper ensemble at " + external.Endpoints()[0]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.s
			s.TTL, s.Clients = registry.DefaultTTL, 2
			require.Equal(t, tc.setupIs, tc.d.SetupOf(s))
			b := harnesstest.Start(t, tc.d, s)
			require.Equal(t, tc.d.Name, b.Name())
			tc.check(t, tc.d.RunCaps(s, b))
		})
	}
}

// Settings a descriptor refuses before anything starts.
func TestDescriptorCheck(t *testing.T) {
	d := zookeeper.Descriptors()[0]
	for _, tc := range []struct {
		name string
		s    registry.Settings
		want string
	}{
		{"two members", registry.Settings{TTL: time.Second, Members: 2}, "--members must be 1, 3 or 5"},
		{"fractional ms", registry.Settings{TTL: 1500500 * time.Microsecond, Members: 1}, "not whole milliseconds"},
		{"bad server", registry.Settings{TTL: time.Second, Members: 1, Options: map[string]string{zookeeper.OptionServers: "nohost"}}, `server "nohost" is not host:port`},
		{"members vs servers", registry.Settings{TTL: time.Second, Members: 3, Options: map[string]string{zookeeper.OptionServers: "127.0.0.1:1,127.0.0.1:2"}}, "does not match the 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorContains(t, d.CheckSettings(tc.s), tc.want)
		})
	}
}

// A run on an existing ensemble needs nothing installed; one on servers fencecheck
// starts is available exactly when Debian's jars are there.
func TestDescriptorUnavailable(t *testing.T) {
	d := zookeeper.Descriptors()[0]
	ext := registry.Settings{Options: map[string]string{zookeeper.OptionServers: "127.0.0.1:2181"}}
	require.Empty(t, d.Unavailability(ext))
	missing := proc.Missing(zookeeper.ServerNeeds(zookeeper.Config{})...)
	why := d.Unavailability(registry.Settings{})
	if missing != "" {
		require.Contains(t, why, "apt-get install zookeeper")
	} else {
		require.Empty(t, why)
	}
}
