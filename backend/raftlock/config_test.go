package raftlock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestConfigValidate(t *testing.T) {
	require.NoError(t, config{}.Validate())
	d := config{}.withDefaults()
	require.Equal(t, 3, d.Nodes)
	require.Equal(t, 50*time.Millisecond, d.Heartbeat)
	require.Equal(t, 50*time.Millisecond, d.Election)
	require.Equal(t, 50*time.Millisecond, d.LeaderLease)
	require.Equal(t, 5*time.Millisecond, d.Commit)
	require.NoError(t, config{Nodes: 5, TTL: 10 * time.Second}.Validate())

	for _, tc := range []struct {
		name string
		cfg  config
		want string
	}{
		{"too many nodes", config{Nodes: 9}, "Nodes = 9"},
		{"negative nodes", config{Nodes: -1}, "Nodes = -1"},
		{"tiny TTL", config{TTL: time.Millisecond}, "TTL = 1ms"},
		{"huge TTL", config{TTL: 2 * time.Hour}, "TTL = 2h0m0s"},
		{"heartbeat below raft minimum", config{Heartbeat: time.Millisecond, LeaderLease: time.Millisecond}, "Heartbeat = 1ms"},
		{"election below heartbeat", config{Heartbeat: 100 * time.Millisecond, Election: 50 * time.Millisecond}, "Election (50ms) must be >= Heartbeat (100ms)"},
		{"lease above heartbeat", config{LeaderLease: 80 * time.Millisecond}, "LeaderLease (80ms) must be <= Heartbeat (50ms)"},
		{"commit below raft minimum", config{Commit: time.Microsecond}, "Commit = 1µs"},
		{"negative election", config{Election: -time.Second}, "Election = -1s"},
		{"rpc timeout below heartbeat", config{RPCTimeout: 10 * time.Millisecond}, "RPCTimeout (10ms)"},
		{"bad log level", config{RaftLogLevel: "loud"}, "RaftLogLevel"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			require.ErrorIs(t, err, errInvalidConfig)
			require.ErrorContains(t, err, tc.want)
		})
	}

	_, err := Start(context.Background(), config{Nodes: 100})
	require.ErrorIs(t, err, errInvalidConfig)
}
