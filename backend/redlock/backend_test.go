package redlock_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/backend/redis"
	"github.com/fencecheck/fencecheck/harness/proc/proctest"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/backend/redlock"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/nemesis/proxy"
	"github.com/fencecheck/fencecheck/harness/proc"
	"github.com/fencecheck/fencecheck/harnesstest"
)

// ttl is long enough that a loaded machine does not miss an Extend on five servers.
const ttl = time.Second

func start(t *testing.T, cfg redlock.Config) *redlock.Backend {
	t.Helper()
	if cfg.TTL == 0 {
		cfg.TTL = ttl
	}
	if cfg.Dir == "" && len(cfg.Addrs) == 0 {
		cfg.Dir = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b, err := redlock.Start(ctx, cfg)
	if errors.Is(err, proc.ErrNotFound) {
		t.Skip(err.Error())
	}
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	return b
}

func locker(t *testing.T, b harness.Backend, addrs []string) harness.Locker {
	t.Helper()
	return harnesstest.NewLocker(t, b, 0, addrs...)
}

func TestMutualExclusion(t *testing.T) {
	for _, n := range []int{3, 5} {
		t.Run(map[int]string{3: "3", 5: "5"}[n], func(t *testing.T) {
			t.Parallel()
			b := start(t, redlock.Config{Servers: n})
			require.Len(t, b.Endpoints(), n)
			require.Contains(t, b.NoFencingToken(), "cannot be made safe by fencing")
			a, c := locker(t, b, b.Endpoints()), locker(t, b, b.Endpoints())
			for i := range 2 {
				l, other := a, c
				if i%2 == 1 {
					l, other = c, a
				}
				le := harnesstest.Acquire(t, l)
				// Past the TTL: the holder's Extends keep the lock.
				harnesstest.HeldAgainst(t, le, other, ttl+ttl/5)
				harnesstest.ReleaseOnce(t, le)
			}
		})
	}
}

// A client whose links all stall cannot extend: Lost closes once its validity passed,
// and another client takes the lock.
func TestLostWhenLinksStall(t *testing.T) {
	b := start(t, redlock.Config{})
	var links []*proxy.Link
	var addrs []string
	for _, ep := range b.Endpoints() {
		l, err := proxy.New(ep)
		require.NoError(t, err)
		t.Cleanup(func() { _ = l.Close() })
		links, addrs = append(links, l), append(addrs, l.Addr())
	}
	a, c := locker(t, b, addrs), locker(t, b, b.Endpoints())
	le := harnesstest.Acquire(t, a)
	for _, l := range links {
		l.Stall()
	}
	harnesstest.WaitClosed(t, le.Lost(), "Lost after the links stalled")
	le2 := harnesstest.Acquire(t, c)
	for _, l := range links {
		l.Pass()
	}
	require.ErrorIs(t, le.Release(context.Background()), harness.ErrNoEffect)
	require.NoError(t, le2.Release(context.Background()))
}

// Redlock's documented failure: a majority restarts without persistence while the lock
// is held, forgets it, and a second client is granted the lock the first still holds.
func TestCrashWithoutPersistenceGrantsTwice(t *testing.T) {
	for _, tc := range []struct {
		name    string
		persist bool
	}{{"volatile", false}, {"aof", true}} {
		t.Run(tc.name, func(t *testing.T) {
			// With the AOF the lock must outlive two restarts, even on a loaded machine.
			cfg := redlock.Config{Persist: tc.persist}
			if tc.persist {
				cfg.TTL = 10 * time.Second
			}
			b := start(t, cfg)
			a, c := locker(t, b, b.Endpoints()), locker(t, b, b.Endpoints())
			le := harnesstest.Acquire(t, a)
			ctx := context.Background()
			for i := range 2 {
				pid := b.NodePID(i)
				require.NoError(t, b.Crash(ctx, i))
				require.NoError(t, b.Restart(ctx, i, true))
				require.NotEqual(t, pid, b.NodePID(i))
			}
			actx, cancel := context.WithTimeout(ctx, ttl/2)
			le2, err := c.Acquire(actx)
			cancel()
			if tc.persist {
				require.ErrorIs(t, err, harness.ErrNoEffect, "the AOF kept the lock on the restarted majority")
			} else {
				require.NoError(t, err, "the restarted majority forgot the lock")
				select {
				case <-le.Lost():
					t.Fatal("the first holder noticed nothing yet: its renewals find its value gone only at the next Extend")
				default:
				}
				require.NoError(t, le2.Release(ctx))
			}
			_ = le.Release(ctx)
		})
	}
}

func TestNodePause(t *testing.T) {
	b := start(t, redlock.Config{})
	le := harnesstest.Acquire(t, locker(t, b, b.Endpoints()))
	ctx := context.Background()
	for i := range 2 {
		require.NoError(t, b.PauseNode(ctx, i))
	}
	harnesstest.WaitClosed(t, le.Lost(), "Lost while a majority is stopped")
	for i := range 2 {
		require.NoError(t, b.ResumeNode(ctx, i))
	}
	require.Error(t, le.Release(ctx))
}

func TestBadStarts(t *testing.T) {
	proctest.Skip(t, redis.ServerNeed)
	freeAddr := proctest.DeadAddr(t)
	real := start(t, redlock.Config{})
	eps := real.Endpoints()
	for _, tc := range []struct {
		name string
		cfg  redlock.Config
		want string
	}{
		{"wrong address", redlock.Config{Addrs: []string{eps[0], eps[1], freeAddr}}, "no server answers PING at " + freeAddr},
		{"two addresses", redlock.Config{Addrs: eps[:2]}, "at least 3 independent servers"},
		{"four servers", redlock.Config{Servers: 4}, "servers must be 3 or 5"},
		{"missing binary", redlock.Config{Binary: "/nonexistent/redis-server"}, "apt-get install redis-server"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.TTL = ttl
			if len(tc.cfg.Addrs) == 0 {
				tc.cfg.Dir = t.TempDir()
			}
			before := len(proc.Descendants(os.Getpid()))
			_, err := redlock.Start(context.Background(), tc.cfg)
			require.ErrorContains(t, err, tc.want)
			require.Len(t, proc.Descendants(os.Getpid()), before, "a failed start left a process behind")
		})
	}
	t.Run("external servers", func(t *testing.T) {
		b := start(t, redlock.Config{Addrs: eps})
		require.Zero(t, b.Nodes())
		require.Error(t, b.PauseNode(context.Background(), 0))
		le := harnesstest.Acquire(t, locker(t, b, b.Endpoints()))
		require.NoError(t, le.Release(context.Background()))
	})
}

func TestCloseTwice(t *testing.T) {
	b := start(t, redlock.Config{})
	l := locker(t, b, b.Endpoints())
	le := harnesstest.Acquire(t, l)
	require.NoError(t, l.Close())
	require.NoError(t, l.Close())
	harnesstest.WaitClosed(t, le.Lost(), "Lost after the locker closed")
	require.NoError(t, b.Close())
	require.NoError(t, b.Close())
}

// A majority that forgets the key refuses the next Extend: Lost closes well before the
// lease's validity would have run out.
func TestLostWhenMajorityForgets(t *testing.T) {
	b := start(t, redlock.Config{TTL: 3 * time.Second})
	le := harnesstest.Acquire(t, locker(t, b, b.Endpoints()))
	ctx := context.Background()
	for i := range 2 {
		require.NoError(t, b.Crash(ctx, i))
		require.NoError(t, b.Restart(ctx, i, true)) // no persistence: empty anyway
	}
	harnesstest.WaitClosed(t, le.Lost(), "Lost after a majority forgot the key")
	require.Equal(t, "a renewal was refused", le.(harness.LossReasoner).LossReason(), "Lost by the refusal, not by the clock")
}
