package etcd

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/fencecheck/fencecheck/harness"
)

// HostConfig implements harness.Hostable: the client configuration without the
// endpoints (a host dials its own proxies). The leases a host's client is granted are
// revoked by that client's Close, or expire with their TTL.
func (b *Backend) HostConfig() (harness.HostConfig, error) {
	c := b.cfg
	c.Endpoints = nil
	raw, err := json.Marshal(c)
	return harness.HostConfig{Kind: "etcd", Config: raw}, err
}

// HostLockers makes a client host's etcd lock clients from a HostConfig's Config.
func HostLockers(raw []byte) (harness.LockerMaker, error) {
	var c Config
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("etcd: host config: %w", err)
	}
	return hostMaker{cfg: c, leases: newLeaseBook()}, nil
}

type hostMaker struct {
	cfg    Config
	leases *leaseBook
}

func (m hostMaker) NewLocker(ctx context.Context, _ int, addrs []string) (harness.Locker, error) {
	c := m.cfg
	c.Endpoints = addrs
	cli, err := DialKeepAlive(ctx, addrs, c.DialTimeout, c.KeepAlive)
	if err != nil {
		return nil, err
	}
	return &Locker{cfg: c, cli: cli, leases: m.leases}, nil
}

func (hostMaker) Close() error { return nil }
