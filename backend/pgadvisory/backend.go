// Package pgadvisory is the "postgres-advisory" lock backend: PostgreSQL's session-level
// advisory lock, pg_try_advisory_lock(key), held on a session connection of its own per
// grant (pgx v5, through the client's fault proxy). The lock lives exactly as long as
// the session; the session is given idle_session_timeout = TTL and pinged every TTL/3,
// so a client that stops talking for a TTL loses its session and the lock with it.
//
// PostgreSQL hands out no fencing token with the lock. The token options are the ones
// teams use: nextval of a sequence taken in the grant's statement (TokenSequence), the
// granting statement's pg_current_xact_id() (TokenXact), and none (TokenNone,
// harness.Tokenless).
//
// The server is a private cluster fencecheck creates with initdb and starts on an
// ephemeral loopback port (node faults apply: SIGSTOP of the postmaster's group, SIGKILL
// and crash recovery), or an existing server given by DSN (client-side faults only).
package pgadvisory

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencecheck/fencecheck/backend/sqlsession"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/proc"
	"github.com/fencecheck/fencecheck/internal/dbauth"
)

// TokenKind chooses what a grant hands out as its fencing token.
type TokenKind string

const (
	// TokenSequence is nextval('fencecheck_lock_token') evaluated in the statement
	// that takes the lock (only when it is granted). Sequences are WAL-logged, so the
	// values go on increasing after a crash (skipping up to 32).
	TokenSequence TokenKind = "sequence"
	// TokenXact is pg_current_xact_id() of the statement that takes the lock: the
	// 64-bit transaction id assigned to it.
	TokenXact TokenKind = "xact"
	// TokenNone hands out no token (harness.Tokenless).
	TokenNone TokenKind = "none"
)

// NoTokenReason is why TokenNone cannot be fenced.
const NoTokenReason = "no fencing token: pg_try_advisory_lock returns only true or false, so the lock cannot be made safe by fencing"

// Name is the backend's name.
const Name = "postgres-advisory"

// Config configures the backend.
type Config struct {
	// TTL is the session's idle_session_timeout (whole milliseconds, at least 100 ms):
	// a holder silent for that long loses its session and the lock.
	TTL time.Duration
	// Token is the token kind (default TokenSequence).
	Token TokenKind
	// Dir holds the private cluster; required unless DSN is set.
	Dir string
	// LogWriter receives initdb's and the server's output (nil: discarded).
	LogWriter io.Writer
	// DSN is an existing server (a libpq URL or key=value string naming one TCP host):
	// no server is started and node faults do not apply.
	DSN string
	// Port of the started server (0: a free one).
	Port int
	// Bouncer puts a PgBouncer in pool_mode = transaction (BouncerPoolSize server
	// connections) between the clients and the private server: the clients' sessions
	// are PgBouncer's client connections, and the advisory lock is taken on whichever
	// pooled server connection runs the statement. Not with DSN.
	Bouncer bool
	// IdleSessionTimeout is the idle_session_timeout each lock session asks for: 0 means
	// the TTL (the client pings every TTL/3, so a healthy session never idles that long);
	// negative asks for none and leaves the server's own setting (PostgreSQL's default
	// is 0, no limit), under which a holder cut off by a silent network keeps its session
	// and the lock until the network heals.
	IdleSessionTimeout time.Duration

	name string // the registered name (default Name)
}

func (c Config) withDefaults() Config {
	if c.Token == "" {
		c.Token = TokenSequence
	}
	return c
}

// Validate checks the configuration.
func (c Config) Validate() error {
	c = c.withDefaults()
	if c.TTL < 100*time.Millisecond || c.TTL%time.Millisecond != 0 {
		return fmt.Errorf("%s: TTL %v must be whole milliseconds, at least 100ms (idle_session_timeout is in ms; shorter, a loaded machine ends healthy sessions)", Name, c.TTL)
	}
	switch c.Token {
	case TokenSequence, TokenXact, TokenNone:
	default:
		return fmt.Errorf("%s: token must be %q, %q or %q, got %q", Name, TokenSequence, TokenXact, TokenNone, c.Token)
	}
	if c.IdleSessionTimeout > 0 && c.IdleSessionTimeout%time.Millisecond != 0 {
		return fmt.Errorf("%s: idle_session_timeout %v must be whole milliseconds", Name, c.IdleSessionTimeout)
	}
	if c.DSN != "" {
		if _, _, err := parseDSN(c.DSN); err != nil {
			return err
		}
		if c.Bouncer {
			return fmt.Errorf("%s: a PgBouncer is started only in front of a private server, not with a DSN", Name)
		}
	} else if c.Dir == "" {
		return fmt.Errorf("%s: Dir is required to start a server", Name)
	}
	return nil
}

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

// Backend is the postgres-advisory lock backend.
type Backend struct {
	cfg  Config
	conn *pgx.ConnConfig // the server's, with its address
	dsn  string          // what conn was parsed from (a client host parses it again)
	addr string
	key  int64
	seen atomic.Int64

	bouncer *Bouncer // between the clients and the server (Config.Bouncer), or nil

	// The started server as node 0 (no node for an external one): the node faults.
	proc.Group[*Server]
}

var (
	_ harness.Backend      = (*Backend)(nil)
	_ harness.ProcessNodes = (*Backend)(nil)
	_ harness.Crasher      = (*Backend)(nil)
	_ harness.Tokenless    = tokenless{}
)

// Start starts a private cluster (or checks the server at cfg.DSN), creates the token
// sequence and returns the backend.
func Start(ctx context.Context, cfg Config) (_ *Backend, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	b := &Backend{cfg: cfg, key: randomKey(), Group: proc.Group[*Server]{Name: Name}}
	dsn := cfg.DSN
	if dsn == "" {
		var settings []string
		if cfg.Token == TokenXact {
			// pg_current_xact_id() is reused after a crash when the commit records of
			// the grants that took it were still in the server's WAL buffers (the
			// granting statement writes no data, so its commit is not flushed: the
			// WAL writer writes it within wal_writer_delay, 200 ms by default). At the
			// longest delay the window spans the whole run, so a crash shows the
			// reuse on every run, not only when it happens to fall inside 200 ms.
			settings = append(settings, "wal_writer_delay=10000")
		}
		s, err := StartServer(ctx, ServerConfig{Dir: cfg.Dir, Port: cfg.Port, Log: cfg.LogWriter, Settings: settings})
		if err != nil {
			return nil, err
		}
		b.Servers = []*Server{s}
		defer func() {
			if err != nil {
				_ = s.Close()
			}
		}()
		dsn = s.DSN()
		if cfg.Bouncer {
			if b.bouncer, err = StartBouncer(ctx, s, BouncerConfig{TTL: cfg.TTL, Log: cfg.LogWriter}); err != nil {
				return nil, err
			}
			defer func() {
				if err != nil {
					_ = b.bouncer.Close()
				}
			}()
			dsn = b.bouncer.DSN()
		}
	}
	if b.conn, b.addr, err = parseDSN(dsn); err != nil {
		return nil, err
	}
	b.dsn = dsn
	if cfg.Bouncer {
		// PgBouncer hands each transaction to any pooled server connection: a statement
		// prepared on one would be missing on the next (pgx's default caches them).
		b.conn.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	}
	if err := b.setup(ctx); err != nil {
		return nil, err
	}
	return b, nil
}

// randomKey is the advisory lock key: random, so runs sharing a server do not share
// the lock.
func randomKey() int64 {
	var k [8]byte
	_, _ = rand.Read(k[:])
	return int64(binary.BigEndian.Uint64(k[:]) >> 1)
}

// setup creates the token sequence, one setup at a time (CREATE ... IF NOT EXISTS is
// not atomic against itself).
func (b *Backend) setup(ctx context.Context) error {
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := pgx.ConnectConfig(sctx, b.conn.Copy())
	if refused := dbauth.Postgres(b.addr, b.conn.User, err); refused != nil {
		return fmt.Errorf("%s: %w", Name, refused)
	}
	if err != nil {
		return fmt.Errorf("%s: no PostgreSQL server answers at %s: %w", Name, b.addr, sqlsession.ConnectHint(sqlsession.OneLine(err)))
	}
	defer c.Close(context.WithoutCancel(sctx))
	tx, err := c.Begin(sctx)
	if err != nil {
		return fmt.Errorf("%s: setup: %w", Name, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(sctx)) }()
	for _, q := range []string{
		"SELECT pg_advisory_xact_lock(7347298530118)",
		"CREATE SEQUENCE IF NOT EXISTS fencecheck_lock_token",
	} {
		if _, err := tx.Exec(sctx, q); err != nil {
			return fmt.Errorf("%s: setup (%s): %w", Name, q, err)
		}
	}
	if err := tx.Commit(sctx); err != nil {
		return fmt.Errorf("%s: setup: %w", Name, err)
	}
	return nil
}

// Name implements harness.Backend.
func (b *Backend) Name() string {
	switch {
	case b.cfg.name != "":
		return b.cfg.name
	case b.cfg.Bouncer:
		return BouncerName
	}
	return Name
}

// LeaseTTL is the lease's TTL, the session's idle limit unless Config.IdleSessionTimeout
// says otherwise (registry.LeaseTimed).
func (b *Backend) LeaseTTL() time.Duration { return b.cfg.TTL }

// Endpoints implements harness.Backend.
func (b *Backend) Endpoints() []string { return []string{b.addr} }

// Token is the backend's token kind.
func (b *Backend) Token() TokenKind { return b.cfg.Token }

// Close implements harness.Backend: it stops the started PgBouncer and server. Safe to
// call twice.
func (b *Backend) Close() error {
	berr := b.bouncer.Close()
	return errors.Join(berr, b.Group.Close())
}

// BouncerPID is the PgBouncer's process id (0 without one).
func (b *Backend) BouncerPID() int {
	if b.bouncer == nil {
		return 0
	}
	return b.bouncer.PID()
}

// ServerDSN is the superuser DSN of the started server itself, past any PgBouncer
// ("" for an external server).
func (b *Backend) ServerDSN() string {
	if len(b.Servers) == 0 {
		return ""
	}
	return b.Servers[0].DSN()
}

// Key is the advisory lock key of the run.
func (b *Backend) Key() int64 { return b.key }

// tokenless is a TokenNone backend on a private server: harness.Tokenless, with every
// capability of Backend.
type tokenless struct{ *Backend }

// NoFencingToken implements harness.Tokenless.
func (tokenless) NoFencingToken() string { return NoTokenReason }

// NewLocker implements harness.Backend: sessions of addrs[0] only.
func (b *Backend) NewLocker(_ context.Context, _ int, addrs []string) (harness.Locker, error) {
	if len(addrs) != 1 {
		return nil, fmt.Errorf("%w: %s: want 1 address, got %d", harness.ErrNoEffect, Name, len(addrs))
	}
	return sqlsession.NewLocker(sqlsession.Config{
		Name: b.Name(), TTL: b.cfg.TTL, Dial: b.dial,
		NoToken: b.cfg.Token == TokenNone, Seen: &b.seen,
	}, addrs[0]), nil
}

// dial opens a session to addr with the server's credentials and the TTL as its idle
// limit.
func (b *Backend) dial(ctx context.Context, addr string) (sqlsession.Session, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return nil, err
	}
	cfg := sqlsession.ProxiedPG(b.conn, host, uint16(p))
	switch idle := b.cfg.IdleSessionTimeout; {
	case idle == 0:
		cfg.RuntimeParams["idle_session_timeout"] = strconv.FormatInt(b.cfg.TTL.Milliseconds(), 10)
	case idle > 0:
		cfg.RuntimeParams["idle_session_timeout"] = strconv.FormatInt(idle.Milliseconds(), 10)
	}
	cfg.RuntimeParams["application_name"] = "fencecheck-lock"
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, sqlsession.ConnectHint(err)
	}
	return &session{c: c, key: b.key, token: b.cfg.Token}, nil
}

// session is one pgx connection holding (or trying) the advisory lock.
type session struct {
	c     *pgx.Conn
	key   int64
	token TokenKind
}

// TryLock takes the lock and, only if granted, the token, in one statement: a CASE
// evaluates its THEN branch only when the condition holds, and OFFSET 0 keeps the
// planner from copying the (reentrant) lock call into it.
func (s *session) TryLock(ctx context.Context) (bool, int64, error) {
	tok := "NULL::bigint"
	switch s.token {
	case TokenSequence:
		tok = "nextval('fencecheck_lock_token')"
	case TokenXact:
		tok = "pg_current_xact_id()::text::bigint"
	}
	q := "SELECT g, CASE WHEN g THEN " + tok + " END FROM (SELECT pg_try_advisory_lock($1) AS g OFFSET 0) AS t"
	var (
		granted bool
		token   *int64
	)
	if err := s.c.QueryRow(ctx, q, s.key).Scan(&granted, &token); err != nil {
		return false, 0, classify(err)
	}
	if granted && token != nil {
		return true, *token, nil
	}
	return granted, 0, nil
}

// classify marks errors after which the statement certainly had no effect: the server
// answered with an ERROR, or pgx never sent it.
func classify(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Severity == "ERROR" || pgconn.SafeToRetry(err) {
		return fmt.Errorf("%w: %w", harness.ErrNoEffect, err)
	}
	return err
}

func (s *session) Ping(ctx context.Context) error {
	_, err := s.c.Exec(ctx, "SELECT 1")
	return err
}

func (s *session) Unlock(ctx context.Context) (bool, error) {
	var held bool
	if err := s.c.QueryRow(ctx, "SELECT pg_advisory_unlock($1)", s.key).Scan(&held); err != nil {
		return false, classify(err)
	}
	return held, nil
}

func (s *session) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	return s.c.Close(ctx)
}

// Restart implements harness.Crasher: the same port, after crash recovery (keepData),
// or on a fresh cluster (the sequence starts again at 1).
func (b *Backend) Restart(ctx context.Context, i int, keepData bool) error {
	if err := b.Group.Restart(ctx, i, keepData); err != nil {
		return err
	}
	if !keepData {
		return b.setup(ctx)
	}
	return nil
}
