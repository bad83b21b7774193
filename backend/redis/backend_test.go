package redis_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/backend/redis"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/nemesis/proxy"
	"github.com/fencecheck/fencecheck/harness/proc"
	"github.com/fencecheck/fencecheck/harness/proc/proctest"
	"github.com/fencecheck/fencecheck/harnesstest"
)

const ttl = 300 * time.Millisecond

// start starts a backend for t, skipping when redis-server is not installed.
func start(t *testing.T, cfg redis.Config) *redis.Backend {
	t.Helper()
	if cfg.TTL == 0 {
		cfg.TTL = ttl
	}
	if cfg.Dir == "" && len(cfg.Addrs) == 0 {
		cfg.Dir = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b, err := redis.Start(ctx, cfg)
	if errors.Is(err, proc.ErrNotFound) {
		t.Skip(err.Error())
	}
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	return b
}

func locker(t *testing.T, b harness.Backend, addr string) harness.Locker {
	t.Helper()
	return harnesstest.NewLocker(t, b, 0, addr)
}

// exclusionTTL is long enough that a loaded machine (with -race) does not miss three
// renewals in a row, which would hand the lock over for real.
const exclusionTTL = time.Second

func TestTokensAndMutualExclusion(t *testing.T) {
	for _, tc := range []struct {
		token     redis.TokenKind
		tokenless bool
	}{{redis.TokenIncr, false}, {redis.TokenNone, true}} {
		t.Run(string(tc.token), func(t *testing.T) {
			t.Parallel()
			b := start(t, redis.Config{Token: tc.token, TTL: exclusionTTL})
			require.Equal(t, tc.tokenless, b.TokenlessReason() != "")
			a, c := locker(t, b, b.Endpoints()[0]), locker(t, b, b.Endpoints()[0])
			var last int64
			for i := range 3 {
				l := a
				if i%2 == 1 {
					l = c
				}
				le := harnesstest.Acquire(t, l)
				// Both kinds increase here (TokenNone: the order the backend saw).
				require.Greater(t, le.Token(), last, "grant %d", i)
				last = le.Token()
				// The other client cannot take the lock while it is held (and renewed
				// past its TTL).
				other := c
				if l == c {
					other = a
				}
				harnesstest.HeldAgainst(t, le, other, exclusionTTL+exclusionTTL/5)
				harnesstest.ReleaseOnce(t, le)
			}
		})
	}
}

// A client whose link to the server stalls cannot renew: the server forgets the key
// after the TTL, another client takes the lock, and Lost closes.
func TestLostWhenLinkStalls(t *testing.T) {
	b := start(t, redis.Config{})
	link, err := proxy.New(b.Endpoints()[0])
	require.NoError(t, err)
	t.Cleanup(func() { _ = link.Close() })
	a, c := locker(t, b, link.Addr()), locker(t, b, b.Endpoints()[0])
	le := harnesstest.Acquire(t, a)
	link.Stall()
	harnesstest.WaitClosed(t, le.Lost(), "Lost after the link stalled")
	le2 := harnesstest.Acquire(t, c)
	require.Greater(t, le2.Token(), le.Token())
	link.Pass()
	// The old holder's release must not delete the new holder's key.
	require.ErrorIs(t, le.Release(context.Background()), harness.ErrNoEffect)
	require.NoError(t, le2.Release(context.Background()))
}

// A SIGSTOPped server answers nothing: the holder's renewals time out and Lost closes
// once a TTL has passed without one.
func TestLostWhenServerPaused(t *testing.T) {
	b := start(t, redis.Config{})
	require.Positive(t, b.NodePID(0))
	le := harnesstest.Acquire(t, locker(t, b, b.Endpoints()[0]))
	ctx := context.Background()
	require.NoError(t, b.PauseNode(ctx, 0))
	harnesstest.WaitClosed(t, le.Lost(), "Lost while the server is stopped")
	require.NoError(t, b.ResumeNode(ctx, 0))
	require.Error(t, le.Release(ctx))
}

// A crash (SIGKILL) and restart keeps the counter with the AOF; without persistence it
// starts again at 1, so a later grant's token is not above an earlier one.
func TestCrashRestart(t *testing.T) {
	for _, tc := range []struct {
		name      string
		persist   bool
		keepData  bool
		monotonic bool
	}{
		{"aof", true, true, true},
		{"aof-new-disk", true, false, false},
		{"no-persistence", false, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := start(t, redis.Config{Persist: tc.persist})
			l := locker(t, b, b.Endpoints()[0])
			var last int64
			for range 3 {
				le := harnesstest.Acquire(t, l)
				last = le.Token()
				require.NoError(t, le.Release(context.Background()))
			}
			ctx := context.Background()
			pid := b.NodePID(0)
			require.NoError(t, b.Crash(ctx, 0))
			require.Zero(t, b.NodePID(0))
			require.NoError(t, b.Restart(ctx, 0, tc.keepData))
			require.NotEqual(t, pid, b.NodePID(0))
			le := harnesstest.Acquire(t, l)
			require.Equal(t, tc.monotonic, le.Token() > last, "token %d after %d", le.Token(), last)
			require.NoError(t, le.Release(ctx))
		})
	}
}

func TestBadStarts(t *testing.T) {
	proctest.Skip(t, redis.ServerNeed)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	port := busy.Addr().(*net.TCPAddr).Port
	freeAddr := proctest.DeadAddr(t)
	hang := filepath.Join(t.TempDir(), "hang.sh")
	require.NoError(t, os.WriteFile(hang, []byte("#!/bin/sh\nexec sleep 60\n"), 0o755))

	for _, tc := range []struct {
		name string
		cfg  redis.Config
		want string
	}{
		{"port in use", redis.Config{Port: port}, "Address already in use"},
		{"wrong address", redis.Config{Addrs: []string{freeAddr}}, "no server answers PING at " + freeAddr},
		{"not host:port", redis.Config{Addrs: []string{"nowhere"}}, `address "nowhere" is not host:port`},
		{"missing binary", redis.Config{Binary: "/nonexistent/redis-server"}, "apt-get install redis-server"},
		{"bad ttl", redis.Config{TTL: 1500 * time.Microsecond}, "whole milliseconds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.cfg.TTL == 0 {
				tc.cfg.TTL = ttl
			}
			if len(tc.cfg.Addrs) == 0 {
				tc.cfg.Dir = t.TempDir()
			}
			_, err := redis.Start(context.Background(), tc.cfg)
			require.ErrorContains(t, err, tc.want)
			require.Empty(t, proc.Descendants(os.Getpid()))
		})
	}
	t.Run("never ready", func(t *testing.T) {
		_, err := redis.StartServer(context.Background(), redis.ServerConfig{
			Dir: t.TempDir(), Binary: hang, ReadyTimeout: 300 * time.Millisecond,
		})
		require.ErrorContains(t, err, "was not ready within 300ms")
		require.Empty(t, proc.Descendants(os.Getpid()))
	})
}

func TestCloseTwice(t *testing.T) {
	b := start(t, redis.Config{})
	l := locker(t, b, b.Endpoints()[0])
	le := harnesstest.Acquire(t, l)
	require.NoError(t, l.Close())
	require.NoError(t, l.Close())
	harnesstest.WaitClosed(t, le.Lost(), "Lost after the locker closed")
	require.Error(t, le.Release(context.Background()))
	require.NoError(t, b.Close())
	require.NoError(t, b.Close())
	_, err := net.Dial("tcp", b.Endpoints()[0])
	require.Error(t, err, "server still listening on "+b.Endpoints()[0]+" after Close")
}

// A server that forgets the key (a restart without persistence) refuses the next
// renewal: Lost closes well before the lease's TTL would have run out.
func TestLostWhenServerForgets(t *testing.T) {
	b := start(t, redis.Config{TTL: 3 * time.Second})
	le := harnesstest.Acquire(t, locker(t, b, b.Endpoints()[0]))
	ctx := context.Background()
	require.NoError(t, b.Crash(ctx, 0))
	require.NoError(t, b.Restart(ctx, 0, false))
	harnesstest.WaitClosed(t, le.Lost(), "Lost after the server forgot the key")
	require.Equal(t, "a renewal was refused", le.(harness.LossReasoner).LossReason(), "Lost by the refusal, not by the clock")
}
