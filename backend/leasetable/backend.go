package leasetable

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/backend/lease"
	"github.com/fencecheck/fencecheck/backend/renewal"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/nemesis"
)

// Backend is the lease-table lock on one store with one clock. The started values the
// descriptors return wrap it with the capabilities of their store (see descriptor.go).
type Backend struct {
	name    string
	clock   Clock
	ttl     time.Duration
	lock    string // the row's name: the run's own lock
	st      store
	stmts   statements
	clients int
	// clientClock is the harness's clock of each client.
	clientClock func(int) func() time.Time
	// dbClock is the database's clock when fencecheck owns it (SQLite), else nil.
	dbClock *nemesis.Clock
	// closeStore also stops what the store runs on (a private server).
	closeStore func() error

	mu sync.Mutex
	// drift is, per client, how far its machine's clock has run away from the harness's
	// clock of that client: the skew fault's clock in the client-time variant.
	drift  map[int]*nemesis.Clock
	closed bool
}

// config is what a Backend is made of.
type config struct {
	name        string
	clock       Clock
	ttl         time.Duration
	runID       string
	clients     int
	clientClock func(int) func() time.Time
	dbClock     *nemesis.Clock
	closeStore  func() error
}

func newBackend(cfg config, st store) *Backend {
	var r [6]byte
	_, _ = rand.Read(r[:]) // crypto/rand.Read never fails on Linux
	cc := cfg.clientClock
	if cc == nil {
		cc = func(int) func() time.Time { return time.Now }
	}
	return &Backend{
		name: cfg.name, clock: cfg.clock, ttl: cfg.ttl, st: st, stmts: st.Statements(cfg.clock),
		// Runs sharing an existing server each lock a row of their own.
		lock:    "fencecheck/" + cfg.runID + "/" + hex.EncodeToString(r[:]),
		clients: cfg.clients, clientClock: cc, dbClock: cfg.dbClock, closeStore: cfg.closeStore,
		drift: map[int]*nemesis.Clock{},
	}
}

// Name implements harness.Backend.
func (b *Backend) Name() string { return b.name }

// core is the Backend under a started value's capability wrapper.
func (b *Backend) core() *Backend { return b }

// Endpoints implements harness.Backend: the table's one address.
func (b *Backend) Endpoints() []string { return []string{b.st.Endpoint()} }

// Clock is whose clock decides expiry.
func (b *Backend) Clock() Clock { return b.clock }

// LockName is the name of the run's row in the lock table.
func (b *Backend) LockName() string { return b.lock }

// Close implements harness.Backend: deletes the run's row and stops the store. Safe to
// call twice.
func (b *Backend) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	b.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, derr := b.st.Admin(ctx, "DELETE FROM "+Table+" WHERE name = $1", b.lock)
	if errors.Is(derr, harness.ErrNoEffect) {
		derr = nil // a crashed private store: nothing outlives it
	}
	if derr != nil {
		derr = fmt.Errorf("%s: remove the run's row %q: %w", b.name, b.lock, derr)
	}
	return errors.Join(derr, b.st.Close(), b.closeStore())
}

// driftOf is client id's machine-clock drift (created at zero).
func (b *Backend) driftOf(id int) *nemesis.Clock {
	b.mu.Lock()
	defer b.mu.Unlock()
	c, ok := b.drift[id]
	if !ok {
		c = nemesis.NewClock()
		b.drift[id] = c
	}
	return c
}

// Holder is the locked_by of the run's row ("" when there is no row).
func (b *Backend) Holder(ctx context.Context) (string, error) {
	v, err := b.st.Admin(ctx, "SELECT locked_by FROM "+Table+" WHERE name = $1", b.lock)
	if err != nil || len(v) == 0 {
		return "", err
	}
	return v[0], nil
}

// serviceClock is the clock that decides the next expiry (registry.ServiceClocked):
// the database's (database time), or the clock of the client that would take the lock
// next (client time: the holder's lock_until is compared with the taker's clock, so a
// fast clock there ends the holder's lease early).
func (b *Backend) serviceClock(ctx context.Context) (string, *nemesis.Clock, error) {
	if b.clock == DatabaseTime {
		if b.dbClock == nil {
			return "database", nil, fmt.Errorf("%s: the database's clock is its server's; fencecheck does not own it", b.name)
		}
		return "database", b.dbClock, nil
	}
	by, err := b.Holder(ctx)
	if err != nil {
		return "lock table", nil, fmt.Errorf("%s: read the holder from the lock table: %w", b.name, err)
	}
	holder, ok := clientOf(by)
	if !ok {
		return "lock table", nil, fmt.Errorf("%s: the lock table names no client as the holder (locked_by %q)", b.name, by)
	}
	if b.clients < 2 {
		return "lock table", nil, fmt.Errorf("%s: skewing the next taker's clock needs 2 clients or more, the run has %d", b.name, b.clients)
	}
	next := (holder + 1) % b.clients
	return owner(next), b.driftOf(next), nil
}

// owner is client id's locked_by, and the name faults give it.
func owner(id int) string { return "client-" + strconv.Itoa(id) }

func clientOf(by string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimPrefix(by, "client-"))
	return n, err == nil && strings.HasPrefix(by, "client-")
}

// NewLocker implements harness.Backend: a session of addrs[0] only.
func (b *Backend) NewLocker(_ context.Context, id int, addrs []string) (harness.Locker, error) {
	if len(addrs) != 1 {
		return nil, fmt.Errorf("%w: %s: want 1 address, got %d", harness.ErrNoEffect, b.name, len(addrs))
	}
	return &Locker{b: b, id: id, by: owner(id), sess: b.st.Session(addrs[0]), now: b.clientClock(id), drift: b.driftOf(id)}, nil
}

// Locker is one client of the lock table.
type Locker struct {
	b     *Backend
	id    int
	by    string
	sess  session
	now   func() time.Time // the harness's clock of this client
	drift *nemesis.Clock
	// leases are this client's live leases (their renewals stop on Close).
	leases renewal.Set
}

var _ harness.Locker = (*Locker)(nil)

// clientNow is the client's clock as its SQL reads it: the harness's clock of the client
// plus its machine clock's drift, in microseconds.
func (l *Locker) clientNow() int64 { return l.now().Add(l.drift.Skew()).UnixMicro() }

// args are a statement's arguments, with the client's now appended under client time.
func (l *Locker) args(a ...any) []any {
	if l.b.clock == ClientTime {
		a = append(a, l.clientNow())
	}
	return a
}

func (l *Locker) attemptTimeout() time.Duration { return max(l.b.ttl, 500*time.Millisecond) }

// Acquire implements harness.Locker: the conditional UPDATE (and, when the row is
// missing, the INSERT) until one grants the lock or ctx ends, every TTL/20 (at least
// 2 ms). An attempt is not cut short by ctx: a grant whose answer was lost would be an
// unknown outcome. An error wraps harness.ErrNoEffect when the lock was not taken.
func (l *Locker) Acquire(ctx context.Context) (harness.Lease, error) {
	poll := max(l.b.ttl/20, 2*time.Millisecond)
	ttl := l.b.ttl.Microseconds()
	for {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%w: %s: lock busy until %w", harness.ErrNoEffect, l.b.name, err)
		}
		start := l.now()
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.attemptTimeout())
		fences, err := l.sess.Run(actx, l.b.stmts.acquire, l.args(l.b.lock, l.by, ttl)...)
		if err == nil && len(fences) == 0 {
			fences, err = l.sess.Run(actx, l.b.stmts.insert, l.args(l.b.lock, l.by, ttl)...)
		}
		cancel()
		switch {
		case err != nil && !errors.Is(err, harness.ErrNoEffect):
			return nil, fmt.Errorf("%s: acquire: %w", l.b.name, err)
		case err == nil && len(fences) == 1:
			return l.newLease(fences[0], start), nil
		case err == nil && len(fences) > 1:
			return nil, fmt.Errorf("%s: acquire: %d rows named %q granted at once", l.b.name, len(fences), l.b.lock)
		}
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			if err != nil {
				return nil, fmt.Errorf("%w: %s: acquire: %w", harness.ErrNoEffect, l.b.name, err)
			}
			return nil, fmt.Errorf("%w: %s: lock busy until %w", harness.ErrNoEffect, l.b.name, ctx.Err())
		case <-t.C:
		}
	}
}

func (l *Locker) newLease(fence int64, start time.Time) *Lease {
	le := &Lease{Lease: renewal.NewLease(fence, l.b.ttl, start.Add(l.b.ttl)), l: l}
	l.leases.Run(le.Keeper, le.renew)
	return le
}

// Close implements harness.Locker: stops the renewals of leases still held (their Lost
// channels close) and closes the session. Safe to call twice.
func (l *Locker) Close() error {
	if !l.leases.Close() {
		return nil
	}
	return l.sess.Close()
}

// Lease is one grant: the row's fence at the grant is its token. Lost closes when a
// renewal finds the row no longer holds this grant (another client took it, so the fence
// moved), when no renewal was confirmed for a TTL, or when the lease is released or its
// locker closed; ValidUntil is the start of the last confirmed grant or renewal plus the
// TTL, by the client's clock.
type Lease struct {
	renewal.Lease
	l        *Locker
	released lease.Released
}

var (
	_ harness.Lease    = (*Lease)(nil)
	_ harness.Expiring = (*Lease)(nil)
)

// renew is one conditional UPDATE of this grant's row.
func (le *Lease) renew(ctx context.Context) (renewal.Result, time.Time) {
	l := le.l
	start := l.now()
	fences, err := l.sess.Run(ctx, l.b.stmts.renew, l.args(l.b.lock, l.by, l.b.ttl.Microseconds(), le.Token())...)
	switch {
	case err != nil:
		return renewal.Unknown, time.Time{}
	case len(fences) == 1:
		return renewal.Renewed, start.Add(l.b.ttl)
	}
	return renewal.Refused, time.Time{} // the fence moved: another client holds the lock
}

// Release implements harness.Lease: stop renewing and set the row's lock_until to now,
// if the row still holds this grant. A row taken over meanwhile (the lease was lost)
// gives an error wrapping harness.ErrNoEffect; so does a second Release.
func (le *Lease) Release(ctx context.Context) error {
	if err := le.released.First(le.l.b.name); err != nil {
		return err
	}
	l := le.l
	l.leases.Stop(le.Keeper)
	fences, err := l.sess.Run(ctx, l.b.stmts.release, l.args(l.b.lock, l.by, le.Token())...)
	switch {
	case err != nil:
		return fmt.Errorf("%s: release: %w", l.b.name, err)
	case len(fences) == 0:
		return fmt.Errorf("%w: %s: the row no longer holds grant %d: another client took the lock after the lease expired", harness.ErrNoEffect, l.b.name, le.Token())
	}
	return nil
}
