package raftlock

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	hraft "github.com/hashicorp/raft"
)

// Defaults for the zero Config.
const (
	DefaultNodes          = 3
	DefaultTTL            = time.Second
	DefaultHeartbeat      = 50 * time.Millisecond
	DefaultElection       = 50 * time.Millisecond
	DefaultLeaderLease    = 50 * time.Millisecond
	DefaultCommit         = 5 * time.Millisecond
	DefaultRPCTimeout     = 500 * time.Millisecond
	DefaultRequestTimeout = time.Second

	// MaxNodes bounds the cluster size.
	MaxNodes = 7
	// MinTTL and MaxTTL bound the lease TTL.
	MinTTL = 20 * time.Millisecond
	MaxTTL = time.Hour
)

// config configures a raft lock service. The zero value is valid: 3 nodes, TTL 1s,
// raft timings 50ms/50ms/50ms/5ms, logs discarded, time.Now on every node and client.
type config struct {
	// Nodes is the number of raft nodes (default 3; 1..7, odd sizes recommended).
	Nodes int
	// TTL is the lease time to live clients request (default 1s; 20ms..1h).
	TTL time.Duration

	// Raft timings (hashicorp/raft Config fields of the same meaning). Heartbeat,
	// Election and LeaderLease must each be >= 5ms, LeaderLease <= Heartbeat,
	// Election >= Heartbeat, Commit >= 1ms.
	Heartbeat   time.Duration // HeartbeatTimeout, default 50ms
	Election    time.Duration // ElectionTimeout, default 50ms
	LeaderLease time.Duration // LeaderLeaseTimeout, default 50ms
	Commit      time.Duration // CommitTimeout, default 5ms

	// RPCTimeout bounds one raft RPC between nodes (the in-memory transport's timeout and
	// the longest a stalled link holds an RPC). Default 500ms, must be >= Heartbeat.
	RPCTimeout time.Duration
	// RequestTimeout bounds how long a node works on one client request before it
	// answers "unknown". Default 1s.
	RequestTimeout time.Duration

	// SnapshotThreshold and TrailingLogs are passed to raft when non-zero (raft's
	// defaults otherwise: 8192 and 10240). Small values exercise snapshot install.
	SnapshotThreshold uint64
	TrailingLogs      uint64

	// Logger receives the service's own log lines and raft's (hclog) output, one record
	// per line, attributes node=i. LogWriter, if Logger is nil, receives the same as text.
	// Both nil: everything is discarded (raft never writes to the terminal).
	Logger    *slog.Logger
	LogWriter io.Writer
	// RaftLogLevel is hclog's level for raft's output ("trace", "debug", "info", "warn",
	// "error"); default "info".
	RaftLogLevel string

	// Now is the clock every node stamps commands with (default time.Now).
	Now func() time.Time
	// NodeClock, if set, returns node i's clock; it overrides Now. It is called once per
	// node incarnation; the returned func is called for every proposed command.
	NodeClock func(node int) func() time.Time
	// ClientClock, if set, returns harness client id's clock, used by that client to
	// measure its lease (default time.Now).
	ClientClock func(id int) func() time.Time
}

// withDefaults returns c with zero fields replaced by defaults.
func (c config) withDefaults() config {
	if c.Nodes == 0 {
		c.Nodes = DefaultNodes
	}
	if c.TTL == 0 {
		c.TTL = DefaultTTL
	}
	if c.Heartbeat == 0 {
		c.Heartbeat = DefaultHeartbeat
	}
	if c.Election == 0 {
		c.Election = DefaultElection
	}
	if c.LeaderLease == 0 {
		c.LeaderLease = DefaultLeaderLease
	}
	if c.Commit == 0 {
		c.Commit = DefaultCommit
	}
	if c.RPCTimeout == 0 {
		c.RPCTimeout = DefaultRPCTimeout
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.RaftLogLevel == "" {
		c.RaftLogLevel = "info"
	}
	return c
}

// errInvalidConfig wraps every Validate error.
var errInvalidConfig = errors.New("raft lock: invalid config")

// Validate checks the config after defaults are applied, including hashicorp/raft's own
// ValidateConfig rules. Errors wrap ErrInvalidConfig and name the offending field.
func (c config) Validate() error {
	c = c.withDefaults()
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", errInvalidConfig, fmt.Sprintf(format, a...))
	}
	if c.Nodes < 1 || c.Nodes > MaxNodes {
		return bad("Nodes = %d, want 1..%d (3 or 5 make sense)", c.Nodes, MaxNodes)
	}
	if c.TTL < MinTTL || c.TTL > MaxTTL {
		return bad("TTL = %s, want %s..%s", c.TTL, MinTTL, MaxTTL)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
		min  time.Duration
	}{
		{"Heartbeat", c.Heartbeat, 5 * time.Millisecond},
		{"Election", c.Election, 5 * time.Millisecond},
		{"LeaderLease", c.LeaderLease, 5 * time.Millisecond},
		{"Commit", c.Commit, time.Millisecond},
		{"RPCTimeout", c.RPCTimeout, time.Millisecond},
		{"RequestTimeout", c.RequestTimeout, time.Millisecond},
	} {
		if d.v < d.min {
			return bad("%s = %s, must be >= %s (raft rejects less)", d.name, d.v, d.min)
		}
	}
	if c.LeaderLease > c.Heartbeat {
		return bad("LeaderLease (%s) must be <= Heartbeat (%s)", c.LeaderLease, c.Heartbeat)
	}
	if c.Election < c.Heartbeat {
		return bad("Election (%s) must be >= Heartbeat (%s)", c.Election, c.Heartbeat)
	}
	if c.RPCTimeout < c.Heartbeat {
		return bad("RPCTimeout (%s) must be >= Heartbeat (%s)", c.RPCTimeout, c.Heartbeat)
	}
	if _, err := parseLevel(c.RaftLogLevel); err != nil {
		return bad("%v", err)
	}
	rc := c.raftConfig(0, nil)
	if err := hraft.ValidateConfig(rc); err != nil {
		return bad("hashicorp/raft: %v", err)
	}
	return nil
}

// raftConfig builds node i's hashicorp/raft config.
func (c config) raftConfig(i int, lg *logSetup) *hraft.Config {
	rc := hraft.DefaultConfig()
	rc.LocalID = nodeID(i)
	rc.HeartbeatTimeout = c.Heartbeat
	rc.ElectionTimeout = c.Election
	rc.LeaderLeaseTimeout = c.LeaderLease
	rc.CommitTimeout = c.Commit
	if c.SnapshotThreshold > 0 {
		rc.SnapshotThreshold = c.SnapshotThreshold
	}
	if c.TrailingLogs > 0 {
		rc.TrailingLogs = c.TrailingLogs
	}
	rc.NoLegacyTelemetry = true
	if lg != nil {
		rc.Logger = lg.raftLogger(i)
	} else {
		rc.Logger = nullHCLogger()
	}
	return rc
}

// nodeClock returns node i's clock.
func (c config) nodeClock(i int) func() time.Time {
	if c.NodeClock != nil {
		if f := c.NodeClock(i); f != nil {
			return f
		}
	}
	if c.Now != nil {
		return c.Now
	}
	return time.Now
}

// clientClock returns client id's clock.
func (c config) clientClock(id int) func() time.Time {
	if c.ClientClock != nil {
		if f := c.ClientClock(id); f != nil {
			return f
		}
	}
	return time.Now
}

func nodeID(i int) hraft.ServerID        { return hraft.ServerID(fmt.Sprintf("node-%d", i)) }
func nodeAddr(i int) hraft.ServerAddress { return hraft.ServerAddress(fmt.Sprintf("raft-%d", i)) }
