package pgadvisory

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencecheck/fencecheck/harness"
)

// hostConfig is what a client host needs to build a PostgreSQL advisory-lock client.
// DSN holds the server's credentials: it travels in the host's environment only, and
// no message prints it.
type hostConfig struct {
	TTLms   int64     `json:"ttl_ms"`
	Token   TokenKind `json:"token"`
	Name    string    `json:"name"`
	Bouncer bool      `json:"bouncer,omitempty"`
	Key     int64     `json:"key"`
	DSN     string    `json:"dsn"`
}

// HostConfig implements harness.Hostable.
func (b *Backend) HostConfig() (harness.HostConfig, error) {
	if b.dsn == "" {
		return harness.HostConfig{}, fmt.Errorf("%s: no DSN to give a client host", b.Name())
	}
	raw, err := json.Marshal(hostConfig{TTLms: b.cfg.TTL.Milliseconds(), Token: b.cfg.Token, Name: b.Name(), Bouncer: b.cfg.Bouncer, Key: b.key, DSN: b.dsn})
	hc := harness.HostConfig{Kind: "postgres-advisory", Config: raw, Expiring: true}
	if b.cfg.Token == TokenNone {
		hc.NoToken = NoTokenReason
	}
	return hc, err
}

// HostLockers makes a client host's advisory-lock clients from a HostConfig's Config:
// the same NewLocker as in fencecheck, on a Backend that holds only the client settings.
func HostLockers(raw []byte) (harness.LockerMaker, error) {
	var c hostConfig
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("%s: host config: %w", Name, err)
	}
	if c.TTLms <= 0 {
		return nil, fmt.Errorf("%s: host config: TTL must be positive, got %d ms", Name, c.TTLms)
	}
	conn, addr, err := parseDSN(c.DSN)
	if err != nil {
		return nil, err
	}
	if c.Bouncer {
		conn.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	}
	b := &Backend{cfg: Config{TTL: time.Duration(c.TTLms) * time.Millisecond, Token: c.Token, Bouncer: c.Bouncer, name: c.Name}, conn: conn, addr: addr, key: c.Key, dsn: c.DSN}
	return hostMaker{b}, nil
}

type hostMaker struct{ b *Backend }

func (m hostMaker) NewLocker(ctx context.Context, id int, addrs []string) (harness.Locker, error) {
	return m.b.NewLocker(ctx, id, addrs)
}

func (hostMaker) Close() error { return nil }
