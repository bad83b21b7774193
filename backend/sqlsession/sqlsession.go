// Package sqlsession is the client side shared by the database lock backends
// (postgres-advisory, mariadb-lock): a lock that lives exactly as long as one database
// session. Each grant takes its own session connection (dialled through the client's
// fault proxy), tries the database's session lock on it until it is granted, and keeps
// the session from going idle with a ping every TTL/3. The server ends a session that
// stays silent for a TTL (PostgreSQL's idle_session_timeout, MariaDB's wait_timeout),
// and with it the lock: that is the lease's expiry. The client notices (Lost) when a
// ping fails or no ping was confirmed for a TTL.
package sqlsession

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fencecheck/fencecheck/backend/lease"
	"github.com/fencecheck/fencecheck/harness"
)

// Session is one database session that can hold the lock.
type Session interface {
	// TryLock tries the lock once, without waiting. On a grant it returns the grant's
	// token (0 when the dialect hands out none). An error with unknown outcome (the
	// request may have run) must not wrap harness.ErrNoEffect.
	TryLock(ctx context.Context) (granted bool, token int64, err error)
	// Ping runs a trivial statement, which also resets the server's idle timer.
	Ping(ctx context.Context) error
	// Unlock gives the lock back; held=false when the session no longer held it.
	Unlock(ctx context.Context) (held bool, err error)
	// Close ends the session (the server drops the lock with it).
	Close() error
}

// Dialer opens a session to addr, the client's proxied address. An error means no
// session exists (the lock was not taken).
type Dialer func(ctx context.Context, addr string) (Session, error)

// Config configures the lockers of one backend.
type Config struct {
	// Name prefixes error messages ("postgres-advisory").
	Name string
	// TTL is the server's idle limit for a session: the lease's time to live.
	TTL time.Duration
	// Dial opens a session.
	Dial Dialer
	// NoToken: the dialect hands out no token; a grant's Token is the order in which
	// the backend's lockers saw grants returned (harness.Tokenless), counted in Seen.
	NoToken bool
	Seen    *atomic.Int64
}

// Locker is one harness client's lock client.
type Locker struct {
	cfg  Config
	addr string

	mu     sync.Mutex
	leases map[*Lease]struct{}
	closed bool
}

var _ harness.Locker = (*Locker)(nil)

// NewLocker returns a locker whose sessions dial addr only.
func NewLocker(cfg Config, addr string) *Locker {
	return &Locker{cfg: cfg, addr: addr, leases: map[*Lease]struct{}{}}
}

// poll is how often a busy lock is tried again.
func (l *Locker) poll() time.Duration { return max(l.cfg.TTL/20, 5*time.Millisecond) }

// opTimeout bounds one statement: a TTL, at least 1 s (a loaded machine).
func (l *Locker) opTimeout() time.Duration { return max(l.cfg.TTL, time.Second) }

func (l *Locker) errorf(format string, args ...any) error {
	return fmt.Errorf(l.cfg.Name+": "+format, args...)
}

// Acquire implements harness.Locker: open a session, try the lock on it every TTL/20
// until granted or ctx ends. An error wraps harness.ErrNoEffect when the lock was
// definitely not taken.
func (l *Locker) Acquire(ctx context.Context) (harness.Lease, error) {
	var sess Session
	defer func() {
		if sess != nil {
			_ = sess.Close()
		}
	}()
	for {
		if err := ctx.Err(); err != nil {
			return nil, l.errorf("%w: lock not granted before %w", harness.ErrNoEffect, err)
		}
		if sess == nil {
			dctx, cancel := context.WithTimeout(ctx, l.opTimeout())
			s, err := l.cfg.Dial(dctx, l.addr)
			cancel()
			if err != nil {
				// No session, no lock: try again until ctx ends.
				if serr := sleepCtx(ctx, l.poll()); serr != nil {
					return nil, l.errorf("%w: open session: %w", harness.ErrNoEffect, err)
				}
				continue
			}
			sess = s
		}
		start := time.Now()
		// An attempt is not cut short by ctx: a grant whose reply was lost would be an
		// unknown outcome, and the statement answers in a millisecond.
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.opTimeout())
		granted, token, err := sess.TryLock(actx)
		cancel()
		if err != nil {
			_ = sess.Close()
			sess = nil
			if errors.Is(err, harness.ErrNoEffect) {
				if serr := sleepCtx(ctx, l.poll()); serr != nil {
					return nil, l.errorf("try lock: %w", err)
				}
				continue
			}
			// The session is closed, so the server drops the lock if it was granted;
			// until it notices, the outcome is unknown.
			return nil, l.errorf("try lock: %w", err)
		}
		if granted {
			if l.cfg.NoToken {
				token = l.cfg.Seen.Add(1)
			}
			le := l.newLease(sess, token, start)
			sess = nil // the lease owns it now
			return le, nil
		}
		if err := sleepCtx(ctx, l.poll()); err != nil {
			return nil, l.errorf("%w: lock busy until %w", harness.ErrNoEffect, err)
		}
	}
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

func (l *Locker) newLease(sess Session, token int64, start time.Time) *Lease {
	le := &Lease{l: l, sess: sess, validUntil: start.Add(l.cfg.TTL), loss: lease.NewLoss(), stop: make(chan struct{}), done: make(chan struct{})}
	le.Grant, le.Expiry = lease.NewGrant(token, l.cfg.TTL, le.loss.Done()), lease.NewExpiry(le.validity)
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		_ = sess.Close()
		le.loss.Mark()
		close(le.done)
		return le
	}
	l.leases[le] = struct{}{}
	l.mu.Unlock()
	go le.keepAlive()
	return le
}

// Close implements harness.Locker: ends the sessions of leases still held (their Lost
// channels close). Safe to call twice.
func (l *Locker) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	leases := make([]*Lease, 0, len(l.leases))
	for le := range l.leases {
		leases = append(leases, le)
	}
	l.mu.Unlock()
	for _, le := range leases {
		le.stopKeepAlive()
		le.closeSession()
	}
	return nil
}

// Lease is a lock held by one session. Lost closes when a ping fails, when no ping was
// confirmed for a TTL (the server has ended the session by now), or when the lease is
// released or its locker closed; ValidUntil is the start of the last confirmed
// statement on the session plus the TTL (the server's idle timer starts later than
// that).
type Lease struct {
	lease.Grant
	lease.Expiry
	l        *Locker
	sess     Session
	loss     *lease.Loss
	released lease.Released

	mu         sync.Mutex
	validUntil time.Time
	sessClosed bool

	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{} // the keep-alive goroutine has ended
}

var (
	_ harness.Lease    = (*Lease)(nil)
	_ harness.Expiring = (*Lease)(nil)
)

func (le *Lease) validity() time.Time {
	le.mu.Lock()
	defer le.mu.Unlock()
	return le.validUntil
}

func (le *Lease) markLost() { le.loss.Mark() }

func (le *Lease) stopKeepAlive() {
	le.stopOnce.Do(func() { close(le.stop) })
	<-le.done
	le.l.mu.Lock()
	delete(le.l.leases, le)
	le.l.mu.Unlock()
}

func (le *Lease) closeSession() {
	le.mu.Lock()
	already := le.sessClosed
	le.sessClosed = true
	le.mu.Unlock()
	if !already {
		_ = le.sess.Close()
	}
}

// keepAlive pings the session every TTL/3 until stopped or lost. A lost session is
// closed at once, so the server drops the lock if it has not already.
func (le *Lease) keepAlive() {
	defer close(le.done)
	defer le.markLost()
	every := max(le.TTL()/3, time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-le.stop:
			return
		case <-t.C:
		}
		// Wait for the answer no longer than the lease is valid. A Release meanwhile
		// waits for it rather than cancel it: a cancelled statement makes the MySQL
		// driver close the connection, and the release would then fail on a healthy
		// session as an unknown outcome.
		ctx, cancel := context.WithDeadline(context.Background(), le.ValidUntil())
		start := time.Now()
		err := le.sess.Ping(ctx)
		cancel()
		if isClosed(le.stop) {
			return // Release or Close is ending the lease
		}
		if err != nil {
			le.markLost()
			le.closeSession()
			return
		}
		le.mu.Lock()
		le.validUntil = start.Add(le.TTL())
		le.mu.Unlock()
	}
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// Release implements harness.Lease: stop pinging, unlock, end the session. A lease
// already lost (its session ended) or released gives an error wrapping
// harness.ErrNoEffect.
func (le *Lease) Release(ctx context.Context) error {
	if err := le.released.First(le.l.cfg.Name); err != nil {
		return err
	}
	le.stopKeepAlive()
	defer le.closeSession()
	le.mu.Lock()
	gone := le.sessClosed
	le.mu.Unlock()
	if gone {
		return fmt.Errorf("%w: %s: the session holding the lock has ended: the lease was lost before the release", harness.ErrNoEffect, le.l.cfg.Name)
	}
	held, err := le.sess.Unlock(ctx)
	if err != nil {
		return fmt.Errorf("%s: release: %w", le.l.cfg.Name, err)
	}
	if !held {
		return fmt.Errorf("%w: %s: the session no longer held the lock", harness.ErrNoEffect, le.l.cfg.Name)
	}
	return nil
}

// OneLine wraps err so that its message is one line (pgx lists each attempted host on
// a line of its own); errors.Is and errors.As still see err.
func OneLine(err error) error {
	if err == nil {
		return nil
	}
	return oneLine{err}
}

type oneLine struct{ err error }

func (o oneLine) Error() string {
	return strings.Join(strings.Fields(strings.ReplaceAll(o.err.Error(), "\n", "; ")), " ")
}

func (o oneLine) Unwrap() error { return o.err }

// ConnectHint adds to an error of connecting to the database what to do about it,
// where that is known: a PostgreSQL server that refused TLS (pgx's "server refused TLS
// connection", for a DSN whose sslmode asks for TLS) is a plain server, and the DSN needs
// sslmode=disable. Any other error is returned as it is; errors.Is and errors.As still
// see err through the hint.
func ConnectHint(err error) error {
	if err != nil && strings.Contains(err.Error(), "server refused TLS connection") {
		return hinted{err: err, hint: TLSRefusedHint}
	}
	return err
}

// TLSRefusedHint is ConnectHint's words for a server that refused TLS.
const TLSRefusedHint = "the server refused TLS: add sslmode=disable to the DSN"

type hinted struct {
	err  error
	hint string
}

func (h hinted) Error() string { return h.err.Error() + "; " + h.hint }
func (h hinted) Unwrap() error { return h.err }
