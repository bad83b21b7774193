package redis

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/fencecheck/fencecheck/harness"
)

// hostConfig is what a client host needs to build a redis lock client.
type hostConfig struct {
	TTLms int64     `json:"ttl_ms"`
	Token TokenKind `json:"token"`
	Key   string    `json:"key"`
}

// HostConfig implements harness.Hostable. A TokenNone client grants with "no_token":
// the order of its grants is read by the parent, across every client.
func (b *Backend) HostConfig() (harness.HostConfig, error) {
	c := b.cfg.withDefaults()
	raw, err := json.Marshal(hostConfig{TTLms: c.TTL.Milliseconds(), Token: c.Token, Key: c.Key})
	hc := harness.HostConfig{Kind: "redis", Config: raw, Expiring: true}
	if c.Token == TokenNone {
		hc.NoToken = NoTokenReason
	}
	return hc, err
}

// HostConfig implements harness.Hostable.
func (e *external) HostConfig() (harness.HostConfig, error) { return e.b.HostConfig() }

// HostLockers makes a client host's redis lock clients from a HostConfig's Config.
func HostLockers(raw []byte) (harness.LockerMaker, error) {
	var c hostConfig
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("redis: host config: %w", err)
	}
	if c.TTLms <= 0 {
		return nil, fmt.Errorf("redis: host config: TTL must be positive, got %d ms", c.TTLms)
	}
	cfg := Config{TTL: time.Duration(c.TTLms) * time.Millisecond, Token: c.Token, Key: c.Key}.withDefaults()
	return &hostMaker{cfg: cfg}, nil
}

type hostMaker struct {
	cfg  Config
	seen atomic.Int64
}

func (m *hostMaker) NewLocker(_ context.Context, _ int, addrs []string) (harness.Locker, error) {
	if len(addrs) != 1 {
		return nil, fmt.Errorf("%w: redis: want 1 address, got %d", harness.ErrNoEffect, len(addrs))
	}
	return &Locker{cfg: m.cfg, cli: NewClient(addrs[0], m.cfg.TTL), seen: &m.seen}, nil
}

func (*hostMaker) Close() error { return nil }
