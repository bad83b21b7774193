package leasetable

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencecheck/fencecheck/backend/sqlsession"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/internal/dbauth"
)

// pgNow is PostgreSQL's clock in the database-time statements: now(), the start of the
// statement's (autocommitted) transaction, in microseconds.
const pgNow = "CAST(EXTRACT(EPOCH FROM now()) * 1000000 AS BIGINT)"

// pgStore is the lock table in a PostgreSQL server: a private one fencecheck started,
// or an existing one given by DSN. Clients dial their proxied address with the DSN's
// credentials and settings.
type pgStore struct {
	conn *pgx.ConnConfig // the server's, with its real address
	addr string
	dsn  string // what conn was parsed from (a client host parses it again)
}

// parseDSN checks that dsn names one TCP host (a fault proxy must be able to stand in
// its way) and returns its config and address.
func parseDSN(dsn string) (*pgx.ConnConfig, string, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, "", fmt.Errorf("%s: bad PostgreSQL DSN: %w", Name, err) // pgx redacts the password
	}
	if len(cfg.Host) > 0 && cfg.Host[0] == '/' {
		return nil, "", fmt.Errorf("%s: the DSN names a Unix socket (%s); fencecheck needs a TCP host:port to put a fault proxy in the way", Name, cfg.Host)
	}
	for _, f := range cfg.Fallbacks {
		if f.Host != cfg.Host || f.Port != cfg.Port { // sslmode=prefer adds one for the same host
			return nil, "", fmt.Errorf("%s: the DSN names several hosts; give exactly one", Name)
		}
	}
	return cfg, net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))), nil
}

// openPG checks that the server at dsn answers and creates the lock table.
func openPG(ctx context.Context, dsn string) (*pgStore, error) {
	cfg, addr, err := parseDSN(dsn)
	if err != nil {
		return nil, err
	}
	s := &pgStore{conn: cfg, addr: addr, dsn: dsn}
	if err := s.setup(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// connect opens a connection to the server itself (not through a proxy).
func (s *pgStore) connect(ctx context.Context) (*pgx.Conn, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := pgx.ConnectConfig(cctx, s.conn.Copy())
	if refused := dbauth.Postgres(s.addr, s.conn.User, err); refused != nil {
		return nil, fmt.Errorf("%s: %w", Name, refused)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: no PostgreSQL server answers at %s: %w", Name, s.addr, sqlsession.ConnectHint(sqlsession.OneLine(err)))
	}
	return c, nil
}

// setup creates the lock table, one setup at a time (CREATE TABLE IF NOT EXISTS is not
// atomic against itself when runs share a server).
func (s *pgStore) setup(ctx context.Context) error {
	c, err := s.connect(ctx)
	if err != nil {
		return err
	}
	defer c.Close(context.WithoutCancel(ctx))
	tx, err := c.Begin(ctx)
	if err != nil {
		return fmt.Errorf("%s: setup: %w", Name, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	for _, q := range []string{"SELECT pg_advisory_xact_lock(7347298530119)", schema} {
		if _, err := tx.Exec(ctx, q); err != nil {
			return fmt.Errorf("%s: setup: %w", Name, sqlsession.OneLine(err))
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("%s: setup: %w", Name, err)
	}
	return nil
}

// Endpoint implements store.
func (s *pgStore) Endpoint() string { return s.addr }

// Statements implements store.
func (s *pgStore) Statements(clock Clock) statements {
	return newStatements(clock, pgNow, func(q string) string { return q })
}

// Session implements store: a connection of its own through addr, opened when first
// needed and again after it broke.
func (s *pgStore) Session(addr string) session { return &pgSession{s: s, addr: addr} }

// Admin implements store.
func (s *pgStore) Admin(ctx context.Context, q string, args ...any) ([]string, error) {
	c, err := s.connect(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Close(context.WithoutCancel(ctx))
	rows, err := c.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		vs, err := rows.Values()
		if err != nil {
			return nil, err
		}
		if len(vs) > 0 {
			out = append(out, fmt.Sprint(vs[0]))
		}
	}
	return out, rows.Err()
}

// Close implements store (the private server, if any, is the backend's to stop).
func (s *pgStore) Close() error { return nil }

// pgSession is one client's connection. Statements of one client are serialized (a
// renewal and a release never share the wire).
type pgSession struct {
	s    *pgStore
	addr string

	mu sync.Mutex
	c  *pgx.Conn
}

func (p *pgSession) conn(ctx context.Context) (*pgx.Conn, error) {
	if p.c != nil && !p.c.IsClosed() {
		return p.c, nil
	}
	host, port, err := net.SplitHostPort(p.addr)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: address %q: %w", harness.ErrNoEffect, Name, p.addr, err)
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: address %q: %w", harness.ErrNoEffect, Name, p.addr, err)
	}
	cfg := sqlsession.ProxiedPG(p.s.conn, host, uint16(n))
	cfg.RuntimeParams["application_name"] = "fencecheck-lease-table"
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: connect: %w", harness.ErrNoEffect, Name, sqlsession.ConnectHint(sqlsession.OneLine(err)))
	}
	p.c = c
	return c, nil
}

func (p *pgSession) Run(ctx context.Context, q string, args ...any) ([]int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c, err := p.conn(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := c.Query(ctx, q, args...)
	if err != nil {
		return nil, pgClassify(err)
	}
	var out []int64
	for rows.Next() {
		var f int64
		if err := rows.Scan(&f); err != nil {
			rows.Close()
			return nil, pgClassify(err)
		}
		out = append(out, f)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, pgClassify(err)
	}
	return out, nil
}

// pgClassify marks errors after which the statement certainly had no effect: the server
// answered with an ERROR, or pgx never sent it.
func pgClassify(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Severity == "ERROR" || pgconn.SafeToRetry(err) {
		return fmt.Errorf("%w: %w", harness.ErrNoEffect, err)
	}
	return err
}

func (p *pgSession) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.c == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	err := p.c.Close(ctx)
	p.c = nil
	return err
}
