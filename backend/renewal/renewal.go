// Package renewal keeps a TTL lease alive for the lock clients that renew their own key:
// a renewal every TTL/3, the lease's validity by the client's own clock, and Lost closed
// when a renewal is refused or no renewal was confirmed for a TTL. A lease embeds Lease
// (its Token, TTL, Lost and ValidUntil); a Set tracks a locker's live leases so that
// closing the locker stops them all.
package renewal

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/backend/lease"
)

// Result is what one renewal attempt found.
type Result int

const (
	// Renewed: the server confirmed the renewal.
	Renewed Result = iota
	// Refused: the server answered that the lease is gone (expired, or another grant's).
	Refused
	// Unknown: no answer in time; the lease may still be valid until its ValidUntil.
	Unknown
)

// Func is one renewal attempt, bounded by ctx. On Renewed it returns the lease's new
// end by the client's clock (usually the attempt's start plus the TTL).
type Func func(ctx context.Context) (Result, time.Time)

// Keeper renews one lease until it is stopped or lost.
type Keeper struct {
	ttl        time.Duration
	opt        Options
	mu         sync.Mutex
	validUntil time.Time

	lost     chan struct{}
	reason   string // why lost closed: written before it closes, never after
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
}

// NewKeeper is a keeper of a lease of ttl valid until validUntil, not renewing yet
// (Run, or a Set's Run).
func NewKeeper(ttl time.Duration, validUntil time.Time) *Keeper {
	return &Keeper{ttl: ttl, validUntil: validUntil, lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
}

// Start starts renewing every ttl/3 with renew, the lease valid until validUntil.
func Start(ttl time.Duration, validUntil time.Time, renew Func) *Keeper {
	k := NewKeeper(ttl, validUntil)
	k.Run(renew)
	return k
}

// Options tune how a Keeper renews; the zero value renews every TTL/3, gives each
// attempt TTL/3, judges validity by time.Now and lets Stop wait for an attempt in
// flight (it may be applied anyway, and a release needs to know what it wrote).
type Options struct {
	// Now is the client's clock, by which the lease's validity is judged (default
	// time.Now).
	Now func() time.Time
	// Attempt bounds one renewal attempt (default the interval, TTL/3); UntilValid bounds
	// it by the lease's validity instead (an answer after it is worth nothing).
	Attempt    time.Duration
	UntilValid bool
	// CutOnStop cancels an attempt in flight when the Keeper stops, so that a release
	// or a close is not held up by a renewal stuck in a stalled link.
	CutOnStop bool
}

func (o Options) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

// Run starts renewing every TTL/3 with renew, as opt says. Call it once.
func (k *Keeper) Run(renew Func, opt ...Options) {
	if len(opt) > 0 {
		k.opt = opt[0]
	}
	go k.run(max(k.ttl/3, time.Millisecond), renew)
}

// Stopping reports whether Stop was called: an attempt that failed meanwhile failed
// because the lease is being ended, not because it is lost.
func (k *Keeper) Stopping() bool {
	select {
	case <-k.stop:
		return true
	default:
		return false
	}
}

// lostNow ends a keeper that never ran (a lease granted to a locker that was closed
// meanwhile): it is lost and stopped.
func (k *Keeper) lostNow() {
	k.reason = "granted to a lock client that was closed meanwhile"
	close(k.lost)
	close(k.done)
}

// Lease is what a lease a Keeper renews embeds: harness.Lease's Token, TTL and Lost and
// harness.Expiring's ValidUntil, all read from the grant and its Keeper.
type Lease struct {
	lease.Grant
	lease.Expiry
	Keeper *Keeper
}

// NewLease is the renewed lease of a grant of token for ttl, valid until validUntil;
// start its renewals with a Set's Run.
func NewLease(token int64, ttl time.Duration, validUntil time.Time) Lease {
	k := NewKeeper(ttl, validUntil)
	return Lease{Grant: lease.NewGrant(token, ttl, k.Lost()), Expiry: lease.NewExpiry(k.ValidUntil), Keeper: k}
}

func (k *Keeper) run(every time.Duration, renew Func) {
	defer close(k.done)
	defer close(k.lost)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-k.stop:
			k.reason = "renewals stopped (released or closed)"
			return
		case <-t.C:
		}
		res, until := k.attempt(every, renew)
		switch {
		case res == Renewed:
			k.mu.Lock()
			k.validUntil = until
			k.mu.Unlock()
		case res == Refused:
			k.reason = "a renewal was refused"
			return
		case !k.opt.now().Before(k.ValidUntil()):
			// No renewal confirmed for a TTL: the key has expired by now.
			k.reason = fmt.Sprintf("no renewal confirmed for a TTL (%v)", k.ttl)
			return
		}
	}
}

// attempt is one renewal, bounded as the options say.
func (k *Keeper) attempt(every time.Duration, renew Func) (Result, time.Time) {
	var ctx context.Context
	var cancel context.CancelFunc
	switch {
	case k.opt.UntilValid:
		ctx, cancel = context.WithDeadline(context.Background(), k.ValidUntil())
	case k.opt.Attempt > 0:
		ctx, cancel = context.WithTimeout(context.Background(), k.opt.Attempt)
	default:
		ctx, cancel = context.WithTimeout(context.Background(), every)
	}
	defer cancel()
	if k.opt.CutOnStop {
		go func() { // ends with the attempt: cancel closes ctx
			select {
			case <-k.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	return renew(ctx)
}

// Lost is closed when a renewal was refused, no renewal was confirmed before the
// lease's validity ended, or the Keeper was stopped.
func (k *Keeper) Lost() <-chan struct{} { return k.lost }

// LossReason is why Lost closed ("" while it is open): a renewal refused, none confirmed
// for a TTL, or the renewals stopped.
func (k *Keeper) LossReason() string {
	select {
	case <-k.lost:
		return k.reason
	default:
		return ""
	}
}

// LossReason implements harness.LossReasoner with the Keeper's reason.
func (l Lease) LossReason() string { return l.Keeper.LossReason() }

// ValidUntil is the lease's end by the client's clock, from the last confirmed grant or
// renewal.
func (k *Keeper) ValidUntil() time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.validUntil
}

// Stop ends the renewals (waiting for one in flight) and closes Lost. Safe to call
// twice and concurrently.
func (k *Keeper) Stop() {
	k.stopOnce.Do(func() { close(k.stop) })
	<-k.done
}

// Set is a locker's live leases, renewed with Options.
type Set struct {
	Options Options

	mu     sync.Mutex
	live   map[*Keeper]struct{}
	closed bool
}

// Start starts a Keeper in the set (Run), and returns it.
func (s *Set) Start(ttl time.Duration, validUntil time.Time, renew Func) *Keeper {
	k := NewKeeper(ttl, validUntil)
	s.Run(k, renew)
	return k
}

// Run starts k renewing with renew in the set, or, if the set is closed, ends it at
// once (lost and stopped: the lease was granted to a locker that was closed meanwhile).
func (s *Set) Run(k *Keeper, renew Func) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		k.lostNow()
		return
	}
	if s.live == nil {
		s.live = map[*Keeper]struct{}{}
	}
	k.Run(renew, s.Options)
	s.live[k] = struct{}{}
}

// Stop stops k and forgets it.
func (s *Set) Stop(k *Keeper) {
	k.Stop()
	s.mu.Lock()
	delete(s.live, k)
	s.mu.Unlock()
}

// Close stops every Keeper in the set; later Starts return stopped ones. It reports
// whether this call closed the set (false: it was already closed).
func (s *Set) Close() bool {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return false
	}
	s.closed = true
	live := s.live
	s.live = nil
	s.mu.Unlock()
	for k := range live {
		k.Stop()
	}
	return true
}
