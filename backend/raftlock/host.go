package raftlock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/fencecheck/fencecheck/harness"
)

// hostConfig is what a client host needs to build a raft lock client: the lease's TTL,
// how long one request may take, and how many nodes (one address each) it reaches.
type hostConfig struct {
	TTLns     int64 `json:"ttl_ns"`
	RequestNs int64 `json:"request_timeout_ns"`
	Nodes     int   `json:"nodes"`
}

// HostConfig implements harness.Hostable. A hosted client measures its lease by its
// host's clock, not by the harness's clock of that client (Config.ClientClock): a run
// with a client clock fault keeps it in-process.
func (s *service) HostConfig() (harness.HostConfig, error) {
	raw, err := json.Marshal(hostConfig{TTLns: int64(s.cfg.TTL), RequestNs: int64(s.cfg.RequestTimeout), Nodes: len(s.nodes)})
	return harness.HostConfig{Kind: Name, Config: raw, Expiring: true}, err
}

// HostLockers makes a client host's raft lock clients from a HostConfig's Config: the
// same Locker as in fencecheck, whose owner name also names the host process (a new
// host for the same harness client never acquires, renews or releases as an earlier one).
func HostLockers(raw []byte) (harness.LockerMaker, error) {
	var c hostConfig
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("%s: host config: %w", Name, err)
	}
	cfg := config{Nodes: c.Nodes, TTL: time.Duration(c.TTLns), RequestTimeout: time.Duration(c.RequestNs)}
	if c.TTLns <= 0 || c.RequestNs <= 0 || c.Nodes <= 0 {
		return nil, fmt.Errorf("%s: host config: TTL, request timeout and nodes must be positive, got %d ns, %d ns, %d", Name, c.TTLns, c.RequestNs, c.Nodes)
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("%s: host config: %w", Name, err)
	}
	var r [4]byte
	_, _ = rand.Read(r[:]) // crypto/rand.Read never fails on Linux
	return hostMaker{cfg: cfg, proc: fmt.Sprintf("p%d-%s", os.Getpid(), hex.EncodeToString(r[:]))}, nil
}

type hostMaker struct {
	cfg  config
	proc string
}

func (m hostMaker) NewLocker(_ context.Context, id int, addrs []string) (harness.Locker, error) {
	if len(addrs) != m.cfg.Nodes {
		return nil, fmt.Errorf("%w: raft lock: got %d addresses for %d nodes", harness.ErrNoEffect, len(addrs), m.cfg.Nodes)
	}
	return newLocker(m.cfg, id, addrs, m.proc)
}

func (hostMaker) Close() error { return nil }
