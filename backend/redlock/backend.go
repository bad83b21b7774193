// Package redlock is the "redlock" lock backend: github.com/go-redsync/redsync over 3
// (default) or 5 independent redis-servers that fencecheck starts (or existing ones).
// Each harness client has its own redsync with one pool per proxied address; a grant
// is a SET NX PX on a majority, renewed with Extend every TTL/3. Its only "token" is a
// random string, so it is harness.Tokenless: no fenced resource can use it.
package redlock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	rsredigo "github.com/go-redsync/redsync/v4/redis/redigo"
	redigo "github.com/gomodule/redigo/redis"

	"github.com/fencecheck/fencecheck/backend/lease"
	"github.com/fencecheck/fencecheck/backend/redis"
	"github.com/fencecheck/fencecheck/backend/renewal"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/proc"
)

// NoTokenReason is why Redlock cannot be fenced.
const NoTokenReason = "no fencing token: cannot be made safe by fencing (Redlock's lock value is a random string, which has no order)"

// DefaultKey is the lock key when Config.Key is empty.
const DefaultKey = "fencecheck:redlock"

// Config configures the redlock backend.
type Config struct {
	// TTL is the lock's expiry (whole milliseconds, at least 10 ms).
	TTL time.Duration
	// Servers is the number of independent redis-servers to start: 3 (default) or 5.
	Servers int
	// Persist runs each server with the append-only file. Off by default: a restart
	// then forgets the lock, which is Redlock's documented weakness.
	Persist bool
	// Dir holds one data dir per server; required unless Addrs is set.
	Dir string
	// LogWriter receives every server's output (nil: discarded).
	LogWriter io.Writer
	// Addrs are existing independent servers (3 or more): none is started and node
	// faults do not apply.
	Addrs []string
	// Key is the lock key (default DefaultKey).
	Key string
	// Binary is the redis-server program (default from PATH).
	Binary string
}

func (c Config) withDefaults() Config {
	if c.Servers == 0 {
		c.Servers = 3
		if len(c.Addrs) > 0 {
			c.Servers = len(c.Addrs)
		}
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
		return fmt.Errorf("redlock: TTL %v must be whole milliseconds, at least 10ms", c.TTL)
	}
	if len(c.Addrs) > 0 {
		if len(c.Addrs) < 3 {
			return fmt.Errorf("redlock: want at least 3 independent servers, got %d address(es)", len(c.Addrs))
		}
		for _, a := range c.Addrs {
			if err := redis.CheckAddr(a); err != nil {
				return err
			}
		}
		return nil
	}
	if c.Servers != 3 && c.Servers != 5 {
		return fmt.Errorf("redlock: servers must be 3 or 5, got %d", c.Servers)
	}
	if c.Dir == "" {
		return errors.New("redlock: Dir is required to start servers")
	}
	return nil
}

// Backend is the redlock backend.
type Backend struct {
	// Group is the started servers (none for external ones): ProcessNodes and Crasher.
	proc.Group[*redis.Server]
	cfg   Config
	addrs []string
	seen  atomic.Int64 // grants seen by this backend's lockers (the observed order)
}

var (
	_ harness.Backend      = (*Backend)(nil)
	_ harness.ProcessNodes = (*Backend)(nil)
	_ harness.Crasher      = (*Backend)(nil)
	_ harness.Tokenless    = (*Backend)(nil)
)

// Start starts cfg.Servers redis-servers (or checks that every external one answers
// PING).
func Start(ctx context.Context, cfg Config) (_ *Backend, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	b := &Backend{Group: proc.Group[*redis.Server]{Name: "redlock"}, cfg: cfg}
	if len(cfg.Addrs) > 0 {
		for _, a := range cfg.Addrs {
			pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			err := redis.Ping(pctx, a)
			cancel()
			if err != nil {
				return nil, fmt.Errorf("redlock: no server answers PING at %s: %w", a, err)
			}
		}
		b.addrs = append([]string(nil), cfg.Addrs...)
		return b, nil
	}
	defer func() {
		if err != nil {
			_ = b.Close()
		}
	}()
	for i := range cfg.Servers {
		s, err := redis.StartServer(ctx, redis.ServerConfig{
			Dir: filepath.Join(cfg.Dir, "node"+strconv.Itoa(i)), Persist: cfg.Persist, Log: cfg.LogWriter, Binary: cfg.Binary,
		})
		if err != nil {
			return nil, fmt.Errorf("redlock: server %d: %w", i, err)
		}
		b.Servers = append(b.Servers, s)
		b.addrs = append(b.addrs, s.Addr())
	}
	return b, nil
}

// Name implements harness.Backend.
func (b *Backend) Name() string { return "redlock" }

// Endpoints implements harness.Backend: every server, node i at index i.
func (b *Backend) Endpoints() []string { return append([]string(nil), b.addrs...) }

// Close implements harness.Backend: stops every server it started. Safe to call twice.
func (b *Backend) Close() error { return b.Group.Close() }

// NoFencingToken implements harness.Tokenless.
func (b *Backend) NoFencingToken() string { return NoTokenReason }

// NewLocker implements harness.Backend: a redsync of its own with one pool per
// proxied address.
func (b *Backend) NewLocker(_ context.Context, _ int, addrs []string) (harness.Locker, error) {
	if len(addrs) != len(b.addrs) {
		return nil, fmt.Errorf("%w: redlock: want %d addresses (one per server), got %d", harness.ErrNoEffect, len(b.addrs), len(addrs))
	}
	l := &Locker{cfg: b.cfg, seen: &b.seen}
	pools := make([]rsredis.Pool, len(addrs))
	for i, a := range addrs {
		c := redis.NewClient(a, b.cfg.TTL)
		l.clients = append(l.clients, c)
		pools[i] = rsredigo.NewPool(ctxPool{c})
	}
	l.rs = redsync.New(pools...)
	return l, nil
}

// ctxPool hands redsync connections whose commands are bounded by the ctx they were
// taken with: redsync bounds each node's command by TimeoutFactor × TTL through it.
type ctxPool struct{ c *redis.Client }

func (p ctxPool) Get() redigo.Conn {
	c, err := p.GetContext(context.Background())
	if err != nil {
		return errConn{err}
	}
	return c
}

func (p ctxPool) GetContext(ctx context.Context) (redigo.Conn, error) {
	c, err := p.c.Conn(ctx)
	if err != nil {
		return nil, err
	}
	return ctxConn{Conn: c, ctx: ctx}, nil
}

type ctxConn struct {
	redigo.Conn
	ctx context.Context
}

func (c ctxConn) Do(cmd string, args ...any) (any, error) {
	return redigo.DoContext(c.Conn, c.ctx, cmd, args...)
}

// errConn is a connection that could not be had: every command fails with its error.
type errConn struct{ err error }

func (e errConn) Close() error                   { return nil }
func (e errConn) Err() error                     { return e.err }
func (e errConn) Do(string, ...any) (any, error) { return nil, e.err }
func (e errConn) Send(string, ...any) error      { return e.err }
func (e errConn) Flush() error                   { return e.err }
func (e errConn) Receive() (any, error)          { return nil, e.err }

// Locker is one harness client's Redlock client.
type Locker struct {
	cfg     Config
	seen    *atomic.Int64
	clients []*redis.Client
	rs      *redsync.Redsync
	leases  renewal.Set
}

var _ harness.Locker = (*Locker)(nil)

// Acquire implements harness.Locker: redsync's LockContext, retried every TTL/20 until
// it succeeds or ctx ends. A failed attempt has released whatever it set (redsync does
// so itself), so its error wraps harness.ErrNoEffect.
func (l *Locker) Acquire(ctx context.Context) (harness.Lease, error) {
	m := l.rs.NewMutex(l.cfg.Key,
		redsync.WithExpiry(l.cfg.TTL),
		redsync.WithTries(math.MaxInt32),
		redsync.WithRetryDelay(max(l.cfg.TTL/20, 2*time.Millisecond)),
		// Each node's SET NX may take a tenth of the TTL (redsync's default, a
		// twentieth, is 25 ms at 500 ms: too tight on a loaded machine).
		redsync.WithTimeoutFactor(0.1),
	)
	if err := m.LockContext(ctx); err != nil {
		return nil, fmt.Errorf("%w: redlock: acquire: %w", harness.ErrNoEffect, err)
	}
	le := &Lease{Lease: renewal.NewLease(l.seen.Add(1), l.cfg.TTL, m.Until()), l: l, m: m}
	l.leases.Run(le.Keeper, le.renew)
	return le, nil
}

// Close implements harness.Locker: stops the renewals of leases still held (their Lost
// channels close) and closes the clients. Safe to call twice.
func (l *Locker) Close() error {
	if !l.leases.Close() {
		return nil
	}
	var errs []error
	for _, c := range l.clients {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// Lease is a Redlock grant. Its token is not a fencing token, only the order in which
// the backend's lockers saw grants returned (see harness.Tokenless). Lost closes when a
// majority refuses an Extend, when the validity redsync computed (Until) passes without
// a successful Extend, or when the lease is released or its locker closed; ValidUntil
// is redsync's Until (the TTL from the start of the last quorum, less the elapsed time
// and the drift allowance).
type Lease struct {
	renewal.Lease
	l        *Locker
	m        *redsync.Mutex // used by the renewals, then by Release once they have stopped
	released lease.Released
}

var (
	_ harness.Lease    = (*Lease)(nil)
	_ harness.Expiring = (*Lease)(nil)
)

// Value is redsync's random lock value.
func (le *Lease) Value() string { return le.m.Value() }

// renew is one Extend on every server.
func (le *Lease) renew(ctx context.Context) (renewal.Result, time.Time) {
	ok, err := le.m.ExtendContext(ctx)
	if ok {
		return renewal.Renewed, le.m.Until()
	}
	var rerr *redsync.RedisError
	if !errors.As(err, &rerr) {
		return renewal.Refused, time.Time{} // every node answered, and a majority no longer holds this grant
	}
	return renewal.Unknown, time.Time{} // no majority answered in time
}

// Release implements harness.Lease: stop renewing and unlock on every server. Less
// than a majority still holding this grant's value (the lease was lost) gives an error
// wrapping harness.ErrNoEffect; so does a second Release.
func (le *Lease) Release(ctx context.Context) error {
	if err := le.released.First("redlock"); err != nil {
		return err
	}
	le.l.leases.Stop(le.Keeper)
	ok, err := le.m.UnlockContext(ctx)
	if !ok {
		var rerr *redsync.RedisError
		if !errors.As(err, &rerr) { // every node answered: expired, or another holder's
			return fmt.Errorf("%w: redlock: fewer than a majority still held this grant: the lease expired before the release", harness.ErrNoEffect)
		}
		return fmt.Errorf("redlock: release: %w", err)
	}
	return nil
}
