package pgadvisory

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencecheck/fencecheck/harness/proc"
)

// BouncerPackage provides pgbouncer.
const BouncerPackage = "pgbouncer"

// BouncerPoolSize is the number of server connections PgBouncer keeps to PostgreSQL.
// One, fixed, so the outcome does not depend on which pooled connection a statement
// happens to get: every client's statements run on the same PostgreSQL session, which
// is exactly the sharing transaction pooling introduces (with more connections the same
// things happen, on whichever connection the pool hands out).
const BouncerPoolSize = 1

// Bouncer is a PgBouncer in pool_mode = transaction in front of a Server, on 127.0.0.1.
type Bouncer struct {
	addr string
	ini  string
	p    *proc.Process
}

// BouncerNeed is the pgbouncer program.
var BouncerNeed = proc.Need{Program: "pgbouncer", Package: BouncerPackage}

// findBouncer returns the pgbouncer binary.
func findBouncer() (string, error) {
	p, err := BouncerNeed.Find()
	if err != nil {
		return "", fmt.Errorf("postgres-advisory-pgbouncer: %w", err)
	}
	return p, nil
}

// BouncerAvailable is nil when a PostgreSQL server and a PgBouncer can be started here,
// or an error (wrapping proc.ErrNotFound) naming the Debian package to install.
func BouncerAvailable() error {
	if err := Available(); err != nil {
		return err
	}
	_, err := findBouncer()
	return err
}

// BouncerConfig says how to start a PgBouncer.
type BouncerConfig struct {
	// PoolSize is the number of server connections (default BouncerPoolSize).
	PoolSize int
	// TTL, when positive, becomes the idle_session_timeout of the pooled server
	// connections (connect_query): the clients' own setting cannot reach the server
	// (PgBouncer refuses unknown startup parameters; it is listed in
	// ignore_startup_parameters, as teams do, so that the clients are let in).
	TTL time.Duration
	// Log receives PgBouncer's log (nil: discarded).
	Log io.Writer
}

// StartBouncer starts PgBouncer in pool_mode = transaction on a free loopback port in
// front of s, as the user s runs as (PgBouncer, like PostgreSQL, refuses to run as
// root), and waits until a query goes through it.
func StartBouncer(ctx context.Context, s *Server, cfg BouncerConfig) (*Bouncer, error) {
	if cfg.PoolSize <= 0 {
		cfg.PoolSize = BouncerPoolSize
	}
	bin, err := findBouncer()
	if err != nil {
		return nil, err
	}
	host, sport, _ := net.SplitHostPort(s.Addr())
	b := &Bouncer{ini: filepath.Join(s.Dir(), "pgbouncer.ini")}
	if _, _, err := proc.OnFreePort(ctx, 0, func(port int, addr string) error {
		b.addr = addr
		return b.start(ctx, s, cfg, bin, host, sport, port)
	}); err != nil {
		return nil, err
	}
	return b, nil
}

// start writes the configuration for port and starts PgBouncer on it.
func (b *Bouncer) start(ctx context.Context, s *Server, cfg BouncerConfig, bin, host, sport string, port int) error {
	connect := ""
	if cfg.TTL > 0 {
		connect = fmt.Sprintf(" connect_query='SET idle_session_timeout = %d'", cfg.TTL.Milliseconds())
	}
	ini := fmt.Sprintf(`[databases]
postgres = host=%s port=%s dbname=postgres user=postgres pool_size=%d%s

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = any
pool_mode = transaction
default_pool_size = %d
min_pool_size = 0
reserve_pool_size = 0
max_client_conn = 500
ignore_startup_parameters = idle_session_timeout
log_connections = 0
log_disconnections = 0
`, host, sport, cfg.PoolSize, connect, port, cfg.PoolSize)
	// No secret in it (trust on loopback); readable by the postgres user.
	if err := os.WriteFile(b.ini, []byte(ini), 0o644); err != nil {
		return fmt.Errorf("postgres-advisory-pgbouncer: %w", err)
	}
	args := append(append([]string(nil), s.run...), bin, b.ini)
	dsn := b.DSN()
	p, err := proc.Start(ctx, proc.Config{
		Name: "pgbouncer on " + b.addr, Path: args[0], Args: args[1:], Log: cfg.Log,
		ReadyTimeout: 30 * time.Second,
		Ready:        func(ctx context.Context) error { return pingSimple(ctx, dsn) },
	})
	if err != nil {
		return err
	}
	b.p = p
	return nil
}

// pingSimple is ping through PgBouncer (the simple protocol: no prepared statement).
func pingSimple(ctx context.Context, dsn string) error {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return err
	}
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c, err := pgx.ConnectConfig(cctx, cfg)
	if err != nil {
		return err
	}
	defer c.Close(context.WithoutCancel(cctx))
	_, err = c.Exec(cctx, "SELECT 1")
	return err
}

// Addr is PgBouncer's host:port.
func (b *Bouncer) Addr() string { return b.addr }

// DSN is PgBouncer's DSN (any user is let in, and logs in to PostgreSQL as postgres).
func (b *Bouncer) DSN() string {
	return "postgres://postgres@" + b.addr + "/postgres?sslmode=disable"
}

// PID is PgBouncer's process id.
func (b *Bouncer) PID() int { return b.p.PID() }

// Close stops PgBouncer (proc's SIGTERM, PgBouncer's immediate shutdown; its SIGINT
// would wait for the clients' transactions) and removes its config. Safe to call twice.
func (b *Bouncer) Close() error {
	if b == nil || b.p == nil {
		return nil
	}
	err := b.p.Close()
	if rerr := os.Remove(b.ini); rerr != nil && !errors.Is(rerr, os.ErrNotExist) && err == nil {
		err = fmt.Errorf("postgres-advisory-pgbouncer: %w", rerr)
	}
	return err
}
