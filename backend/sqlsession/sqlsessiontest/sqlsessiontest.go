// Package sqlsessiontest has the tests shared by the database lock backends
// (postgres-advisory, mariadb-lock), run against their real servers through real
// fault-proxy links (the TestMain leak check is proctest.VerifyNoLeaks).
package sqlsessiontest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/nemesis/proxy"
)

// Start starts a backend with start (given a generous ceiling), logs how long it took
// and closes it when t ends.
func Start[B interface {
	harness.Backend
	Token() T
}, T any](t *testing.T, start func(context.Context) (B, error)) B {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	t0 := time.Now()
	b, err := start(ctx)
	require.NoError(t, err)
	t.Logf("%s (token %v) ready in %v at %v", b.Name(), b.Token(), time.Since(t0), b.Endpoints())
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// Link returns a fault-proxy link to the backend's only endpoint, closed when t ends.
func Link(t *testing.T, b harness.Backend) *proxy.Link {
	t.Helper()
	eps := b.Endpoints()
	require.Len(t, eps, 1)
	l, err := proxy.New(eps[0])
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// Locker returns a locker for client id through its own link, closed when t ends.
func Locker(t *testing.T, b harness.Backend, id int) (harness.Locker, *proxy.Link) {
	t.Helper()
	l := Link(t, b)
	lk, err := b.NewLocker(context.Background(), id, []string{l.Addr()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = lk.Close() })
	return lk, l
}

// MutualExclusion: two lockers take the lock in turn, never both at once, and (when
// monotonic) every grant's token is greater than the previous one's.
func MutualExclusion(t *testing.T, b harness.Backend, grants int, monotonic bool) {
	t.Helper()
	var (
		mu      sync.Mutex
		holders int
		tokens  []int64
		wg      sync.WaitGroup
	)
	for id := range 2 {
		lk, _ := Locker(t, b, id)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range grants / 2 {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				le, err := lk.Acquire(ctx)
				cancel()
				if !assertNoError(t, err) {
					return
				}
				mu.Lock()
				holders++
				if holders != 1 {
					t.Errorf("%d holders at once", holders)
				}
				tokens = append(tokens, le.Token())
				mu.Unlock()
				time.Sleep(2 * time.Millisecond) // pacing: a moment inside, where a second holder would be counted
				mu.Lock()
				holders--
				mu.Unlock()
				ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
				err = le.Release(ctx)
				cancel()
				assertNoError(t, err)
			}
		}()
	}
	wg.Wait()
	require.Len(t, tokens, grants/2*2)
	if monotonic {
		for i := 1; i < len(tokens); i++ {
			require.Greater(t, tokens[i], tokens[i-1], "tokens in grant order: %v", tokens)
		}
	}
}

func assertNoError(t *testing.T, err error) bool {
	if err != nil {
		t.Errorf("unexpected error: %v", err)
		return false
	}
	return true
}

// LostOnStall: the holder's link stalls (a paused client); the server ends its idle
// session after the TTL, another client gets the lock, and the holder's Lost closes.
// Its release afterwards is refused as no effect.
func LostOnStall(t *testing.T, b harness.Backend) {
	t.Helper()
	a, link := Locker(t, b, 0)
	other, _ := Locker(t, b, 1)
	le := acquire(t, a)
	link.Stall()
	start := time.Now()
	le2 := acquire(t, other) // granted only once the server has ended le's session
	t.Logf("second grant %v after the stall (TTL %v)", time.Since(start), le.TTL())
	require.GreaterOrEqual(t, time.Since(start), le.TTL()*9/10, "granted before the TTL had passed")
	select {
	case <-le.Lost():
	case <-time.After(30 * time.Second):
		t.Fatal("Lost did not close")
	}
	link.Pass()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.ErrorIs(t, le.Release(ctx), harness.ErrNoEffect)
	require.NoError(t, le2.Release(ctx))
	require.ErrorIs(t, le2.Release(ctx), harness.ErrNoEffect, "a second release")
}

// CloseTwice: a locker's Close ends its leases' sessions (Lost closes, the lock is
// free for another client), and a second Close is fine.
func CloseTwice(t *testing.T, b harness.Backend) {
	t.Helper()
	a, _ := Locker(t, b, 0)
	other, _ := Locker(t, b, 1)
	le := acquire(t, a)
	require.NoError(t, a.Close())
	require.NoError(t, a.Close())
	select {
	case <-le.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("Lost did not close after the locker closed")
	}
	le2 := acquire(t, other)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, le2.Release(ctx))
}

// Grant takes one lock through a fresh locker and releases it, returning its token.
func Grant(t *testing.T, b harness.Backend) int64 {
	t.Helper()
	lk, _ := Locker(t, b, 9)
	le := acquire(t, lk)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, le.Release(ctx))
	require.NoError(t, lk.Close())
	return le.Token()
}

// LostOnNodeFault: the holder's Lost closes when the server stops (SIGSTOP) and when it
// crashes (SIGKILL); after a restart the lock can be taken again.
func LostOnNodeFault(t *testing.T, b interface {
	harness.Backend
	harness.ProcessNodes
	harness.Crasher
}) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a, _ := Locker(t, b, 0)
	le := acquire(t, a)
	require.NotZero(t, b.NodePID(0))
	require.NoError(t, b.PauseNode(ctx, 0))
	select {
	case <-le.Lost():
	case <-time.After(30 * time.Second):
		t.Fatal("Lost did not close while the server was stopped")
	}
	require.NoError(t, b.ResumeNode(ctx, 0))
	le = acquire(t, a)
	pid := b.NodePID(0)
	require.NoError(t, b.Crash(ctx, 0))
	select {
	case <-le.Lost():
	case <-time.After(30 * time.Second):
		t.Fatal("Lost did not close after the server was killed")
	}
	require.NoError(t, b.Restart(ctx, 0, true))
	require.NotEqual(t, pid, b.NodePID(0))
	le = acquire(t, a)
	require.NoError(t, le.Release(ctx))
}

// acquire takes the lock within a minute, trying again after an attempt that had no
// effect (a session a loaded machine lost while it waited). The contract suite's
// helpers are not used here: they sit above the backends, beside the Go front.
func acquire(t *testing.T, l harness.Locker) harness.Lease {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		le, err := l.Acquire(ctx)
		switch {
		case err == nil:
			return le
		case !errors.Is(err, harness.ErrNoEffect) || ctx.Err() != nil:
			t.Fatalf("Acquire: %v", err)
		}
	}
}
