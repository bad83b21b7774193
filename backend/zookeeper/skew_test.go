package zookeeper_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/backend/zookeeper"
	"github.com/fencecheck/fencecheck/harness/nemesis/proxy"
	"github.com/fencecheck/fencecheck/harness/proc/proctest"
	"github.com/fencecheck/fencecheck/harnesstest"
)

// fastClock starts a server whose JVM runs with libfaketime preloaded, its clock
// (wall and monotonic) running rate times fast.
func fastClock(t *testing.T, ttl time.Duration, rate float64) *zookeeper.Backend {
	t.Helper()
	proctest.Skip(t, zookeeper.ServerNeeds(zookeeper.Config{ClockRate: rate})...)
	return start(t, zookeeper.Config{TTL: ttl, ClockRate: rate})
}

// At 2x, a silent session expires after half its timeout in real time: the lock moves on
// while the holder, by its own clock, is well inside its TTL. Live sessions survive:
// the client pings every third of the timeout, two thirds by the server's clock.
func TestFastServerClockExpiresSilentSessionsEarly(t *testing.T) {
	ttl := 2 * time.Second
	b := fastClock(t, ttl, 2)
	link, err := proxy.New(b.Endpoints()[0])
	require.NoError(t, err)
	t.Cleanup(func() { _ = link.Close() })
	holder := harnesstest.Acquire(t, locker(t, b, []string{link.Addr()}))
	link.Stall()
	stalled := time.Now()
	next := harnesstest.Acquire(t, locker(t, b, nil))
	gap := time.Since(stalled)
	t.Logf("server clock 2x fast: a silent %v session lost the lock after %v", ttl, gap.Round(time.Millisecond))
	require.Less(t, gap, ttl*4/5, "the server expired the session by its own fast clock")
	require.Greater(t, next.Token(), holder.Token())
	link.Pass()
	require.NoError(t, next.Release(t.Context()))
}

// At 10x, the client's pings (every third of the timeout) arrive 3.3 timeouts apart by
// the server's clock: it expires every session, busy or not, and the lock service is
// unusable.
func TestVeryFastServerClockExpiresEverySession(t *testing.T) {
	ttl := 2 * time.Second
	b := fastClock(t, ttl, 10)
	l := locker(t, b, nil)
	le, err := l.Acquire(t.Context())
	if err == nil {
		start := time.Now()
		select {
		case <-le.Lost():
			t.Logf("server clock 10x fast: a live %v session was expired %v after its grant", ttl, time.Since(start).Round(time.Millisecond))
		case <-time.After(10 * ttl):
			t.Fatal("a live session survived a 10x fast server clock")
		}
		return
	}
	require.ErrorContains(t, err, "the server expired the session")
	t.Logf("server clock 10x fast: the session expired before the lock was granted: %v", err)
}
