package leasetable

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/nemesis"
)

// hostConfig is what a client host needs to build a lease-table client. A client
// reaches the table over TCP in every store — SQLite through fencecheck's statement
// server, PostgreSQL as a database client — so a host dials its proxied address like an
// in-process client. DSN (PostgreSQL only) holds the server's credentials: it travels in
// the host's environment only, and no message prints it.
type hostConfig struct {
	Name  string `json:"name"`
	Clock Clock  `json:"clock"`
	TTLus int64  `json:"ttl_us"`
	Lock  string `json:"lock"`
	Store string `json:"store"` // StoreSQLite or StorePostgres (a private or an existing server)
	DSN   string `json:"dsn,omitempty"`
}

// HostConfig implements harness.Hostable. A hosted client reads its host's clock, not
// the harness's clock of that client nor its machine's drift: a run with a client clock
// fault keeps it in-process.
func (b *Backend) HostConfig() (harness.HostConfig, error) {
	c := hostConfig{Name: b.name, Clock: b.clock, TTLus: b.ttl.Microseconds(), Lock: b.lock}
	switch st := b.st.(type) {
	case *sqliteStore:
		c.Store = StoreSQLite
	case *pgStore:
		if st.dsn == "" {
			return harness.HostConfig{}, fmt.Errorf("%s: no DSN to give a client host", b.name)
		}
		c.Store, c.DSN = StorePostgres, st.dsn
	default:
		return harness.HostConfig{}, fmt.Errorf("%s: a store of type %T cannot be reached from a client host", b.name, b.st)
	}
	raw, err := json.Marshal(c)
	return harness.HostConfig{Kind: Name, Config: raw, Expiring: true}, err
}

// HostLockers makes a client host's lease-table clients from a HostConfig's Config: the
// same NewLocker as in fencecheck, on a Backend that holds only the client settings and
// a store that only opens sessions.
func HostLockers(raw []byte) (harness.LockerMaker, error) {
	var c hostConfig
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("%s: host config: %w", Name, err)
	}
	if c.TTLus <= 0 {
		return nil, fmt.Errorf("%s: host config: TTL must be positive, got %d µs", Name, c.TTLus)
	}
	if c.Clock != DatabaseTime && c.Clock != ClientTime {
		return nil, fmt.Errorf("%s: host config: clock must be %q or %q, got %q", Name, DatabaseTime, ClientTime, c.Clock)
	}
	if c.Lock == "" || c.Name == "" {
		return nil, fmt.Errorf("%s: host config: no lock name or backend name", Name)
	}
	var st store
	switch c.Store {
	case StoreSQLite:
		st = &sqliteStore{} // its sessions are HTTP clients of the statement server
	case StorePostgres:
		conn, addr, err := parseDSN(c.DSN)
		if err != nil {
			return nil, err // parseDSN's message never holds the DSN
		}
		st = &pgStore{conn: conn, addr: addr, dsn: c.DSN}
	default:
		return nil, fmt.Errorf("%s: host config: store must be %q or %q, got %q", Name, StoreSQLite, StorePostgres, c.Store)
	}
	b := &Backend{
		name: c.Name, clock: c.Clock, ttl: time.Duration(c.TTLus) * time.Microsecond, lock: c.Lock,
		st: st, stmts: st.Statements(c.Clock),
		clientClock: func(int) func() time.Time { return time.Now },
		drift:       map[int]*nemesis.Clock{},
	}
	return hostMaker{b}, nil
}

type hostMaker struct{ b *Backend }

func (m hostMaker) NewLocker(ctx context.Context, id int, addrs []string) (harness.Locker, error) {
	return m.b.NewLocker(ctx, id, addrs)
}

func (hostMaker) Close() error { return nil }
