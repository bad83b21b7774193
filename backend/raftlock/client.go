package raftlock

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fencecheck/fencecheck/backend/lease"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/jsonhttp"
)

var (
	_ harness.Locker = (*locker)(nil)
	_ harness.Lease  = (*Lease)(nil)
)

// Reasons a lease is lost (Lease.Err).
var (
	ErrLeaseExpired  = errors.New("raft lock: lease expired by the client's clock before a renewal succeeded")
	ErrLeaseRefused  = errors.New("raft lock: renewal refused: the lease is no longer held")
	ErrLeaseReleased = errors.New("raft lock: lease released")
	ErrLockerClosed  = errors.New("raft lock: locker closed, renewals stopped")
)

// locker is one harness client's lock client. It talks only to its addresses (node i via
// addrs[i]), follows the nodes' leader hints by index, and keeps each granted lease alive
// in the background.
type locker struct {
	id         int
	owner      string
	ttl        time.Duration
	reqTimeout time.Duration
	clock      func() time.Time
	clients    []*jsonhttp.Client
	target     atomic.Int64 // the node to try first (the last known leader)

	ctx    context.Context // cancelled by Close: stops renewals
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	closed bool
	leases map[*Lease]struct{}

	closeOnce sync.Once

	busyHook func(response) // tests: called after a busy answer, before the poll pause
}

// lockerSeq makes owner names unique per Locker, so a new Locker for the same harness
// client never inherits (or renews, or releases) a grant made to an earlier one.
var lockerSeq atomic.Int64

// NewLocker returns a lock client for harness client id with the config's TTL and client
// clock, reaching node i at addrs[i]. It needs no Service: any raft lock nodes will do.
func NewLocker(cfg config, id int, addrs []string) (*locker, error) {
	return newLocker(cfg, id, addrs, "")
}

// newLocker is NewLocker with proc, when not "", naming the process among the owner's
// parts ("client-<id>.<proc>.<n>"): a client host's n starts again at 1 in every host.
func newLocker(cfg config, id int, addrs []string, proc string) (*locker, error) {
	cfg = cfg.withDefaults()
	if len(addrs) == 0 {
		return nil, fmt.Errorf("raft lock: NewLocker without addresses")
	}
	if cfg.TTL < MinTTL || cfg.TTL > MaxTTL {
		return nil, fmt.Errorf("raft lock: TTL %s outside %s..%s", cfg.TTL, MinTTL, MaxTTL)
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &locker{
		id:         id,
		owner:      ownerName(id, proc, lockerSeq.Add(1)),
		ttl:        cfg.TTL,
		reqTimeout: cfg.RequestTimeout,
		clock:      cfg.clientClock(id),
		ctx:        ctx,
		cancel:     cancel,
		leases:     make(map[*Lease]struct{}),
	}
	for _, a := range addrs {
		l.clients = append(l.clients, jsonhttp.New(a))
	}
	return l, nil
}

// Owner is the owner name this client acquires the lock as: "client-<id>.<n>", n unique
// per Locker in this process ("client-<id>.<proc>.<n>" in a client host, proc naming
// the host process).
func (l *locker) Owner() string { return l.owner }

func ownerName(id int, proc string, n int64) string {
	if proc == "" {
		return fmt.Sprintf("client-%d.%d", id, n)
	}
	return fmt.Sprintf("client-%d.%s.%d", id, proc, n)
}

// retryPause is the pause after a full round of nodes that could not serve a request.
const retryPause = 10 * time.Millisecond

// call sends one request to the leader, following hints and moving on from nodes that
// refuse connections or are not leader, until a node answers with a final status or ctx
// ends. The error wraps harness.ErrNoEffect iff the request definitely had no effect.
func (l *locker) call(ctx context.Context, path string, req request) (response, error) {
	n := len(l.clients)
	target := int(l.target.Load()) % n
	misses := 0
	var last error
	for {
		if err := ctx.Err(); err != nil {
			return response{}, fmt.Errorf("%w: raft lock %s: %w (last: %v)", harness.ErrNoEffect, path, err, last)
		}
		// A request that was never completely written cannot have been served: the server
		// decodes the whole body before it proposes anything.
		var wrote atomic.Bool
		actx, cancel := context.WithTimeout(ctx, 2*l.reqTimeout+time.Second)
		actx = httptrace.WithClientTrace(actx, &httptrace.ClientTrace{
			WroteRequest: func(i httptrace.WroteRequestInfo) {
				if i.Err == nil {
					wrote.Store(true)
				}
			},
		})
		var resp response
		err := l.clients[target].Do(actx, http.MethodPost, path, req, &resp)
		cancel()
		var se *jsonhttp.StatusError
		switch {
		case err == nil:
		case errors.As(err, &se):
			return response{}, fmt.Errorf("raft lock %s via node %d: %w", path, target, err) // a bad request: no effect
		case errors.Is(err, harness.ErrNoEffect) || !wrote.Load():
			last = fmt.Errorf("node %d: %w", target, err)
			target = (target + 1) % n
			if err := l.missed(ctx, &misses, n); err != nil {
				return response{}, fmt.Errorf("%w: raft lock %s: %w (last: %v)", harness.ErrNoEffect, path, err, last)
			}
			continue
		default:
			// The node took the request and never answered (paused, partitioned): the
			// next call starts at the next node instead of waiting on this one again.
			l.target.Store(int64((target + 1) % n))
			return response{}, fmt.Errorf("raft lock %s via node %d: outcome unknown: %w", path, target, err)
		}
		switch resp.Status {
		case StatusNotLeader, StatusUnavailable:
			last = fmt.Errorf("node %d: %s %s", target, resp.Status, resp.Error)
			if resp.Status == StatusNotLeader && resp.Leader >= 0 && resp.Leader < n && resp.Leader != target {
				target = resp.Leader
			} else {
				target = (target + 1) % n
			}
			if err := l.missed(ctx, &misses, n); err != nil {
				return response{}, fmt.Errorf("%w: raft lock %s: %w (last: %v)", harness.ErrNoEffect, path, err, last)
			}
			continue
		case StatusUnknown:
			return resp, fmt.Errorf("raft lock %s via node %d: outcome unknown: %s", path, target, resp.Error)
		}
		l.target.Store(int64(target))
		return resp, nil
	}
}

// missed counts a node that could not serve; after a round of them it pauses.
func (l *locker) missed(ctx context.Context, misses *int, n int) error {
	*misses++
	if *misses < n+1 {
		return nil
	}
	*misses = 0
	return sleepCtx(ctx, retryPause)
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

// pollInterval is how often Acquire retries a busy lock (~TTL/10).
func (l *locker) pollInterval() time.Duration {
	return min(max(l.ttl/10, time.Millisecond), time.Second)
}

// Acquire implements harness.Locker: it retries while the lock is busy (every ~TTL/10)
// until it is granted or ctx ends. An error wraps harness.ErrNoEffect iff no acquire
// could have taken effect; otherwise (leadership lost, timeout) the outcome is unknown.
func (l *locker) Acquire(ctx context.Context) (harness.Lease, error) {
	lease, err := l.AcquireLease(ctx)
	if err != nil {
		return nil, err
	}
	return lease, nil
}

// AcquireLease is Acquire returning the concrete lease.
func (l *locker) AcquireLease(ctx context.Context) (*Lease, error) {
	for {
		l.mu.Lock()
		closed := l.closed
		l.mu.Unlock()
		if closed {
			return nil, fmt.Errorf("%w: raft lock: locker closed", harness.ErrNoEffect)
		}
		start := l.clock()
		resp, err := l.call(ctx, "/acquire", request{Owner: l.owner, TTL: int64(l.ttl)})
		if err != nil {
			return nil, fmt.Errorf("acquire: %w", err)
		}
		switch resp.Status {
		case StatusOK:
			return l.startLease(resp, start)
		case StatusBusy:
			if l.busyHook != nil {
				l.busyHook(resp)
			}
			if err := sleepCtx(ctx, l.pollInterval()); err != nil {
				return nil, fmt.Errorf("%w: raft lock acquire: %w (held by %s, token %d)",
					harness.ErrNoEffect, err, resp.Holder, resp.Token)
			}
		default:
			return nil, fmt.Errorf("%w: raft lock acquire: %s %s", harness.ErrNoEffect, resp.Status, resp.Error)
		}
	}
}

func (l *locker) startLease(resp response, start time.Time) (*Lease, error) {
	rctx, cancel := context.WithCancel(l.ctx)
	lost := make(chan struct{})
	ls := &Lease{
		Grant:      lease.NewGrant(resp.Token, l.ttl, lost),
		l:          l,
		lost:       lost,
		stop:       cancel,
		done:       make(chan struct{}),
		validUntil: start.Add(l.ttl),
	}
	ls.Expiry = lease.NewExpiry(ls.validity)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		cancel()
		close(ls.done)
		ls.markLost(ErrLockerClosed)
		return ls, nil
	}
	l.leases[ls] = struct{}{}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		defer close(ls.done)
		ls.renewLoop(rctx, start)
	}()
	return ls, nil
}

// Close implements harness.Locker: it stops every lease's renewals (their Lost channels
// close with ErrLockerClosed) and the client's connections. It does not release the
// lock. Safe to call twice.
func (l *locker) Close() error {
	l.closeOnce.Do(func() {
		l.mu.Lock()
		l.closed = true
		leases := make([]*Lease, 0, len(l.leases))
		for ls := range l.leases {
			leases = append(leases, ls)
		}
		l.mu.Unlock()
		l.cancel()
		l.wg.Wait()
		for _, ls := range leases {
			ls.markLost(ErrLockerClosed)
		}
		for _, c := range l.clients {
			_ = c.Close()
		}
	})
	return nil
}

// Lease is a granted lock, kept alive in the background every TTL/3. Its token is the
// log index of the committed acquire entry; Lost closes when a renewal is refused, when
// no renewal succeeded within TTL by the client's clock, after Release, or when the
// locker closes; ValidUntil is when the client believes the lease ends, by its own
// clock: the send time of the last successful acquire or renew plus TTL.
type Lease struct {
	lease.Grant
	lease.Expiry
	l *locker

	lost     chan struct{}
	lostOnce sync.Once
	stop     context.CancelFunc
	done     chan struct{}

	mu         sync.Mutex
	validUntil time.Time // by the client's clock: last successful request's send time + TTL
	lostErr    error
	released   bool
}

// Err says why the lease was lost (nil while it is not).
func (ls *Lease) Err() error {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.lostErr
}

// LossReason implements harness.LossReasoner: Err's text, "" while the lease is held.
func (ls *Lease) LossReason() string {
	if err := ls.Err(); err != nil {
		return err.Error()
	}
	return ""
}

func (ls *Lease) validity() time.Time {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.validUntil
}

func (ls *Lease) markLost(err error) {
	ls.lostOnce.Do(func() {
		ls.mu.Lock()
		ls.lostErr = err
		ls.mu.Unlock()
		close(ls.lost)
	})
}

func (ls *Lease) forget() {
	ls.l.mu.Lock()
	delete(ls.l.leases, ls)
	ls.l.mu.Unlock()
}

// renewLoop renews every TTL/3 (retrying every TTL/10 after a failure) until a renewal
// is refused or the lease expires by the client's clock, or ctx ends.
func (ls *Lease) renewLoop(ctx context.Context, start time.Time) {
	l := ls.l
	interval := ls.TTL() / 3
	retry := max(ls.TTL()/10, time.Millisecond)
	next := start.Add(interval)
	for {
		now := l.clock()
		vu := ls.ValidUntil()
		if !now.Before(vu) {
			ls.markLost(ErrLeaseExpired)
			return
		}
		wait := min(next.Sub(now), vu.Sub(now), interval)
		if wait > 0 {
			if sleepCtx(ctx, wait) != nil {
				return
			}
			continue
		}
		sent := l.clock()
		rctx, cancel := context.WithTimeout(ctx, vu.Sub(sent))
		resp, err := l.call(rctx, "/renew", request{Owner: l.owner, Token: ls.Token()})
		cancel()
		if ctx.Err() != nil {
			return
		}
		switch {
		case err == nil && resp.Status == StatusOK:
			ls.mu.Lock()
			ls.validUntil = sent.Add(ls.TTL())
			ls.mu.Unlock()
			next = sent.Add(interval)
		case err == nil && resp.Status == StatusRefused:
			ls.markLost(fmt.Errorf("%w (%s)", ErrLeaseRefused, resp.Error))
			return
		default:
			next = l.clock().Add(retry)
		}
	}
}

// stopRenewals stops the background renewal and waits for it.
func (ls *Lease) stopRenewals() {
	ls.stop()
	<-ls.done
}

// Release implements harness.Lease: it stops renewing and releases the lock. An error
// after the lease was lost is expected (the lock is someone else's or expired): it wraps
// harness.ErrNoEffect when the service answered; an unknown outcome does not. A second
// Release after a successful one does nothing and says so (ErrNoEffect).
func (ls *Lease) Release(ctx context.Context) error {
	ls.stopRenewals()
	ls.mu.Lock()
	released := ls.released
	ls.mu.Unlock()
	if released {
		return fmt.Errorf("%w: raft lock: lease %d already released", harness.ErrNoEffect, ls.Token())
	}
	resp, err := ls.l.call(ctx, "/release", request{Owner: ls.l.owner, Token: ls.Token()})
	if err != nil {
		return fmt.Errorf("release token %d: %w", ls.Token(), err)
	}
	switch resp.Status {
	case StatusOK:
		ls.mu.Lock()
		ls.released = true
		ls.mu.Unlock()
		ls.markLost(ErrLeaseReleased)
		ls.forget()
		return nil
	case StatusRefused:
		ls.markLost(fmt.Errorf("%w (%s)", ErrLeaseRefused, resp.Error))
		ls.forget()
		return fmt.Errorf("%w: raft lock release token %d: not held any more (%s)", harness.ErrNoEffect, ls.Token(), resp.Error)
	default:
		return fmt.Errorf("%w: raft lock release token %d: %s %s", harness.ErrNoEffect, ls.Token(), resp.Status, resp.Error)
	}
}
