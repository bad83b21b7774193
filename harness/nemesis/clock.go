package nemesis

import (
	"fmt"
	"sync"
	"time"
)

// Clock is one node's or client's clock: real time with an offset, a rate and jumps.
// It drives only what reads time through it: a lock server's expiry and tokens when the
// server is the harness's own, each client's belief about its lease, a lock FSM's
// leader-stamped time; a service that calls time.Now directly does not see it.
//
// Like a real machine it has two readings. Monotonic() follows the oscillator: it runs at
// rate × real speed and never jumps (what Go's monotonic clock gives timeouts and lease
// expiry). Now() is the wall clock: Monotonic() plus the steps it was given, or a reading
// frozen in place (what wall-clock tokens and timestamps read). Neither carries a Go
// monotonic reading, so Sub and Before between values use the skewed time.
type Clock struct {
	mu     sync.Mutex
	origin time.Time // real time (with monotonic reading) at creation
	base   time.Time // wall time the clock showed at creation
	offset time.Duration
	rate   float64
	// since is real elapsed time at the last rate change; at is the skewed reading then.
	since time.Duration
	at    time.Duration
	// frozen holds the wall reading still (a stopped wall clock) until Reset.
	frozen   bool
	frozenAt time.Time
}

// NewClock returns a clock that reads like time.Now until skewed.
func NewClock() *Clock {
	now := time.Now()
	return &Clock{origin: now, base: now.Round(0), rate: 1}
}

// Now returns the clock's current time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nowLocked()
}

func (c *Clock) nowLocked() time.Time {
	if c.frozen {
		return c.frozenAt
	}
	return c.monoLocked().Add(c.offset)
}

func (c *Clock) monoLocked() time.Time {
	real := time.Since(c.origin)
	return c.base.Add(c.at + time.Duration(float64(real-c.since)*c.rate))
}

// Monotonic returns the clock's monotonic reading: affected by its rate, never by jumps.
func (c *Clock) Monotonic() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.monoLocked()
}

// Freeze stops the wall clock at t: Now returns t until Reset. The monotonic reading
// goes on, so timeouts and expiry still advance.
func (c *Clock) Freeze(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.frozen, c.frozenAt = true, t
}

// Jump steps the clock by d (negative: back), like Jepsen's bump.
func (c *Clock) Jump(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}

// SetRate makes the clock run at rate × real speed from now on (2 = twice as fast).
func (c *Clock) SetRate(rate float64) error {
	if rate <= 0 || rate > 100 {
		return fmt.Errorf("clock rate must be in (0, 100], got %v", rate)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	real := time.Since(c.origin)
	c.at += time.Duration(float64(real-c.since) * c.rate)
	c.since = real
	c.rate = rate
	return nil
}

// Reset removes every skew: offset 0, rate 1, from now on. Time already run fast or slow
// stays in the reading, as it would on a machine whose NTP daemon slews the clock back;
// pass resync=true to step straight back to real time.
func (c *Clock) Reset(resync bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	real := time.Since(c.origin)
	c.at += time.Duration(float64(real-c.since) * c.rate)
	c.since = real
	c.rate = 1
	c.frozen = false
	if resync {
		c.at, c.offset = real, 0
	}
}

// Skew returns the clock's current difference from real time.
func (c *Clock) Skew() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nowLocked().Sub(c.base.Add(time.Since(c.origin)))
}
