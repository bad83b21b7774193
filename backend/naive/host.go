package naive

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/fencecheck/fencecheck/harness"
)

// hostConfig is what a client host needs to build a naive lock client.
type hostConfig struct {
	TTLms int64 `json:"ttl_ms"`
}

// HostConfig implements harness.Hostable. A hosted client reads its host's clock, not
// the harness's clock of that client: a run with a client clock fault keeps it
// in-process.
func (b *Backend) HostConfig() (harness.HostConfig, error) {
	raw, err := json.Marshal(hostConfig{TTLms: b.cfg.TTL.Milliseconds()})
	return harness.HostConfig{Kind: "naive", Config: raw, Expiring: true}, err
}

// HostLockers makes a client host's naive lock clients from a HostConfig's Config.
func HostLockers(raw []byte) (harness.LockerMaker, error) {
	var c hostConfig
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("naive: host config: %w", err)
	}
	if c.TTLms <= 0 {
		return nil, fmt.Errorf("naive: host config: TTL must be positive, got %d ms", c.TTLms)
	}
	return hostMaker{ttl: time.Duration(c.TTLms) * time.Millisecond}, nil
}

type hostMaker struct{ ttl time.Duration }

func (m hostMaker) NewLocker(_ context.Context, id int, addrs []string) (harness.Locker, error) {
	if len(addrs) != 1 {
		return nil, fmt.Errorf("naive: want 1 address, got %d", len(addrs))
	}
	return NewLocker(addrs[0], fmt.Sprintf("c%d", id), m.ttl), nil
}

func (hostMaker) Close() error { return nil }
