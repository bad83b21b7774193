// Package mariadblock is the "mariadb-lock" lock backend: MariaDB's GET_LOCK(name, 0)
// held on a session connection of its own per grant (go-sql-driver/mysql, through the
// client's fault proxy). The lock lives exactly as long as the session; the session is
// given wait_timeout = TTL (whole seconds) and pinged every TTL/3, so a client that
// stops talking for a TTL loses its session and the lock with it.
//
// MariaDB hands out no fencing token with the lock. The token options: a counter row
// incremented in the same session right after the grant (TokenCounter), the holder's
// connection id as IS_USED_LOCK reports it (TokenConnID: it restarts at 1 when the
// server restarts), and none (TokenNone, harness.Tokenless).
//
// The server is a private mariadbd fencecheck starts on an ephemeral loopback port
// (node faults apply: SIGSTOP, SIGKILL and InnoDB crash recovery), or an existing server
// given by DSN (client-side faults only).
package mariadblock

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/fencecheck/fencecheck/backend/sqlsession"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/proc"
	"github.com/fencecheck/fencecheck/internal/dbauth"
)

// TokenKind chooses what a grant hands out as its fencing token.
type TokenKind string

const (
	// TokenCounter increments an InnoDB counter row (LAST_INSERT_ID(n + 1)) in the
	// granting session right after GET_LOCK returns 1, while the lock is held: the
	// counter's order is the grants' order, and InnoDB keeps it across a crash.
	TokenCounter TokenKind = "counter"
	// TokenConnID is IS_USED_LOCK(name) right after the grant: the holder's connection
	// id. Ids grow with every new connection, but start again at 1 after a restart.
	TokenConnID TokenKind = "connid"
	// TokenNone hands out no token (harness.Tokenless).
	TokenNone TokenKind = "none"
)

// NoTokenReason is why TokenNone cannot be fenced.
const NoTokenReason = "no fencing token: GET_LOCK returns only 1 or 0, so the lock cannot be made safe by fencing"

// Name is the backend's name.
const Name = "mariadb-lock"

// Config configures the backend.
type Config struct {
	// TTL is the session's wait_timeout (whole seconds, at least 1 s): a holder silent
	// for that long loses its session and the lock.
	TTL time.Duration
	// Token is the token kind (default TokenCounter).
	Token TokenKind
	// Dir holds the private server's data; required unless DSN is set.
	Dir string
	// LogWriter receives the server's output (nil: discarded).
	LogWriter io.Writer
	// DSN is an existing server, as a go-sql-driver DSN naming one TCP address and a
	// database (user:password@tcp(127.0.0.1:3306)/db): no server is started and node
	// faults do not apply.
	DSN string
	// Port of the started server (0: a free one).
	Port int
	// ClockRate, if above 0, runs the started server's clock that many times fast
	// (libfaketime, ServerConfig.ClockRate): it ends a silent session after TTL/ClockRate
	// in real time. At 3 or more it ends every session, busy or not: the client pings
	// every TTL/3.
	ClockRate float64

	name string // the registered name (default Name)
}

func (c Config) withDefaults() Config {
	if c.Token == "" {
		c.Token = TokenCounter
	}
	return c
}

// Validate checks the configuration.
func (c Config) Validate() error {
	c = c.withDefaults()
	if c.TTL < time.Second || c.TTL%time.Second != 0 {
		return fmt.Errorf("%s: TTL %v must be whole seconds, at least 1s (wait_timeout is in seconds)", Name, c.TTL)
	}
	switch c.Token {
	case TokenCounter, TokenConnID, TokenNone:
	default:
		return fmt.Errorf("%s: token must be %q, %q or %q, got %q", Name, TokenCounter, TokenConnID, TokenNone, c.Token)
	}
	if c.ClockRate < 0 || c.ClockRate > 100 {
		return fmt.Errorf("%s: clock rate must be between 0 (real time) and 100, got %g", Name, c.ClockRate)
	}
	if c.DSN != "" {
		if c.ClockRate != 0 {
			return fmt.Errorf("%s: a clock rate needs the server fencecheck starts (libfaketime is preloaded when mariadbd starts), not an existing one (--%s)", Name, OptionDSN)
		}
		if _, err := parseDSN(c.DSN); err != nil {
			return err
		}
	} else if c.Dir == "" {
		return fmt.Errorf("%s: Dir is required to start a server", Name)
	}
	return nil
}

func parseDSN(dsn string) (*mysql.Config, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("%s: bad MariaDB DSN (want user:password@tcp(host:port)/database): %w", Name, err)
	}
	if cfg.Net != "tcp" {
		return nil, fmt.Errorf("%s: the DSN's network is %q; fencecheck needs tcp(host:port) to put a fault proxy in the way", Name, cfg.Net)
	}
	if _, _, err := net.SplitHostPort(cfg.Addr); err != nil {
		return nil, fmt.Errorf("%s: the DSN's address %q is not host:port", Name, cfg.Addr)
	}
	if cfg.DBName == "" {
		return nil, fmt.Errorf("%s: the DSN names no database (for the token counter table)", Name)
	}
	cfg.Logger = quiet{}
	return cfg, nil
}

// Backend is the mariadb-lock backend.
type Backend struct {
	cfg  Config
	conn *mysql.Config // the server's, with its address
	lock string        // the GET_LOCK name
	seen atomic.Int64

	// The started server as node 0 (no node for an external one): the node faults.
	proc.Group[*Server]
}

var (
	_ harness.Backend      = (*Backend)(nil)
	_ harness.ProcessNodes = (*Backend)(nil)
	_ harness.Crasher      = (*Backend)(nil)
	_ harness.Tokenless    = tokenless{}
)

// Start starts a private server (or checks the one at cfg.DSN), creates the token
// counter table and returns the backend.
func Start(ctx context.Context, cfg Config) (_ *Backend, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	var k [8]byte
	_, _ = rand.Read(k[:])
	// Random, so that runs sharing a server do not share the lock.
	b := &Backend{cfg: cfg, lock: "fencecheck-" + hex.EncodeToString(k[:]), Group: proc.Group[*Server]{Name: Name}}
	dsn := cfg.DSN
	if dsn == "" {
		s, err := StartServer(ctx, ServerConfig{Dir: cfg.Dir, Port: cfg.Port, Log: cfg.LogWriter, ClockRate: cfg.ClockRate})
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
	}
	if b.conn, err = parseDSN(dsn); err != nil {
		return nil, err
	}
	if err := b.setup(ctx); err != nil {
		return nil, err
	}
	return b, nil
}

// setup creates the database (a private server) and the counter table.
func (b *Backend) setup(ctx context.Context) error {
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cfg := b.conn.Clone()
	stmts := []string{"CREATE TABLE IF NOT EXISTS fencecheck_lock_token (id INT PRIMARY KEY, n BIGINT NOT NULL) ENGINE=InnoDB"}
	if len(b.Servers) > 0 {
		cfg.DBName = ""
		stmts = append([]string{"CREATE DATABASE IF NOT EXISTS fencecheck", "USE fencecheck"}, stmts...)
	}
	cfg.Timeout = 5 * time.Second
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	db := sql.OpenDB(c)
	defer db.Close()
	conn, err := db.Conn(sctx)
	if refused := accessDenied(b.conn.Addr, b.conn.User, err); refused != nil {
		return fmt.Errorf("%s: %w", Name, refused)
	}
	if err != nil {
		return fmt.Errorf("%s: no MariaDB server answers at %s: %w", Name, b.conn.Addr, err)
	}
	defer conn.Close()
	for _, q := range stmts {
		if _, err := conn.ExecContext(sctx, q); err != nil {
			return fmt.Errorf("%s: setup (%s): %w", Name, q, err)
		}
	}
	return nil
}

// Name implements harness.Backend.
func (b *Backend) Name() string {
	if b.cfg.name != "" {
		return b.cfg.name
	}
	return Name
}

// LeaseTTL is the session's wait_timeout (registry.LeaseTimed).
func (b *Backend) LeaseTTL() time.Duration { return b.cfg.TTL }

// ClockRate implements registry.FastClocked: how many times fast the started server's
// clock runs (0: real time).
func (b *Backend) ClockRate() float64 { return b.cfg.ClockRate }

// Endpoints implements harness.Backend.
func (b *Backend) Endpoints() []string { return []string{b.conn.Addr} }

// Token is the backend's token kind.
func (b *Backend) Token() TokenKind { return b.cfg.Token }

// Close implements harness.Backend: it stops the started server. Safe to call twice.
func (b *Backend) Close() error { return b.Group.Close() }

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
		Name: Name, TTL: b.cfg.TTL, Dial: b.dial,
		NoToken: b.cfg.Token == TokenNone, Seen: &b.seen,
	}, addrs[0]), nil
}

// dial opens a session to addr with the server's credentials and the TTL as its
// wait_timeout.
func (b *Backend) dial(ctx context.Context, addr string) (sqlsession.Session, error) {
	cfg := b.conn.Clone()
	cfg.Addr = addr
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params["wait_timeout"] = strconv.FormatInt(int64(b.cfg.TTL/time.Second), 10)
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(c)
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	return &session{db: db, c: conn, lock: b.lock, token: b.cfg.Token}, nil
}

// session is one connection holding (or trying) the lock.
type session struct {
	db    *sql.DB
	c     *sql.Conn
	lock  string
	token TokenKind
}

func (s *session) TryLock(ctx context.Context) (bool, int64, error) {
	var got sql.NullInt64
	if err := s.c.QueryRowContext(ctx, "SELECT GET_LOCK(?, 0)", s.lock).Scan(&got); err != nil {
		return false, 0, classify(err)
	}
	if !got.Valid {
		return false, 0, fmt.Errorf("%w: GET_LOCK returned NULL (an error on the server)", harness.ErrNoEffect)
	}
	if got.Int64 != 1 {
		return false, 0, nil
	}
	// Granted: the token, in the same session, while the lock is held. A failure here
	// leaves a grant without a token: the caller closes the session (the server
	// releases the lock) and reports an unknown outcome.
	switch s.token {
	case TokenCounter:
		res, err := s.c.ExecContext(ctx, "INSERT INTO fencecheck_lock_token (id, n) VALUES (1, LAST_INSERT_ID(1)) ON DUPLICATE KEY UPDATE n = LAST_INSERT_ID(n + 1)")
		if err != nil {
			return false, 0, fmt.Errorf("token counter after the grant: %w", err)
		}
		n, err := res.LastInsertId()
		if err != nil || n <= 0 {
			return false, 0, fmt.Errorf("token counter after the grant: no LAST_INSERT_ID (%d, %v)", n, err)
		}
		return true, n, nil
	case TokenConnID:
		var id sql.NullInt64
		if err := s.c.QueryRowContext(ctx, "SELECT IS_USED_LOCK(?)", s.lock).Scan(&id); err != nil || !id.Valid {
			return false, 0, fmt.Errorf("IS_USED_LOCK after the grant: %v (valid %v)", err, id.Valid)
		}
		return true, id.Int64, nil
	}
	return true, 0, nil
}

// classify marks errors after which the statement certainly had no effect: the server
// answered with an error packet.
func classify(err error) error {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return fmt.Errorf("%w: %w", harness.ErrNoEffect, err)
	}
	return err
}

func (s *session) Ping(ctx context.Context) error { return s.c.PingContext(ctx) }

func (s *session) Unlock(ctx context.Context) (bool, error) {
	var held sql.NullInt64
	if err := s.c.QueryRowContext(ctx, "SELECT RELEASE_LOCK(?)", s.lock).Scan(&held); err != nil {
		return false, classify(err)
	}
	return held.Valid && held.Int64 == 1, nil
}

func (s *session) Close() error {
	_ = s.c.Close()
	return s.db.Close()
}

// Restart implements harness.Crasher: the same port, after InnoDB crash recovery
// (keepData), or on an empty data dir (the counter starts again at 1).
func (b *Backend) Restart(ctx context.Context, i int, keepData bool) error {
	if err := b.Group.Restart(ctx, i, keepData); err != nil {
		return err
	}
	if !keepData {
		return b.setup(ctx)
	}
	return nil
}

// accessDenied is err as the server's refusal of user at addr when it refused the
// credentials (MySQL error 1045, ER_ACCESS_DENIED_ERROR), else nil.
func accessDenied(addr, user string, err error) error {
	var me *mysql.MySQLError
	if errors.As(err, &me) && me.Number == 1045 {
		return dbauth.Refusal("MariaDB", addr, user, me.Message, err)
	}
	return nil
}
