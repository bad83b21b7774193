package redlock

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/fencecheck/fencecheck/harness"
)

// hostConfig is what a client host needs to build a Redlock client.
type hostConfig struct {
	TTLms   int64  `json:"ttl_ms"`
	Servers int    `json:"servers"`
	Key     string `json:"key"`
}

// HostConfig implements harness.Hostable: Redlock has no token, so the host grants with
// "no_token" and the order of the grants is read by the parent, across every client.
func (b *Backend) HostConfig() (harness.HostConfig, error) {
	c := b.cfg.withDefaults()
	raw, err := json.Marshal(hostConfig{TTLms: c.TTL.Milliseconds(), Servers: len(b.addrs), Key: c.Key})
	return harness.HostConfig{Kind: "redlock", Config: raw, Expiring: true, NoToken: NoTokenReason}, err
}

// HostConfig implements harness.Hostable.
func (e *external) HostConfig() (harness.HostConfig, error) { return e.b.HostConfig() }

// HostLockers makes a client host's Redlock clients from a HostConfig's Config: the
// same NewLocker as in fencecheck, on a Backend that holds only the client settings.
func HostLockers(raw []byte) (harness.LockerMaker, error) {
	var c hostConfig
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("redlock: host config: %w", err)
	}
	if c.TTLms <= 0 || c.Servers <= 0 {
		return nil, fmt.Errorf("redlock: host config: want a positive TTL and server count, got %d ms, %d", c.TTLms, c.Servers)
	}
	cfg := Config{TTL: time.Duration(c.TTLms) * time.Millisecond, Servers: c.Servers, Key: c.Key}.withDefaults()
	return hostMaker{&Backend{cfg: cfg, addrs: make([]string, c.Servers)}}, nil
}

type hostMaker struct{ b *Backend }

func (m hostMaker) NewLocker(ctx context.Context, id int, addrs []string) (harness.Locker, error) {
	return m.b.NewLocker(ctx, id, addrs)
}

func (hostMaker) Close() error { return nil }
