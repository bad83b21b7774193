package raftlock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestConfigValidate(t *testing.T) {
	require.NoError(t, Config{}.Validate())
	d := Config{}.withDefaults()
	require.Equal(t, 3, d.Nodes)
	require.Equal(t, 50*time.Millisecond, d.Heartbeat)
	require.Equal(t, 50*time.Millisecond, d.Election)
	require.Equal(t, 50*time.Millisecond, d.LeaderLease)
	require.Equal(t, 5*time.Millisecond, d.Commit)
	require.NoError(t, Config{Nodes: 5, TTL: 10 * time.Second}.Validate())

	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"too many nodes", Config{Nodes: 9}, "Nodes = 9"},
		{"negative nodes", Config{Nodes: -1}, "Nodes = -1"},
		{"tiny TTL", Config{TTL: time.Millisecond}, "TTL = 1ms"},
		{"huge TTL", Config{TTL: 2 * time.Hour}, "TTL = 2h0m0s"},
		{"heartbeat below raft minimum", Config{Heartbeat: time.Millisecond, LeaderLease: time.Millisecond}, "Heartbeat = 1ms"},
		{"election below heartbeat", Config{Heartbeat: 100 * time.Millisecond, Election: 50 * time.Millisecond}, "Election (50ms) must be >= Heartbeat (100ms)"},
		{"lease above heartbeat", Config{LeaderLease: 80 * time.Millisecond}, "LeaderLease (80ms) must be <= Heartbeat (50ms)"},
		{"commit below raft minimum", Config{Commit: time.Microsecond}, "Commit = 1µs"},
		{"negative election", Config{Election: -time.Second}, "Election = -1s"},
		{"rpc timeout below heartbeat", Config{RPCTimeout: 10 * time.Millisecond}, "RPCTimeout (10ms)"},
		{"bad log level", Config{RaftLogLevel: "loud"}, "RaftLogLevel"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			require.ErrorIs(t, err, ErrInvalidConfig)
			require.ErrorContains(t, err, tc.want)
		})
	}

	_, err := Start(context.Background(), Config{Nodes: 100})
	require.ErrorIs(t, err, ErrInvalidConfig)
}
