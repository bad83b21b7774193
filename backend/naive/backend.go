package naive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/fencecheck/fencecheck/backend/renewal"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/jsonhttp"
	"github.com/fencecheck/fencecheck/harness/proc"
)

// Config configures the naive backend.
type Config struct {
	// TTL of every lease.
	TTL time.Duration
	// Variant picks the token source (default Memory).
	Variant Variant
	// Dir holds durable state (the persisted counter); required for Persisted.
	Dir string
	// Now and Mono are the lock server's wall and monotonic clocks (default time.Now):
	// wall-clock tokens read Now, lease expiry reads Mono.
	Now, Mono func() time.Time
	// ClientNow is each client's clock (default time.Now): a lease's ValidUntil is
	// measured on it.
	ClientNow func(client int) time.Time
}

// Validate checks the configuration.
func (c Config) Validate() error {
	if c.TTL <= 0 {
		return fmt.Errorf("naive: TTL must be positive, got %v", c.TTL)
	}
	if c.TTL < 10*time.Millisecond {
		return fmt.Errorf("naive: TTL %v is below 10ms, shorter than the timing noise of this machine", c.TTL)
	}
	if _, ok := Variants()[c.Variant]; !ok && c.Variant != "" {
		return fmt.Errorf("naive: unknown variant %q", c.Variant)
	}
	if c.Variant == Persisted && c.Dir == "" {
		return fmt.Errorf("naive-persisted: a data directory is required")
	}
	return nil
}

// Backend is the naive lock backend: it starts its own server, and can crash and
// restart it on the same address (harness.Crasher).
type Backend struct {
	cfg  Config
	addr string

	mu  sync.Mutex
	srv *Server // nil while crashed
	// hold keeps the server's port while it is crashed (proc.HoldPort), so that no other
	// process's server or connection takes it before Restart.
	hold io.Closer
	// holdErr is why the last crash could not hold the port, for Restart's error.
	holdErr error
}

// New starts a naive lock server and returns its backend.
func New(cfg Config) (*Backend, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Mono == nil {
		cfg.Mono = time.Now
	}
	b := &Backend{cfg: cfg}
	// A port below the ephemeral range: Restart binds it again, and no outgoing
	// connection may hold it by then. Held from the pick to the server's start.
	ln, err := proc.ListenFree()
	if err != nil {
		return nil, err
	}
	srv, err := b.start(ln.Addr().String(), ln)
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	b.srv, b.addr = srv, srv.Addr()
	return b, nil
}

// start starts the lock server on addr, or on ln when given (nil: listen on addr).
func (b *Backend) start(addr string, ln net.Listener) (*Server, error) {
	tokens, err := NewTokens(b.cfg.Variant, b.cfg.Dir, b.cfg.Now)
	if err != nil {
		return nil, err
	}
	return StartServer(ServerConfig{Addr: addr, Listener: ln, Tokens: tokens, Now: b.cfg.Now, Mono: b.cfg.Mono})
}

// Name implements harness.Backend.
func (b *Backend) Name() string {
	if b.cfg.Variant == "" || b.cfg.Variant == Memory {
		return "naive"
	}
	return "naive-" + string(b.cfg.Variant)
}

// Endpoints implements harness.Backend.
func (b *Backend) Endpoints() []string { return []string{b.addr} }

// Server is the running lock server (nil while crashed).
func (b *Backend) Server() *Server {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.srv
}

// Close implements harness.Backend.
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	var err error
	if b.srv != nil {
		err = b.srv.Close()
		b.srv = nil
	}
	if b.hold != nil {
		err = errors.Join(err, b.hold.Close())
		b.hold = nil
	}
	return err
}

// Crash stops the lock server at once: connections are cut, calls in flight fail, and
// everything it held in memory (the lease, an in-memory counter) is gone.
func (b *Backend) Crash(_ context.Context, i int) error {
	if i != 0 {
		return fmt.Errorf("naive: there is one server, not node %d", i)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.srv == nil {
		return nil
	}
	err := b.srv.Close()
	b.srv = nil
	b.hold, b.holdErr = proc.HoldPort(b.addr)
	return err
}

// restartCeiling bounds how long Restart waits for its port to be free again.
const restartCeiling = 30 * time.Second

// Restart starts the lock server again on the same address. With keepData=false the
// persisted counter's file is removed first; an in-memory counter is lost either way.
func (b *Backend) Restart(ctx context.Context, i int, keepData bool) error {
	if i != 0 {
		return fmt.Errorf("naive: there is one server, not node %d", i)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.srv != nil {
		return fmt.Errorf("naive: server is running")
	}
	if !keepData && b.cfg.Dir != "" {
		if err := os.RemoveAll(filepath.Join(b.cfg.Dir, "token")); err != nil {
			return err
		}
	}
	srv, err := b.start(b.addr, nil)
	// The port hold can miss (another socket had the port for a moment after the crash):
	// wait out a transient owner, within a generous ceiling, rather than fail the run.
	deadline := time.Now().Add(restartCeiling)
	for err != nil && errors.Is(err, syscall.EADDRINUSE) && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(100 * time.Millisecond)
		srv, err = b.start(b.addr, nil)
	}
	if err != nil {
		if b.holdErr != nil {
			return fmt.Errorf("naive: restart on %s: %w (the port was not held while crashed: %v)", b.addr, err, b.holdErr)
		}
		return fmt.Errorf("naive: restart on %s: %w", b.addr, err)
	}
	b.srv = srv
	if b.hold != nil {
		_ = b.hold.Close()
		b.hold = nil
	}
	return nil
}

// NewLocker implements harness.Backend.
func (b *Backend) NewLocker(_ context.Context, id int, addrs []string) (harness.Locker, error) {
	if len(addrs) != 1 {
		return nil, fmt.Errorf("naive: want 1 address, got %d", len(addrs))
	}
	l := NewLocker(addrs[0], fmt.Sprintf("c%d", id), b.cfg.TTL)
	if b.cfg.ClientNow != nil {
		l.now = func() time.Time { return b.cfg.ClientNow(id) }
	}
	return l, nil
}

// Locker is a client of a naive lock server.
type Locker struct {
	owner string
	ttl   time.Duration
	http  *jsonhttp.Client
	now   func() time.Time // the client's clock

	// leases are the live leases, renewed every TTL/3 by the client's clock; a renewal
	// stuck in a stalled link does not hold up a release.
	leases renewal.Set
}

// NewLocker returns a client of the lock server at addr that acquires as owner.
func NewLocker(addr, owner string, ttl time.Duration) *Locker {
	l := &Locker{owner: owner, ttl: ttl, http: jsonhttp.New(addr), now: time.Now}
	l.leases.Options = renewal.Options{Now: func() time.Time { return l.now() }, Attempt: ttl, CutOnStop: true}
	return l
}

// Acquire polls the server until the default lock is granted or ctx ends.
func (l *Locker) Acquire(ctx context.Context) (harness.Lease, error) {
	return l.AcquireKey(ctx, "")
}

// AcquireKey polls the server until key's lock is granted or ctx ends
// (harness.KeyedLocker).
func (l *Locker) AcquireKey(ctx context.Context, key string) (harness.Lease, error) {
	poll := max(l.ttl/10, 5*time.Millisecond)
	for {
		sent := l.now()
		var resp AcquireResponse
		err := l.http.Do(ctx, "POST", "/acquire", AcquireRequest{Owner: l.owner, TTLms: l.ttl.Milliseconds(), Key: key}, &resp)
		if err != nil {
			return nil, err
		}
		if resp.Granted {
			return l.start(key, resp.Token, sent), nil
		}
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			// The last answer was "busy": nothing was granted.
			return nil, fmt.Errorf("%w: lock held by %s: %v", harness.ErrNoEffect, resp.Holder, ctx.Err())
		case <-t.C:
		}
	}
}

// Close stops every renewal. Safe to call twice.
func (l *Locker) Close() error {
	l.leases.Close()
	return l.http.Close()
}

func (l *Locker) start(key string, token int64, sent time.Time) *lease {
	le := &lease{Lease: renewal.NewLease(token, l.ttl, sent.Add(l.ttl)), l: l, key: key}
	l.leases.Run(le.Keeper, le.renew)
	return le
}

// lease is a naive grant: its ValidUntil is when it ends by the client's own clock, as
// a careful client believes it (the TTL from the last confirmed acquire or renewal's
// send time); Lost closes when the server refuses a renewal or none was confirmed for a
// TTL by that clock.
type lease struct {
	renewal.Lease
	l   *Locker
	key string
}

// renew is one renewal, sent at the client's clock's reading.
func (le *lease) renew(ctx context.Context) (renewal.Result, time.Time) {
	sent := le.l.now()
	var resp LeaseResponse
	err := le.l.http.Do(ctx, "POST", "/renew", renewRequest{LeaseRequest{le.l.owner, le.Token(), le.key}, le.l.ttl.Milliseconds()}, &resp)
	switch {
	case err == nil && resp.OK:
		return renewal.Renewed, sent.Add(le.l.ttl)
	case err == nil:
		return renewal.Refused, time.Time{}
	}
	return renewal.Unknown, time.Time{}
}

// Release stops renewing and frees the lock on the server.
func (le *lease) Release(ctx context.Context) error {
	le.l.leases.Stop(le.Keeper)
	var resp LeaseResponse
	if err := le.l.http.Do(ctx, "POST", "/release", LeaseRequest{le.l.owner, le.Token(), le.key}, &resp); err != nil {
		return err
	}
	if !resp.OK {
		return fmt.Errorf("%w: %w", harness.ErrNoEffect, ErrNotHolder)
	}
	return nil
}

// ErrNotHolder: the server no longer knows this lease (it expired and was granted again).
var ErrNotHolder = errors.New("lease is no longer held")
