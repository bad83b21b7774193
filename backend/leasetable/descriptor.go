package leasetable

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fencecheck/fencecheck/backend/pgadvisory"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/nemesis"
	"github.com/fencecheck/fencecheck/harness/proc"
	"github.com/fencecheck/fencecheck/harness/registry"
)

// Names of the backends.
const (
	Name           = "lease-table"
	NameClientTime = "lease-table-clienttime"
)

// Options.
const (
	// OptionStore picks the store: "sqlite" (the default) or "postgres" (a private
	// PostgreSQL server fencecheck starts).
	OptionStore = "lease-table-store"
	// OptionDSN points the backends at an existing PostgreSQL instead. It has no
	// environment default on purpose: one would silently turn every lease-table run,
	// catalogue rows included, into a run against an external server, and a run is
	// labelled "-external" only for options given on its command line.
	OptionDSN = "lease-table-dsn"
)

// Stores.
const (
	StoreSQLite   = "sqlite"
	StorePostgres = "postgres"
)

// DebianPackage provides the private PostgreSQL server (initdb, postgres).
const DebianPackage = pgadvisory.DebianPackage

func options() []registry.Option {
	return []registry.Option{
		{Name: OptionStore, Usage: "store of the lease-table backends: sqlite (embedded, the default) or postgres (a private PostgreSQL server fencecheck starts; Debian " + DebianPackage + ")"},
		{Name: OptionDSN, External: true, Usage: "existing PostgreSQL (libpq URL naming one TCP host) for the lease-table backends' lock table, instead of a store fencecheck starts (client-side faults only)"},
	}
}

// kind is where a run's lock table lives.
type kind int

const (
	kindSQLite kind = iota
	kindPostgres
	kindExternal
)

func kindOf(s registry.Settings) kind {
	switch {
	case s.Option(OptionDSN) != "":
		return kindExternal
	case s.Option(OptionStore) == StorePostgres:
		return kindPostgres
	}
	return kindSQLite
}

const externalWords = "an existing PostgreSQL (--" + OptionDSN + ")"

// Descriptors returns the registry entries: lease-table (the database's clock decides)
// and lease-table-clienttime (each client's clock does).
func Descriptors() []registry.Backend {
	d := func(name string, clock Clock, meaning string) registry.Backend {
		return registry.Backend{
			Name:    name,
			Meaning: meaning,
			Token:   "the row's fence column (bumped by the granting UPDATE)",
			Options: options(),
			Facts: registry.Facts{
				ClientClockExpiry: clock == ClientTime,
				// The row is in the file or the committed data: a restart keeps the lease.
				DurableLeases: true,
			},
			Lifecycle: registry.Lifecycle{
				Version: func(ctx context.Context, s registry.Settings) string {
					switch kindOf(s) {
					case kindExternal:
						return ""
					case kindPostgres:
						return proc.Version(ctx, pgadvisory.ServerNeed, "--version")
					}
					return proc.Embedded("SQLite: modernc.org/sqlite", "modernc.org/sqlite")
				},
				Check: func(s registry.Settings) error { return check(name, s) },
				Shape: func(s registry.Settings) registry.Shape { return shape(s, clock) },
				Setup: func(s registry.Settings) string { return setup(s, clock) },
				Needs: func(s registry.Settings) []proc.Need {
					if kindOf(s) == kindPostgres {
						return []proc.Need{pgadvisory.ServerNeed}
					}
					return nil
				},
				Start: func(ctx context.Context, env registry.Env) (harness.Backend, error) {
					return start(ctx, env, name, clock)
				},
			},
			Listing: registry.Listing{
				// One clock, the database's, decides every expiry.
				Service:     Name,
				Recommended: clock == DatabaseTime,
			},
		}
	}
	return []registry.Backend{
		d(Name, DatabaseTime, "the lease-table lock of job schedulers (ShedLock, Quartz's clustered JobStore, db-scheduler): a row per lock, taken by "+
			"UPDATE ... SET lock_until = now() + ttl, fence = fence + 1 WHERE name = ? AND lock_until <= now(), the database's clock deciding (ShedLock's usingDbTime()); "+
			"embedded SQLite, or PostgreSQL (--"+OptionStore+" postgres, --"+OptionDSN+")"),
		d(NameClientTime, ClientTime, "the lease-table lock with each client's own clock in lock_until and in the comparison (ShedLock's default): "+
			"a client whose clock runs ahead takes a lock the holder still holds by its own"),
	}
}

func check(name string, s registry.Settings) error {
	if s.TTL < 10*time.Millisecond {
		return fmt.Errorf("%s: --ttl %v is below 10ms, shorter than the timing noise of a database round trip here", name, s.TTL)
	}
	switch st := s.Option(OptionStore); st {
	case "", StoreSQLite, StorePostgres:
		if st == StoreSQLite && s.Option(OptionDSN) != "" {
			return fmt.Errorf("%s: --%s names a PostgreSQL server, but --%s is %s", name, OptionDSN, OptionStore, st)
		}
	default:
		return fmt.Errorf("%s: --%s must be %s or %s, got %q", name, OptionStore, StoreSQLite, StorePostgres, st)
	}
	if dsn := s.Option(OptionDSN); dsn != "" {
		if _, _, err := parseDSN(dsn); err != nil {
			return err
		}
	}
	return nil
}

// shape: every store's leases expire by the client's clock; SQLite and a private server
// are crashed and restarted by fencecheck (and keep the row, and its lease, across it);
// the clock that decides is fencecheck's to skew when it is a client's, or SQLite's (its
// now() is fencecheck's function), not PostgreSQL's.
func shape(s registry.Settings, clock Clock) registry.Shape {
	sh := registry.Shape{Locker: (*Locker)(nil), Lease: (*Lease)(nil)}
	switch kind, ct := kindOf(s), clock == ClientTime; {
	case kind == kindSQLite:
		sh.Backend = sqliteBackend{}
	case kind == kindPostgres && ct:
		sh.Backend = pgClocked{}
	case kind == kindPostgres:
		sh.Backend = pgBackend{}
	case ct:
		sh.Backend = externalClocked{}
	default:
		sh.Backend = externalBackend{}
	}
	return sh
}

func setup(s registry.Settings, clock Clock) string {
	who := "the database's clock (now())"
	if clock == ClientTime {
		who = "each client's clock"
	}
	switch kindOf(s) {
	case kindPostgres:
		return "a lock table in a private PostgreSQL cluster (Debian " + DebianPackage + ", initdb) on loopback; expiry by " + who
	case kindExternal:
		return "a lock table in an existing PostgreSQL; expiry by " + who
	}
	return "a lock table in an embedded SQLite database served on loopback; expiry by " + who
}

func start(ctx context.Context, env registry.Env, name string, clock Clock) (harness.Backend, error) {
	cfg := config{name: name, clock: clock, ttl: env.TTL, runID: env.RunID, clients: env.Clients, clientClock: env.ClientClock,
		closeStore: func() error { return nil }}
	switch kindOf(env.Settings) {
	case kindExternal:
		st, err := openPG(ctx, env.Option(OptionDSN))
		if err != nil {
			return nil, registry.Input(err) // the user's server
		}
		e := externalBackend{Backend: newBackend(cfg, st)}
		if clock == ClientTime {
			return externalClocked{e}, nil
		}
		return e, nil
	case kindPostgres:
		if why := proc.Missing(pgadvisory.ServerNeed); why != "" {
			return nil, registry.Input(errors.New(why)) // a package to install: one line, exit 2
		}
		dir, err := env.TempDir()
		if err != nil {
			return nil, err
		}
		log, _, err := env.LogFile("postgres.log")
		if err != nil {
			return nil, err
		}
		srv, err := pgadvisory.StartServer(ctx, pgadvisory.ServerConfig{Dir: dir, Log: log})
		if err != nil {
			return nil, err
		}
		st, err := openPG(ctx, srv.DSN())
		if err != nil {
			_ = srv.Close()
			return nil, err
		}
		cfg.closeStore = srv.Close
		p := pgBackend{Backend: newBackend(cfg, st), srv: srv, st: st}
		if clock == ClientTime {
			return pgClocked{p}, nil
		}
		return p, nil
	}
	dir, err := env.TempDir()
	if err != nil {
		return nil, err
	}
	cfg.dbClock = nemesis.NewClock()
	st, err := startSQLite(ctx, dir, cfg.dbClock)
	if err != nil {
		return nil, err
	}
	return sqliteBackend{Backend: newBackend(cfg, st), st: st}, nil
}

// sqliteBackend: the statement server crashes and restarts (the file survives, and the
// lease with it); the clock that decides is the database's or a client's, both
// fencecheck's.
type sqliteBackend struct {
	*Backend
	st *sqliteStore
}

var (
	_ harness.Crasher         = sqliteBackend{}
	_ registry.ServiceClocked = sqliteBackend{}
)

func only0(name string, i int) error {
	if i != 0 {
		return fmt.Errorf("%s: there is one lock table, not node %d", name, i)
	}
	return nil
}

// Crash implements harness.Crasher: the statement server stops at once.
func (s sqliteBackend) Crash(_ context.Context, i int) error {
	if err := only0(s.name, i); err != nil {
		return err
	}
	return s.st.Crash()
}

// Restart implements harness.Crasher: on the database file (keepData) or a new one.
func (s sqliteBackend) Restart(ctx context.Context, i int, keepData bool) error {
	if err := only0(s.name, i); err != nil {
		return err
	}
	return s.st.Restart(ctx, keepData)
}

// ServiceClock implements registry.ServiceClocked.
func (s sqliteBackend) ServiceClock(ctx context.Context) (string, *nemesis.Clock, error) {
	return s.serviceClock(ctx)
}

// pgBackend is the table on a private PostgreSQL server: one real process (node faults
// are real signals), crashed with SIGKILL and restarted with crash recovery or on a
// fresh cluster.
type pgBackend struct {
	*Backend
	srv *pgadvisory.Server
	st  *pgStore
}

var (
	_ harness.Crasher      = pgBackend{}
	_ harness.ProcessNodes = pgBackend{}
)

// Nodes implements harness.ProcessNodes.
func (p pgBackend) Nodes() int { return 1 }

// NodePID implements harness.ProcessNodes.
func (p pgBackend) NodePID(i int) int {
	if i != 0 {
		return 0
	}
	return p.srv.PID()
}

// PauseNode implements harness.ProcessNodes: SIGSTOP to the server's processes.
func (p pgBackend) PauseNode(_ context.Context, i int) error {
	if err := only0(p.name, i); err != nil {
		return err
	}
	return p.srv.Pause()
}

// ResumeNode implements harness.ProcessNodes.
func (p pgBackend) ResumeNode(_ context.Context, i int) error {
	if err := only0(p.name, i); err != nil {
		return err
	}
	return p.srv.Resume()
}

// Crash implements harness.Crasher: SIGKILL.
func (p pgBackend) Crash(_ context.Context, i int) error {
	if err := only0(p.name, i); err != nil {
		return err
	}
	return p.srv.Crash()
}

// Restart implements harness.Crasher: after crash recovery (keepData), or on a fresh
// cluster with the table created again (its fences start again at 1).
func (p pgBackend) Restart(ctx context.Context, i int, keepData bool) error {
	if err := only0(p.name, i); err != nil {
		return err
	}
	if err := p.srv.Restart(ctx, keepData); err != nil {
		return err
	}
	if !keepData {
		return p.st.setup(ctx)
	}
	return nil
}

// pgClocked is pgBackend with client time: the deciding clock is a client's.
type pgClocked struct{ pgBackend }

var _ registry.ServiceClocked = pgClocked{}

// ServiceClock implements registry.ServiceClocked.
func (p pgClocked) ServiceClock(ctx context.Context) (string, *nemesis.Clock, error) {
	return p.serviceClock(ctx)
}

// externalBackend is the table on a server fencecheck did not start.
type externalBackend struct{ *Backend }

var _ harness.External = externalBackend{}

// External implements harness.External.
func (externalBackend) External() string { return externalWords }

// externalClocked is externalBackend with client time.
type externalClocked struct{ externalBackend }

var _ registry.ServiceClocked = externalClocked{}

// ServiceClock implements registry.ServiceClocked.
func (e externalClocked) ServiceClock(ctx context.Context) (string, *nemesis.Clock, error) {
	return e.serviceClock(ctx)
}
