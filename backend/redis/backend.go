// Package redis is the "redis" lock backend: one redis-server (started by fencecheck
// from Debian's redis-server, or an existing one), a lock taken with SET key value NX PX
// ttl under a random value, renewed by a compare-and-pexpire script every TTL/3 and
// released by a compare-and-delete script. Redis hands out no fencing token; the two
// that teams bolt on are offered: an INCR counter taken in the same script as the grant
// (TokenIncr), and none at all (TokenNone: its registry entry, redis-notoken, is
// harness.Tokenless).
package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	redigo "github.com/gomodule/redigo/redis"

	"github.com/fencecheck/fencecheck/backend/lease"
	"github.com/fencecheck/fencecheck/backend/renewal"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/proc"
)

// TokenKind chooses what a grant hands out as its fencing token.
type TokenKind string

const (
	// TokenIncr is an INCR of a counter key taken atomically with the grant (one Lua
	// script). It is monotonic as long as the counter survives: with the AOF, across a
	// crash too; without persistence a restart resets it to 1.
	TokenIncr TokenKind = "incr"
	// TokenNone hands out no token: Token() is only the order in which this backend's
	// lockers saw grants returned (see harness.Tokenless).
	TokenNone TokenKind = "none"
)

// NoTokenReason is why TokenNone cannot be fenced.
const NoTokenReason = "no fencing token: SET NX PX holds a random value, which cannot be ordered, so the lock cannot be made safe by fencing"

// DefaultKey is the lock key when Config.Key is empty; the counter is Key + ":token".
const DefaultKey = "fencecheck:lock"

// Config configures the redis backend.
type Config struct {
	// TTL is the lock's PX time to live (whole milliseconds, at least 10 ms).
	TTL time.Duration
	// Token is the token kind (default TokenIncr).
	Token TokenKind
	// Persist runs the server with the append-only file, so a crash keeps the lock key
	// and the counter; without it (--save ''), a restart forgets both.
	Persist bool
	// Dir holds the server's data; required unless Addrs is set.
	Dir string
	// LogWriter receives the server's output (nil: discarded).
	LogWriter io.Writer
	// Addrs is an existing server (exactly one host:port): no server is started and
	// node faults do not apply.
	Addrs []string
	// Key is the lock key (default DefaultKey).
	Key string
	// Binary is the redis-server program (default from PATH).
	Binary string
	// Port is the started server's port (0: a free one).
	Port int
}

func (c Config) withDefaults() Config {
	if c.Token == "" {
		c.Token = TokenIncr
	}
	if c.Key == "" {
		c.Key = DefaultKey
	}
	return c
}

// Validate checks the configuration.
func (c Config) Validate() error {
	c = c.withDefaults()
	if c.TTL < 10*time.Millisecond || c.TTL%time.Millisecond != 0 {
		return fmt.Errorf("redis: TTL %v must be whole milliseconds, at least 10ms (PX takes milliseconds)", c.TTL)
	}
	if c.Token != TokenIncr && c.Token != TokenNone {
		return fmt.Errorf("redis: token must be %q or %q, got %q", TokenIncr, TokenNone, c.Token)
	}
	if len(c.Addrs) > 1 {
		return fmt.Errorf("redis: one server address, got %d (Redlock over several servers is the redlock backend)", len(c.Addrs))
	}
	if len(c.Addrs) == 1 {
		if err := CheckAddr(c.Addrs[0]); err != nil {
			return err
		}
	} else if c.Dir == "" {
		return errors.New("redis: Dir is required to start a server")
	}
	return nil
}

// CheckAddr checks that addr is host:port.
func CheckAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 1 || n > 65535 || host == "" {
		return fmt.Errorf("redis: address %q is not host:port", addr)
	}
	return nil
}

// Backend is the redis lock backend.
type Backend struct {
	// Group is the started server (none for an external one): ProcessNodes and Crasher.
	proc.Group[*Server]
	cfg  Config
	addr string
	seen atomic.Int64 // grants seen by this backend's lockers (TokenNone's Token)
}

var (
	_ harness.Backend      = (*Backend)(nil)
	_ harness.ProcessNodes = (*Backend)(nil)
	_ harness.Crasher      = (*Backend)(nil)
)

// Start starts redis-server (or checks that the external server at cfg.Addrs answers
// PING) and returns the backend.
func Start(ctx context.Context, cfg Config) (*Backend, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if len(cfg.Addrs) == 1 {
		pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		if err := Ping(pctx, cfg.Addrs[0]); err != nil {
			return nil, fmt.Errorf("redis: no server answers PING at %s: %w", cfg.Addrs[0], err)
		}
		return &Backend{Group: proc.Group[*Server]{Name: "redis"}, cfg: cfg, addr: cfg.Addrs[0]}, nil
	}
	s, err := StartServer(ctx, ServerConfig{Dir: cfg.Dir, Persist: cfg.Persist, Port: cfg.Port, Log: cfg.LogWriter, Binary: cfg.Binary})
	if err != nil {
		return nil, err
	}
	return &Backend{Group: proc.Group[*Server]{Name: "redis", Servers: []*Server{s}}, cfg: cfg, addr: s.Addr()}, nil
}

// Name implements harness.Backend.
func (b *Backend) Name() string { return "redis" }

// Endpoints implements harness.Backend.
func (b *Backend) Endpoints() []string { return []string{b.addr} }

// Close implements harness.Backend: stops the server it started. Safe to call twice.
func (b *Backend) Close() error { return b.Group.Close() }

// TokenlessReason is why the backend's grants carry no fencing token (TokenNone), or ""
// (TokenIncr). A TokenNone backend is harness.Tokenless as its descriptor starts it.
func (b *Backend) TokenlessReason() string {
	if b.cfg.Token == TokenNone {
		return NoTokenReason
	}
	return ""
}

// NewLocker implements harness.Backend: a client of addrs[0] only.
func (b *Backend) NewLocker(_ context.Context, _ int, addrs []string) (harness.Locker, error) {
	if len(addrs) != 1 {
		return nil, fmt.Errorf("%w: redis: want 1 address, got %d", harness.ErrNoEffect, len(addrs))
	}
	return &Locker{cfg: b.cfg, cli: NewClient(addrs[0], b.cfg.TTL), seen: &b.seen}, nil
}

// Client is a pool of connections to one redis-server (redigo), with timeouts scaled
// to the lock's TTL and no retries: a command that timed out is an unknown outcome,
// and a retry would hide it. Safe for concurrent use.
type Client struct {
	pool   *redigo.Pool
	closed atomic.Bool
}

// ErrClosed is the error of a command on a closed Client: it was never sent.
var ErrClosed = errors.New("redis: client closed")

// NewClient returns a Client of addr alone (at most 4 connections).
func NewClient(addr string, ttl time.Duration) *Client {
	timeout := clientTimeout(ttl)
	return &Client{pool: &redigo.Pool{
		MaxIdle: 4, MaxActive: 4, Wait: true,
		DialContext: func(ctx context.Context) (redigo.Conn, error) {
			d := net.Dialer{Timeout: timeout}
			nc, err := d.DialContext(ctx, "tcp", addr)
			if err != nil {
				return nil, err
			}
			// redigo's own connection has its context and timeout methods too.
			return checkedConn{fullConn: redigo.NewConn(nc, timeout, timeout).(fullConn), nc: nc}, nil
		},
		// Without retries, a connection the server closed (a crash and restart) must not
		// be handed out: its command would be an unknown outcome although it never ran.
		TestOnBorrow: func(c redigo.Conn, _ time.Time) error {
			if cc, ok := c.(checkedConn); ok {
				return connCheck(cc.nc)
			}
			return nil
		},
	}}
}

// checkedConn is a pooled connection with its socket, for connCheck.
type checkedConn struct {
	fullConn
	nc net.Conn
}

type fullConn interface {
	redigo.ConnWithContext
	redigo.ConnWithTimeout
}

// Conn is a pooled connection, to be closed after use (a connection whose command
// failed is discarded, not reused). Getting one waits for a free one until ctx ends.
func (c *Client) Conn(ctx context.Context) (redigo.Conn, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	conn, err := c.pool.GetContext(ctx)
	if err != nil {
		if c.closed.Load() {
			return nil, ErrClosed
		}
		return nil, err
	}
	return conn, nil
}

// Do runs one command, bounded by ctx and the client's timeouts.
func (c *Client) Do(ctx context.Context, cmd string, args ...any) (any, error) {
	conn, err := c.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return redigo.DoContext(conn, ctx, cmd, args...)
}

// Eval runs a script (EVALSHA, then EVAL when the server does not have it yet).
func (c *Client) Eval(ctx context.Context, s *redigo.Script, keysAndArgs ...any) (any, error) {
	conn, err := c.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return s.DoContext(ctx, conn, keysAndArgs...)
}

// Close closes the pool's connections; commands after it fail with ErrClosed.
func (c *Client) Close() error {
	c.closed.Store(true)
	return c.pool.Close()
}

func clientTimeout(ttl time.Duration) time.Duration { return max(ttl, 500*time.Millisecond) }

func (l *Locker) timeout() time.Duration { return clientTimeout(l.cfg.TTL) }

// The scripts: a grant with its counter, a renewal and a release that act only while
// the key still holds this grant's random value.
var (
	grantScript = redigo.NewScript(2, `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  if ARGV[3] == '1' then return redis.call('INCR', KEYS[2]) end
  return 0
end
return -1`)
	renewScript = redigo.NewScript(1, `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0`)
	releaseScript = redigo.NewScript(1, `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`)
)

// Locker is one harness client's lock client.
type Locker struct {
	cfg    Config
	cli    *Client
	seen   *atomic.Int64
	leases renewal.Set
}

var _ harness.Locker = (*Locker)(nil)

// randomValue is a grant's owner value: 16 random bytes, hex.
func randomValue() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux
	return hex.EncodeToString(b[:])
}

// Acquire implements harness.Locker: try the grant script until it succeeds or ctx
// ends, polling every TTL/20 (at least 2 ms) while the key is held. An error wraps
// harness.ErrNoEffect when the lock was definitely not taken.
func (l *Locker) Acquire(ctx context.Context) (harness.Lease, error) {
	value := randomValue()
	withToken := "0"
	if l.cfg.Token == TokenIncr {
		withToken = "1"
	}
	ttlMS := strconv.FormatInt(l.cfg.TTL.Milliseconds(), 10)
	poll := max(l.cfg.TTL/20, 2*time.Millisecond)
	for {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%w: redis: lock busy until %w", harness.ErrNoEffect, err)
		}
		start := time.Now()
		// An attempt is not cut short by ctx: a grant whose reply was lost would be an
		// unknown outcome, and the script answers in well under a millisecond.
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.timeout())
		res, err := redigo.Int64(l.cli.Eval(actx, grantScript, l.cfg.Key, l.cfg.Key+":token", value, ttlMS, withToken))
		cancel()
		if err != nil {
			if errors.Is(err, redigo.ErrNil) {
				return nil, fmt.Errorf("redis: grant script returned nil")
			}
			if ctx.Err() != nil && isNoEffect(err) {
				return nil, fmt.Errorf("%w: redis: acquire: %w", harness.ErrNoEffect, err)
			}
			if isNoEffect(err) {
				// The request never reached the server; try again until ctx ends.
				if serr := sleepCtx(ctx, poll); serr != nil {
					return nil, fmt.Errorf("%w: redis: acquire: %w", harness.ErrNoEffect, err)
				}
				continue
			}
			return nil, fmt.Errorf("redis: acquire: %w", err)
		}
		if res >= 0 {
			if l.cfg.Token == TokenNone {
				res = l.seen.Add(1)
			}
			return l.newLease(value, res, start), nil
		}
		if err := sleepCtx(ctx, poll); err != nil {
			return nil, fmt.Errorf("%w: redis: lock busy until %w", harness.ErrNoEffect, err)
		}
	}
}

// isNoEffect reports whether a command error means it was never sent: a refused
// connection or a closed client. A timeout is not: the command may have run.
func isNoEffect(err error) bool {
	if errors.Is(err, ErrClosed) {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (l *Locker) newLease(value string, token int64, start time.Time) *Lease {
	le := &Lease{Lease: renewal.NewLease(token, l.cfg.TTL, start.Add(l.cfg.TTL)), l: l, value: value}
	l.leases.Run(le.Keeper, le.renew)
	return le
}

// Close implements harness.Locker: stops the renewals of leases still held (their Lost
// channels close) and closes the client. Safe to call twice.
func (l *Locker) Close() error {
	if !l.leases.Close() {
		return nil
	}
	return l.cli.Close()
}

// Lease is a granted redis lock. Its token is the counter value taken with the grant
// (TokenIncr), or the order in which the backend saw the grant (TokenNone: not a fencing
// token). Lost closes when a renewal finds the key no longer holds this grant's value,
// when no renewal succeeded for a TTL (by the client's clock the key has expired), or
// when the lease is released or its locker closed; ValidUntil is the start of the last
// confirmed grant or renewal plus the TTL.
type Lease struct {
	renewal.Lease
	l        *Locker
	value    string
	released lease.Released
}

var (
	_ harness.Lease    = (*Lease)(nil)
	_ harness.Expiring = (*Lease)(nil)
)

// Value is the grant's random owner value.
func (le *Lease) Value() string { return le.value }

// renew is one compare-and-pexpire.
func (le *Lease) renew(ctx context.Context) (renewal.Result, time.Time) {
	start := time.Now()
	n, err := redigo.Int64(le.l.cli.Eval(ctx, renewScript, le.l.cfg.Key, le.value, strconv.FormatInt(le.TTL().Milliseconds(), 10)))
	switch {
	case err != nil:
		return renewal.Unknown, time.Time{}
	case n == 1:
		return renewal.Renewed, start.Add(le.TTL())
	}
	return renewal.Refused, time.Time{} // the key expired or another grant holds it
}

// Release implements harness.Lease: stop renewing and delete the key if it still holds
// this grant's value. A key already gone or taken over (the lease was lost) gives an error
// wrapping harness.ErrNoEffect; so does a second Release.
func (le *Lease) Release(ctx context.Context) error {
	if err := le.released.First("redis"); err != nil {
		return err
	}
	le.l.leases.Stop(le.Keeper)
	n, err := redigo.Int64(le.l.cli.Eval(ctx, releaseScript, le.l.cfg.Key, le.value))
	if err != nil {
		if isNoEffect(err) {
			return fmt.Errorf("%w: redis: release: %w", harness.ErrNoEffect, err)
		}
		return fmt.Errorf("redis: release: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("%w: redis: lock key %s no longer held this grant's value: the lease expired before the release", harness.ErrNoEffect, le.l.cfg.Key)
	}
	return nil
}
