// Package postgres is the fenced resource as a row in a real PostgreSQL server, reached
// with github.com/jackc/pgx/v5 through each client's own fault-proxy link.
//
// The server is yours: give its DSN (--postgres-dsn or FENCECHECK_POSTGRES_DSN). The
// tables fencecheck_register and fencecheck_outbox are created if missing (in the first
// schema of the DSN's search_path); every run works on its own row, keyed "run-<random>",
// and deletes its rows when it ends, so runs can share a database, even concurrently.
// The SQL and the client logic are sqldb's; this package supplies the dialect:
//
//	postgres                      one conditional UPDATE ... WHERE key = $3 AND token < $2
//	postgres-toctou               SELECT token, then UPDATE without the condition, autocommitted
//	postgres-toctou-tx            the same inside one READ COMMITTED transaction (the default)
//	postgres-toctou-serializable  the same inside one SERIALIZABLE transaction
//	postgres-toctou-forupdate     the same with SELECT ... FOR UPDATE, READ COMMITTED
//	postgres-outbox               fenced UPDATE + INSERT into the outbox, one transaction
//	postgres-direct               the client calls the side-effect sink, then the fenced UPDATE
//
// Every client's connection goes through its proxied address (the DSN's host and port
// are the resource's endpoint; its user, password, database, TLS and other settings are
// kept), so a paused client's connection stalls and a delayed write is held in the
// network for real. The outbox relay and setup use a direct connection of their own.
package postgres

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/fencecheck/fencecheck/internal/dbauth"
	"github.com/fencecheck/fencecheck/resource/sqldb"
)

// EnvDSN is the environment variable read when no DSN is given.
const EnvDSN = "FENCECHECK_POSTGRES_DSN"

// ErrUnavailable marks a PostgreSQL that cannot be used as given: no DSN, a bad DSN, an
// unreachable server, refused credentials, no right to create the tables. It is the
// user's configuration, not an internal failure.
var ErrUnavailable = errors.New("PostgreSQL unavailable")

// Dialect is PostgreSQL's sqldb dialect.
var Dialect = &sqldb.Dialect{
	Name:     "postgres",
	SerialPK: "BIGSERIAL PRIMARY KEY",
	Modes: map[string]sqldb.Mode{
		"":                    sqldb.Fenced,
		"toctou":              sqldb.TOCTOU,
		"toctou-tx":           sqldb.TOCTOUTx,
		"toctou-serializable": sqldb.TOCTOUSerializable,
		"toctou-forupdate":    sqldb.TOCTOULocked,
		"outbox":              sqldb.Outbox,
		"direct":              sqldb.Direct,
	},
	// Concurrent runs must not race on CREATE TABLE IF NOT EXISTS (it is not atomic
	// against itself in PostgreSQL): one setup at a time.
	SetupFirst: []string{"SELECT pg_advisory_xact_lock(7347298530117)"},
	Retryable:  conflict,
	NoEffect:   definite,
}

// conflict: serialization_failure (40001) or deadlock_detected (40P01): the server
// rolled the transaction back; it is retried.
func conflict(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01")
}

// definite: the server answered the statement with an ERROR (the statement, and its
// transaction, had no effect), or pgx never sent it. FATAL and PANIC answers end the
// session at an unknown point and are left ambiguous.
func definite(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Severity == "ERROR"
	}
	return pgconn.SafeToRetry(err)
}

// Names lists the resource names of this package, sorted.
func Names() []string { return Dialect.Names() }

// Mode returns the mode of a postgres resource name.
func Mode(name string) (sqldb.Mode, bool) { return Dialect.ParseName(name) }

// Config configures a PostgreSQL resource.
type Config struct {
	// Name is the resource name (see Names).
	Name string
	// Fence is "strict" (default) or "monotonic".
	Fence string
	// DSN is a libpq connection string or URL naming one TCP host, e.g.
	// postgres://fencecheck:secret@127.0.0.1:5432/fencecheck?sslmode=disable.
	DSN string
	// ConnectTimeout bounds connecting and setting up (default 5s, or the DSN's
	// connect_timeout).
	ConnectTimeout time.Duration
}

// ParseDSN parses and checks a DSN, returning the config and the server's host:port.
func ParseDSN(dsn string) (*pgx.ConnConfig, string, error) {
	if strings.TrimSpace(dsn) == "" {
		return nil, "", fmt.Errorf("%w: no PostgreSQL server configured: give --postgres-dsn or set %s (e.g. postgres://user:password@127.0.0.1:5432/dbname)", ErrUnavailable, EnvDSN)
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		// pgx redacts the password in its parse errors.
		return nil, "", fmt.Errorf("%w: bad PostgreSQL DSN: %v", ErrUnavailable, err)
	}
	if strings.HasPrefix(cfg.Host, "/") {
		return nil, "", fmt.Errorf("%w: the PostgreSQL DSN names a Unix socket (%s); fencecheck needs a TCP host:port, so that it can put a fault proxy in the way", ErrUnavailable, cfg.Host)
	}
	for _, fb := range cfg.Fallbacks {
		if fb.Host != cfg.Host || fb.Port != cfg.Port {
			return nil, "", fmt.Errorf("%w: the PostgreSQL DSN names several hosts (%s:%d, %s:%d); give one", ErrUnavailable, cfg.Host, cfg.Port, fb.Host, fb.Port)
		}
	}
	return cfg, net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))), nil
}

// New connects (within ConnectTimeout), creates the tables if missing and the run's row,
// and returns the resource. Every configuration problem wraps ErrUnavailable.
func New(ctx context.Context, cfg Config) (*sqldb.Resource, error) {
	mode, ok := Mode(cfg.Name)
	if !ok {
		return nil, fmt.Errorf("unknown postgres resource %q (known: %s)", cfg.Name, strings.Join(Names(), ", "))
	}
	base, endpoint, err := ParseDSN(cfg.DSN)
	if err != nil {
		return nil, err
	}
	timeout := cfg.ConnectTimeout
	if timeout <= 0 {
		timeout = 5 * time.Second
		if base.ConnectTimeout > 0 {
			timeout = base.ConnectTimeout
		}
	}
	base.ConnectTimeout = timeout
	describe := fmt.Sprintf("PostgreSQL at %s (user %s, database %s)", endpoint, base.User, base.Database)

	admin := stdlib.OpenDB(*base)
	admin.SetMaxOpenConns(2)
	admin.SetMaxIdleConns(2)
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := admin.PingContext(cctx); err != nil {
		_ = admin.Close()
		if refused := dbauth.Postgres(endpoint, base.User, err); refused != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnavailable, refused)
		}
		return nil, fmt.Errorf("%w: cannot connect to %s within %v: %v", ErrUnavailable, describe, timeout, err)
	}
	key, err := runKey()
	if err != nil {
		_ = admin.Close()
		return nil, err
	}
	r, err := sqldb.New(cctx, sqldb.Config{
		Dialect: Dialect, Mode: mode, Fence: cfg.Fence, Key: key, Admin: admin,
		DBEndpoints: []string{endpoint}, DeleteRows: true, Describe: describe,
		OpenClient: func(_ context.Context, addrs []string, _ sqldb.Mode) (*sql.DB, error) {
			return openProxied(base, addrs[0]), nil
		},
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return r, nil
}

// openProxied opens one client's connection: the DSN's settings, dialled at addr (the
// client's proxy link) instead of the DSN's host. One connection, like one process.
func openProxied(base *pgx.ConnConfig, addr string) *sql.DB {
	cc := base.Copy()
	cc.LookupFunc = func(_ context.Context, host string) ([]string, error) { return []string{host}, nil }
	cc.DialFunc = func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}
	// No liveness ping before reusing the idle connection: the write itself is what a
	// fault must hold in the network, not a ping in front of it.
	db := stdlib.OpenDB(*cc, stdlib.OptionShouldPing(func(context.Context, stdlib.ShouldPingParams) bool { return false }))
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	return db
}

func runKey() (string, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return "run-" + hex.EncodeToString(b), nil
}
