package naive

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/nemesis/proxy"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// patience is the ceiling of every wait for an event in these tests: generous, because
// a loaded 2-core machine can be many times slower than an idle one, and never spent on
// the passing path, which ends at the event.
const patience = 30 * time.Second

// fakeClock is a hand-driven server clock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func TestServerLeases(t *testing.T) {
	clk := &fakeClock{now: time.Unix(1000, 0)}
	s, err := StartServer(ServerConfig{Now: clk.Now, Mono: clk.Now})
	require.NoError(t, err)
	defer s.Close()

	g, err := s.Acquire(AcquireRequest{Owner: "a", TTLms: 100})
	require.NoError(t, err)
	require.True(t, g.Granted)
	busy, err := s.Acquire(AcquireRequest{Owner: "b", TTLms: 100})
	require.NoError(t, err)
	require.False(t, busy.Granted)
	require.Equal(t, "a", busy.Holder)

	clk.Add(60 * time.Millisecond)
	require.True(t, s.Renew(LeaseRequest{Owner: "a", Token: g.Token}, 100*time.Millisecond).OK)
	clk.Add(60 * time.Millisecond)
	busy, _ = s.Acquire(AcquireRequest{Owner: "b", TTLms: 100})
	require.False(t, busy.Granted, "renewed lease still valid")

	clk.Add(100 * time.Millisecond) // expired on the server's clock
	require.False(t, s.Renew(LeaseRequest{Owner: "a", Token: g.Token}, 100*time.Millisecond).OK)
	g2, err := s.Acquire(AcquireRequest{Owner: "b", TTLms: 100})
	require.NoError(t, err)
	require.True(t, g2.Granted)
	require.Greater(t, g2.Token, g.Token)
	require.False(t, s.Release(LeaseRequest{Owner: "a", Token: g.Token}).OK, "the old holder cannot release the new lease")
	require.True(t, s.Release(LeaseRequest{Owner: "b", Token: g2.Token}).OK)

	_, err = s.Acquire(AcquireRequest{Owner: "", TTLms: 100})
	require.Error(t, err)
}

func TestLockerOverHTTP(t *testing.T) {
	// Renewals (every TTL/3) must keep up on a loaded machine, so not much shorter.
	b, err := New(Config{TTL: 600 * time.Millisecond})
	require.NoError(t, err)
	defer b.Close()
	ctx := context.Background()
	la, err := b.NewLocker(ctx, 0, b.Endpoints())
	require.NoError(t, err)
	defer la.Close()
	lb, err := b.NewLocker(ctx, 1, b.Endpoints())
	require.NoError(t, err)
	defer lb.Close()

	var last int64
	for range 3 {
		for _, l := range []harness.Locker{la, lb} {
			le, err := l.Acquire(ctx)
			require.NoError(t, err)
			require.Greater(t, le.Token(), last)
			last = le.Token()
			require.NoError(t, le.Release(ctx))
		}
	}
	// A held lock makes Acquire wait until ctx ends, with a definite failure.
	le, err := la.Acquire(ctx)
	require.NoError(t, err)
	short, cancel := context.WithTimeout(ctx, 900*time.Millisecond) // > TTL: renewals keep it held
	_, err = lb.Acquire(short)
	cancel()
	require.ErrorIs(t, err, harness.ErrNoEffect)
	require.NoError(t, le.Release(ctx))
}

// A holder whose link stalls stops renewing: the server expires it, another client gets
// a newer token, and the old holder notices the loss once its link resumes.
func TestLeaseLostThroughStalledLink(t *testing.T) {
	b, err := New(Config{TTL: 150 * time.Millisecond})
	require.NoError(t, err)
	defer b.Close()
	link, err := proxy.New(b.Endpoints()[0])
	require.NoError(t, err)
	defer link.Close()
	ctx := context.Background()
	la, err := b.NewLocker(ctx, 0, []string{link.Addr()})
	require.NoError(t, err)
	defer la.Close()
	lb, err := b.NewLocker(ctx, 1, b.Endpoints())
	require.NoError(t, err)
	defer lb.Close()

	old, err := la.Acquire(ctx)
	require.NoError(t, err)
	link.Stall()
	newer, err := lb.Acquire(ctx) // waits out the TTL
	require.NoError(t, err)
	require.Greater(t, newer.Token(), old.Token())
	link.Pass()
	select {
	case <-old.Lost():
	case <-time.After(patience):
		t.Fatal("the old holder never noticed its lease was lost")
	}
	require.ErrorIs(t, old.Release(ctx), harness.ErrNoEffect)
	require.NoError(t, newer.Release(ctx))
}

func TestConfigAndClose(t *testing.T) {
	_, err := New(Config{TTL: -time.Second})
	require.ErrorContains(t, err, "TTL must be positive")
	b, err := New(Config{TTL: time.Second})
	require.NoError(t, err)
	require.NoError(t, b.Close())
	require.NoError(t, b.Close())
	// A closed server refuses: a definite failure, not an unknown.
	l := NewLocker(b.Endpoints()[0], "x", time.Second)
	defer l.Close()
	_, err = l.Acquire(context.Background())
	require.ErrorIs(t, err, harness.ErrNoEffect)
}

func TestTokenVariants(t *testing.T) {
	dir := t.TempDir()
	p, err := NewTokens(Persisted, dir, time.Now)
	require.NoError(t, err)
	a, _ := p.Next(time.Now())
	b, _ := p.Next(time.Now())
	require.Equal(t, a+1, b)
	// A restarted server continues the persisted counter.
	p2, err := NewTokens(Persisted, dir, time.Now)
	require.NoError(t, err)
	c, _ := p2.Next(time.Now())
	require.Equal(t, b+1, c)

	n, err := NewTokens(Narrow, "", time.Now)
	require.NoError(t, err)
	var last int64
	wrapped := false
	for range 20 {
		tok, _ := n.Next(time.Now())
		require.NotZero(t, tok)
		if tok < last {
			wrapped = true
		}
		last = tok
	}
	require.True(t, wrapped, "the 32-bit counter wraps within 20 grants")

	wall := time.Unix(100, 0)
	w, err := NewTokens(WallClock, "", func() time.Time { return wall })
	require.NoError(t, err)
	tok, _ := w.Next(time.Now())
	require.Equal(t, wall.UnixNano(), tok)

	_, err = NewTokens("sundial", "", time.Now)
	require.Error(t, err)
}

// Crash loses the in-memory counter and lease; Restart comes back on the same address.
func TestCrashRestart(t *testing.T) {
	b, err := New(Config{TTL: time.Second})
	require.NoError(t, err)
	defer b.Close()
	ctx := context.Background()
	l, err := b.NewLocker(ctx, 0, b.Endpoints())
	require.NoError(t, err)
	defer l.Close()
	first, err := l.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, b.Crash(ctx, 0))
	require.NoError(t, b.Restart(ctx, 0, true))
	// The restarted server forgot the lease and the counter: the same token again.
	l2, err := b.NewLocker(ctx, 1, b.Endpoints())
	require.NoError(t, err)
	defer l2.Close()
	second, err := l2.Acquire(ctx)
	require.NoError(t, err)
	require.Equal(t, first.Token(), second.Token(), "token reuse after losing the counter")
	require.NoError(t, second.Release(ctx))
	require.Error(t, b.Restart(ctx, 0, true), "already running")
}
