// Package renewal keeps a TTL lease alive for the lock clients that renew their own key
// (redis, redlock, nats): a renewal every TTL/3, the lease's validity by the client's
// own clock, and Lost closed when a renewal is refused or no renewal was confirmed for
// a TTL. A Set tracks a locker's live leases so that closing the locker stops them all.
package renewal

import (
	"context"
	"sync"
	"time"
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
	mu         sync.Mutex
	validUntil time.Time

	lost     chan struct{}
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
}

// Start starts renewing every ttl/3 with renew, the lease valid until validUntil.
func Start(ttl time.Duration, validUntil time.Time, renew Func) *Keeper {
	k := &Keeper{validUntil: validUntil, lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	go k.run(max(ttl/3, time.Millisecond), renew)
	return k
}

// Stopped returns a Keeper that is already lost and stopped (a lease granted to a
// locker that was closed meanwhile).
func Stopped(validUntil time.Time) *Keeper {
	k := &Keeper{validUntil: validUntil, lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	close(k.lost)
	close(k.done)
	return k
}

func (k *Keeper) run(every time.Duration, renew Func) {
	defer close(k.done)
	defer close(k.lost)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-k.stop:
			return
		case <-t.C:
		}
		// Not cut short by Stop: a renewal in flight may be applied anyway, and the
		// lease's release needs to know what it wrote.
		ctx, cancel := context.WithTimeout(context.Background(), every)
		res, until := renew(ctx)
		cancel()
		switch {
		case res == Renewed:
			k.mu.Lock()
			k.validUntil = until
			k.mu.Unlock()
		case res == Refused:
			return
		case !time.Now().Before(k.ValidUntil()):
			return // no renewal confirmed for a TTL: the key has expired by now
		}
	}
}

// Lost is closed when a renewal was refused, no renewal was confirmed before the
// lease's validity ended, or the Keeper was stopped.
func (k *Keeper) Lost() <-chan struct{} { return k.lost }

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

// Set is a locker's live leases.
type Set struct {
	mu     sync.Mutex
	live   map[*Keeper]struct{}
	closed bool
}

// Start starts a Keeper in the set, or returns a Stopped one if the set is closed.
func (s *Set) Start(ttl time.Duration, validUntil time.Time, renew Func) *Keeper {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Stopped(validUntil)
	}
	if s.live == nil {
		s.live = map[*Keeper]struct{}{}
	}
	k := Start(ttl, validUntil, renew)
	s.live[k] = struct{}{}
	return k
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
