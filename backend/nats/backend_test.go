package nats_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/backend/nats"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/nemesis/proxy"
	"github.com/fencecheck/fencecheck/harness/proc"
	"github.com/fencecheck/fencecheck/harness/proc/proctest"
	"github.com/fencecheck/fencecheck/harnesstest"
)

const ttl = 300 * time.Millisecond

func start(t *testing.T, cfg nats.Config) *nats.Backend {
	t.Helper()
	if cfg.TTL == 0 {
		cfg.TTL = ttl
	}
	if cfg.Dir == "" && cfg.URL == "" {
		cfg.Dir = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b, err := nats.Start(ctx, cfg)
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
	b := start(t, nats.Config{TTL: exclusionTTL})
	a, c := locker(t, b, b.Endpoints()[0]), locker(t, b, b.Endpoints()[0])
	var last int64
	for i := range 3 {
		l, other := a, c
		if i%2 == 1 {
			l, other = c, a
		}
		le := harnesstest.Acquire(t, l)
		require.Greater(t, le.Token(), last, "grant %d", i)
		last = le.Token()
		// Held past its TTL by renewals, the other client cannot take it.
		harnesstest.HeldAgainst(t, le, other, exclusionTTL+exclusionTTL/5)
		harnesstest.ReleaseOnce(t, le)
	}
}

// A stalled link stops the renewals: the server expires the key by its MaxAge, another
// client takes the lock, Lost closes. The time from the last confirmed renewal to the
// next grant is the server's expiry timing (logged: the README quotes it).
func TestLostWhenLinkStalls(t *testing.T) {
	b := start(t, nats.Config{})
	link, err := proxy.New(b.Endpoints()[0])
	require.NoError(t, err)
	t.Cleanup(func() { _ = link.Close() })
	a, c := locker(t, b, link.Addr()), locker(t, b, b.Endpoints()[0])
	for range 3 {
		le := harnesstest.Acquire(t, a)
		harnesstest.WaitRenewed(t, le) // the stall comes after a renewal
		link.Stall()
		le2 := harnesstest.Acquire(t, c)
		granted := time.Now()
		until := le.(harness.Expiring).ValidUntil()
		t.Logf("second grant %v after the first lease's validity ended (TTL %v)", granted.Sub(until).Round(time.Millisecond), ttl)
		require.False(t, granted.Before(until.Add(-ttl/10)), "the key expired before its TTL: granted %v before the holder's validity ended", until.Sub(granted))
		require.Greater(t, le2.Token(), le.Token())
		harnesstest.WaitClosed(t, le.Lost(), "Lost after the link stalled")
		link.Pass()
		require.ErrorIs(t, le.Release(context.Background()), harness.ErrNoEffect)
		releaseHeldOrLost(t, le2)
	}
}

// releaseHeldOrLost releases a lease that nothing stalled. On a loaded machine its
// renewals (every TTL/3) can still come too late for the server's expiry; then the
// release has no effect and the lease must say it was lost, never pretend it held.
func releaseHeldOrLost(t *testing.T, le harness.Lease) {
	t.Helper()
	err := le.Release(context.Background())
	if errors.Is(err, harness.ErrNoEffect) {
		t.Logf("the unstalled lease expired before its release (a renewal late by a loaded machine): %v", err)
		harnesstest.WaitClosed(t, le.Lost(), "Lost of a lease the server expired")
		return
	}
	require.NoError(t, err)
}

func TestLostWhenServerPaused(t *testing.T) {
	b := start(t, nats.Config{})
	le := harnesstest.Acquire(t, locker(t, b, b.Endpoints()[0]))
	ctx := context.Background()
	require.NoError(t, b.PauseNode(ctx, 0))
	harnesstest.WaitClosed(t, le.Lost(), "Lost while the server is stopped")
	require.NoError(t, b.ResumeNode(ctx, 0))
}

// SIGKILL and restart: with its store, the stream sequence (the token) goes on rising;
// with a new, empty store the bucket is created again and revisions start over.
func TestCrashRestart(t *testing.T) {
	for _, tc := range []struct {
		name      string
		keepData  bool
		monotonic bool
	}{{"with store", true, true}, {"new store", false, false}} {
		t.Run(tc.name, func(t *testing.T) {
			b := start(t, nats.Config{})
			l := locker(t, b, b.Endpoints()[0])
			var last int64
			for range 3 {
				le := harnesstest.Acquire(t, l)
				last = le.Token()
				require.NoError(t, le.Release(context.Background()))
			}
			ctx := context.Background()
			// Let the delete marker expire too: an empty stream must keep its sequence.
			waitBucketEmpty(t, b)
			pid := b.NodePID(0)
			require.NoError(t, b.Crash(ctx, 0))
			require.NoError(t, b.Restart(ctx, 0, tc.keepData))
			require.NotEqual(t, pid, b.NodePID(0))
			le := harnesstest.Acquire(t, l)
			require.Equal(t, tc.monotonic, le.Token() > last, "token %d after %d", le.Token(), last)
			require.NoError(t, le.Release(ctx))
		})
	}
}

// waitBucketEmpty waits, with a generous ceiling, until the lock bucket holds no message
// (its last delete marker has expired by MaxAge), as the server's own status says.
func waitBucketEmpty(t *testing.T, b *nats.Backend) {
	t.Helper()
	nc, err := natsgo.Connect("nats://"+b.Endpoints()[0], natsgo.Timeout(2*time.Second), natsgo.NoReconnect())
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	kv, err := js.KeyValue(ctx, nats.DefaultBucket)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		st, err := kv.Status(ctx)
		return err == nil && st.Values() == 0
	}, 30*time.Second, ttl/10, "the lock bucket's delete marker never expired")
}

func TestBadStarts(t *testing.T) {
	proctest.Skip(t, nats.ServerNeed)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	freeAddr := proctest.DeadAddr(t)
	hang := filepath.Join(t.TempDir(), "hang.sh")
	require.NoError(t, os.WriteFile(hang, []byte("#!/bin/sh\nexec sleep 60\n"), 0o755))
	for _, tc := range []struct {
		name string
		cfg  nats.Config
		want string
	}{
		{"port in use", nats.Config{Port: busy.Addr().(*net.TCPAddr).Port}, "address already in use"},
		{"wrong url", nats.Config{URL: "nats://" + freeAddr}, "no server at nats://" + freeAddr},
		{"not a url", nats.Config{URL: "127.0.0.1:4222"}, "is not one nats://host:port"},
		{"missing binary", nats.Config{Binary: "/nonexistent/nats-server"}, "apt-get install nats-server"},
		{"ttl too short", nats.Config{TTL: 50 * time.Millisecond}, "at least 100ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.cfg.TTL == 0 {
				tc.cfg.TTL = ttl
			}
			if tc.cfg.URL == "" {
				tc.cfg.Dir = t.TempDir()
			}
			_, err := nats.Start(context.Background(), tc.cfg)
			require.ErrorContains(t, err, tc.want)
			require.Empty(t, proc.Descendants(os.Getpid()))
		})
	}
	t.Run("never ready", func(t *testing.T) {
		_, err := nats.StartServer(context.Background(), nats.ServerConfig{Dir: t.TempDir(), Binary: hang, ReadyTimeout: 300 * time.Millisecond})
		require.ErrorContains(t, err, "was not ready within 300ms")
		require.Empty(t, proc.Descendants(os.Getpid()))
	})
	t.Run("external server", func(t *testing.T) {
		real := start(t, nats.Config{})
		b := start(t, nats.Config{URL: "nats://" + real.Endpoints()[0]})
		require.Zero(t, b.Nodes())
		require.Error(t, b.Crash(context.Background(), 0))
		le := harnesstest.Acquire(t, locker(t, b, b.Endpoints()[0]))
		require.NoError(t, le.Release(context.Background()))
	})
}

func TestCloseTwice(t *testing.T) {
	b := start(t, nats.Config{})
	l := locker(t, b, b.Endpoints()[0])
	le := harnesstest.Acquire(t, l)
	require.NoError(t, l.Close())
	require.NoError(t, l.Close())
	harnesstest.WaitClosed(t, le.Lost(), "Lost after the locker closed")
	require.NoError(t, b.Close())
	require.NoError(t, b.Close())
}

// A server that forgets the key (a restart on an empty store) refuses the next Update:
// Lost closes well before the lease's TTL would have run out.
func TestLostWhenServerForgets(t *testing.T) {
	b := start(t, nats.Config{TTL: 3 * time.Second})
	le := harnesstest.Acquire(t, locker(t, b, b.Endpoints()[0]))
	ctx := context.Background()
	require.NoError(t, b.Crash(ctx, 0))
	require.NoError(t, b.Restart(ctx, 0, false))
	harnesstest.WaitClosed(t, le.Lost(), "Lost after the server forgot the key")
	require.Equal(t, "a renewal was refused", le.(harness.LossReasoner).LossReason(), "Lost by the refusal, not by the clock")
}
