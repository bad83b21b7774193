package zookeeper

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/fencecheck/fencecheck/harness"
)

// hostConfig is what a client host needs to build a ZooKeeper lock client.
type hostConfig struct {
	TTLms    int64       `json:"ttl_ms"`
	Token    TokenSource `json:"token"`
	LockPath string      `json:"lock_path"`
}

// HostConfig implements harness.Hostable.
func (b *Backend) HostConfig() (harness.HostConfig, error) {
	c := b.cfg.withDefaults()
	raw, err := json.Marshal(hostConfig{TTLms: c.TTL.Milliseconds(), Token: c.Token, LockPath: c.LockPath})
	return harness.HostConfig{Kind: "zookeeper", Config: raw}, err
}

// HostConfig implements harness.Hostable.
func (e external) HostConfig() (harness.HostConfig, error) { return e.b.HostConfig() }

// HostLockers makes a client host's ZooKeeper lock clients from a HostConfig's Config;
// the client library's log goes to the host's stderr (the run's log).
func HostLockers(raw []byte) (harness.LockerMaker, error) {
	var c hostConfig
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("zookeeper: host config: %w", err)
	}
	if c.TTLms <= 0 {
		return nil, fmt.Errorf("zookeeper: host config: TTL must be positive, got %d ms", c.TTLms)
	}
	cfg := Config{TTL: time.Duration(c.TTLms) * time.Millisecond, Token: c.Token, LockPath: c.LockPath}.withDefaults()
	return hostMaker{&Backend{cfg: cfg, log: slog.New(slog.NewTextHandler(os.Stderr, nil))}}, nil
}

type hostMaker struct{ b *Backend }

func (m hostMaker) NewLocker(_ context.Context, _ int, addrs []string) (harness.Locker, error) {
	return m.b.newLocker(addrs), nil
}

func (hostMaker) Close() error { return nil }
