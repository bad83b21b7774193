// Package lease holds what the backends' lease types share, embedded so that each says
// only what is its own: Grant (harness.Lease's Token, TTL and Lost), Expiry (the
// ValidUntil of a lease that knows its end by the client's clock: harness.Expiring),
// Loss (a Lost channel closed once, by whichever part notices first) and Released (a
// Release that has its effect once; a second one wraps harness.ErrNoEffect).
package lease

import (
	"fmt"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/harness"
)

// Grant is what every lease knows of its grant.
type Grant struct {
	token int64
	ttl   time.Duration
	lost  <-chan struct{}
}

// NewGrant is a grant of token for ttl, lost when lost closes.
func NewGrant(token int64, ttl time.Duration, lost <-chan struct{}) Grant {
	return Grant{token: token, ttl: ttl, lost: lost}
}

// Token implements harness.Lease: the grant's fencing token.
func (g Grant) Token() int64 { return g.token }

// TTL implements harness.Lease: the lease's time to live as granted.
func (g Grant) TTL() time.Duration { return g.ttl }

// Lost implements harness.Lease: closed when the client notices the lease is gone.
func (g Grant) Lost() <-chan struct{} { return g.lost }

// Expiry is embedded by a lease that knows its end by the client's clock: until says it
// (the last confirmed grant or renewal plus the TTL).
type Expiry struct{ until func() time.Time }

// NewExpiry is an expiry read from until.
func NewExpiry(until func() time.Time) Expiry { return Expiry{until: until} }

// ValidUntil implements harness.Expiring.
func (e Expiry) ValidUntil() time.Time { return e.until() }

// Loss is a lease's Lost channel, closed once, by whichever part notices first, with
// the reason that part gave.
type Loss struct {
	once   sync.Once
	ch     chan struct{}
	reason string // set before ch closes, never after
}

// NewLoss returns an open Loss.
func NewLoss() *Loss { return &Loss{ch: make(chan struct{})} }

// Done is closed once the lease is lost.
func (l *Loss) Done() <-chan struct{} { return l.ch }

// Mark closes Done without a reason; safe to call again and concurrently.
func (l *Loss) Mark() { l.MarkWhy("") }

// MarkWhy closes Done, the lease lost for reason (the first call's reason is kept);
// safe to call again and concurrently.
func (l *Loss) MarkWhy(reason string) {
	l.once.Do(func() {
		l.reason = reason
		close(l.ch)
	})
}

// LossReason implements harness.LossReasoner: the reason the lease was lost, "" while it
// is not (or when the part that noticed gave none).
func (l *Loss) LossReason() string {
	select {
	case <-l.ch:
		return l.reason // written before the close, so the read is ordered after it
	default:
		return ""
	}
}

// Released makes a lease's Release take effect once (its zero value is ready).
type Released struct {
	mu   sync.Mutex
	done bool
}

// First is nil on the first call; every later one returns an error wrapping
// harness.ErrNoEffect, which who prefixes ("redis").
func (r *Released) First(who string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return fmt.Errorf("%w: %s: lease already released", harness.ErrNoEffect, who)
	}
	r.done = true
	return nil
}
