package mariadblock

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/fencecheck/fencecheck/harness"
)

// hostConfig is what a client host needs to build a MariaDB GET_LOCK client. DSN holds
// the server's credentials: it travels in the host's environment only, and no message
// prints it.
type hostConfig struct {
	TTLms int64     `json:"ttl_ms"`
	Token TokenKind `json:"token"`
	Name  string    `json:"name"`
	Lock  string    `json:"lock"`
	DSN   string    `json:"dsn"`
}

// HostConfig implements harness.Hostable.
func (b *Backend) HostConfig() (harness.HostConfig, error) {
	raw, err := json.Marshal(hostConfig{TTLms: b.cfg.TTL.Milliseconds(), Token: b.cfg.Token, Name: b.Name(), Lock: b.lock, DSN: b.conn.FormatDSN()})
	hc := harness.HostConfig{Kind: "mariadb-lock", Config: raw, Expiring: true}
	if b.cfg.Token == TokenNone {
		hc.NoToken = NoTokenReason
	}
	return hc, err
}

// HostLockers makes a client host's GET_LOCK clients from a HostConfig's Config: the
// same NewLocker as in fencecheck, on a Backend that holds only the client settings.
func HostLockers(raw []byte) (harness.LockerMaker, error) {
	var c hostConfig
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("%s: host config: %w", Name, err)
	}
	if c.TTLms <= 0 {
		return nil, fmt.Errorf("%s: host config: TTL must be positive, got %d ms", Name, c.TTLms)
	}
	conn, err := mysql.ParseDSN(c.DSN)
	if err != nil {
		return nil, fmt.Errorf("%s: host config: the server's DSN does not parse", Name) // never the DSN itself
	}
	b := &Backend{cfg: Config{TTL: time.Duration(c.TTLms) * time.Millisecond, Token: c.Token, name: c.Name}, conn: conn, lock: c.Lock}
	return hostMaker{b}, nil
}

type hostMaker struct{ b *Backend }

func (m hostMaker) NewLocker(ctx context.Context, id int, addrs []string) (harness.Locker, error) {
	return m.b.NewLocker(ctx, id, addrs)
}

func (hostMaker) Close() error { return nil }
