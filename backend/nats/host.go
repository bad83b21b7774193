package nats

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/fencecheck/fencecheck/harness"
)

// hostConfig is what a client host needs to build a NATS lock client.
type hostConfig struct {
	TTLms  int64  `json:"ttl_ms"`
	Bucket string `json:"bucket"`
	Key    string `json:"key"`
}

// HostConfig implements harness.Hostable.
func (b *Backend) HostConfig() (harness.HostConfig, error) {
	c := b.cfg.withDefaults()
	raw, err := json.Marshal(hostConfig{TTLms: c.TTL.Milliseconds(), Bucket: c.Bucket, Key: c.Key})
	return harness.HostConfig{Kind: "nats", Config: raw, Expiring: true}, err
}

// HostConfig implements harness.Hostable.
func (e *external) HostConfig() (harness.HostConfig, error) { return e.b.HostConfig() }

// HostLockers makes a client host's NATS lock clients from a HostConfig's Config: the
// same NewLocker as in fencecheck, on a Backend that holds only the client settings.
func HostLockers(raw []byte) (harness.LockerMaker, error) {
	var c hostConfig
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("nats: host config: %w", err)
	}
	if c.TTLms <= 0 {
		return nil, fmt.Errorf("nats: host config: TTL must be positive, got %d ms", c.TTLms)
	}
	return hostMaker{&Backend{cfg: Config{TTL: time.Duration(c.TTLms) * time.Millisecond, Bucket: c.Bucket, Key: c.Key}.withDefaults()}}, nil
}

type hostMaker struct{ b *Backend }

func (m hostMaker) NewLocker(ctx context.Context, id int, addrs []string) (harness.Locker, error) {
	return m.b.NewLocker(ctx, id, addrs)
}

func (hostMaker) Close() error { return nil }
