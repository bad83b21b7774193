package kubelease_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/backend/kubelease"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/nemesis/proxy"
	"github.com/fencecheck/fencecheck/harness/proc"
	"github.com/fencecheck/fencecheck/harnesstest"
)

const ttl = time.Second

// exclusionTTL is long enough that a loaded machine does not miss renewals for a whole
// RenewDeadline, which would hand the lock over for real.
const exclusionTTL = 2 * time.Second

// start starts the backend, or skips naming the build script when there is no
// kube-apiserver or kube-lease-client.
func start(t *testing.T, cfg kubelease.Config) *kubelease.Backend {
	t.Helper()
	if cfg.TTL == 0 {
		cfg.TTL = ttl
	}
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	if err := kubelease.FindBuild(); errors.Is(err, proc.ErrNotFound) {
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	b, err := kubelease.Start(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	return b
}

func locker(t *testing.T, b harness.Backend, addr string, id int) harness.Locker {
	t.Helper()
	return harnesstest.NewLocker(t, b, id, addr)
}

// Every grant is a change of holder (one identity per grant), so leaseTransitions goes
// up by one each time, even when the same client takes the lock twice in a row; a held
// lease is renewed past LeaseDuration and nobody else gets it meanwhile.
func TestTokensAndMutualExclusion(t *testing.T) {
	t.Parallel()
	const ttl = exclusionTTL
	b := start(t, kubelease.Config{TTL: ttl})
	a, c := locker(t, b, b.Endpoints()[0], 0), locker(t, b, b.Endpoints()[0], 1)
	want := int64(1) // the Lease is created with no holder and 0 transitions
	for i, l := range []harness.Locker{a, a, c, a} {
		le := harnesstest.Acquire(t, l)
		require.Equal(t, want, le.Token(), "grant %d", i)
		want++
		other := c
		if l == c {
			other = a
		}
		harnesstest.HeldAgainst(t, le, other, ttl+ttl/2)
		require.True(t, time.Until(le.(harness.Expiring).ValidUntil()) > 0, "grant %d: not valid while renewed", i)
		harnesstest.ReleaseOnce(t, le)
	}
}

// resourceVersion grows with every write to etcd, renewals included: grants get growing
// tokens, with gaps.
func TestResourceVersionTokens(t *testing.T) {
	t.Parallel()
	b := start(t, kubelease.Config{Token: kubelease.TokenResourceVersion})
	l := locker(t, b, b.Endpoints()[0], 0)
	var last int64
	for i := range 3 {
		le := harnesstest.Acquire(t, l)
		require.Greater(t, le.Token(), last, "grant %d", i)
		last = le.Token()
		harnesstest.WaitRenewed(t, le) // a renewal writes too: the next token skips ahead
		require.NoError(t, le.Release(context.Background()))
	}
}

// The classic failure, in the small: the holder's link stalls (as in a GC pause), its
// renewals stop, another client takes over after LeaseDuration with the next
// transition, and the holder hears OnStoppedLeading only after RenewDeadline.
func TestTakeoverWhenHolderStalls(t *testing.T) {
	t.Parallel()
	// A renewal that a loaded apiserver delays for a whole RenewDeadline would end the
	// lease before the stall, and the release would hand it over at once.
	const ttl = exclusionTTL
	b := start(t, kubelease.Config{TTL: ttl})
	link, err := proxy.New(b.Endpoints()[0])
	require.NoError(t, err)
	t.Cleanup(func() { _ = link.Close() })
	a, c := locker(t, b, link.Addr(), 0), locker(t, b, b.Endpoints()[0], 1)
	for range 2 {
		le := harnesstest.Acquire(t, a)
		harnesstest.WaitRenewed(t, le) // the stall comes after a renewal
		link.Stall()
		stalled := time.Now()
		le2 := harnesstest.Acquire(t, c)
		took := time.Since(stalled)
		t.Logf("taken over %v after the holder's link stalled (LeaseDuration %v)", took.Round(time.Millisecond), ttl)
		// The holder renewed within RenewDeadline of the stall (or it would have stepped
		// down), and a candidate waits LeaseDuration from when it saw that renewal.
		require.GreaterOrEqual(t, took, ttl-kubelease.TimingFor(ttl).RenewDeadline, "taken over before the holder's renewals could have lapsed")
		require.Equal(t, le.Token()+1, le2.Token())
		harnesstest.WaitClosed(t, le.Lost(), "Lost after the link stalled")
		link.Pass()
		require.ErrorIs(t, le.Release(context.Background()), harness.ErrNoEffect)
		require.NoError(t, le2.Release(context.Background()))
	}
}

// SIGSTOP of the apiserver: no renewal gets through, the leader stops leading.
func TestLostWhenAPIServerPaused(t *testing.T) {
	t.Parallel()
	b := start(t, kubelease.Config{})
	le := harnesstest.Acquire(t, locker(t, b, b.Endpoints()[0], 0))
	ctx := context.Background()
	require.NoError(t, b.PauseNode(ctx, 0))
	harnesstest.WaitClosed(t, le.Lost(), "Lost while the apiserver is stopped")
	require.NoError(t, b.ResumeNode(ctx, 0))
}

// SIGKILL and restart of the apiserver: the Lease is in etcd, so both token kinds go on
// rising from where they were.
func TestCrashRestartKeepsTokens(t *testing.T) {
	t.Parallel()
	for _, tok := range []kubelease.TokenKind{kubelease.TokenTransitions, kubelease.TokenResourceVersion} {
		b := start(t, kubelease.Config{Token: tok})
		l := locker(t, b, b.Endpoints()[0], 0)
		le := harnesstest.Acquire(t, l)
		last := le.Token()
		require.NoError(t, le.Release(context.Background()))
		ctx := context.Background()
		pid := b.NodePID(0)
		require.NoError(t, b.Crash(ctx, 0))
		require.NoError(t, b.Restart(ctx, 0, true))
		require.NotEqual(t, pid, b.NodePID(0))
		le = harnesstest.Acquire(t, l)
		require.Greater(t, le.Token(), last, "token kind %d", tok)
		require.NoError(t, le.Release(ctx))
		require.Error(t, b.Restart(ctx, 0, false), "a running server")
	}
}

func TestBadConfigs(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  kubelease.Config
		want string
	}{
		{"sub-second ttl", kubelease.Config{TTL: 500 * time.Millisecond}, "whole seconds, at least 1s"},
		{"fractional ttl", kubelease.Config{TTL: 1500 * time.Millisecond}, "whole seconds"},
		{"renew deadline too long", kubelease.Config{TTL: time.Second, Timing: kubelease.Timing{LeaseDuration: time.Second, RenewDeadline: time.Second, RetryPeriod: 100 * time.Millisecond}}, "longer than renew deadline"},
		{"retry period too long", kubelease.Config{TTL: time.Second, Timing: kubelease.Timing{LeaseDuration: time.Second, RenewDeadline: 500 * time.Millisecond, RetryPeriod: 450 * time.Millisecond}}, "1.2 × retry period"},
		{"missing binary", kubelease.Config{TTL: time.Second, Binary: "/nonexistent/kube-apiserver"}, "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Dir = t.TempDir()
			_, err := kubelease.Start(context.Background(), tc.cfg)
			require.ErrorContains(t, err, tc.want)
			require.Empty(t, proc.Descendants(os.Getpid()))
		})
	}
	t.Run("never ready", func(t *testing.T) {
		hang := filepath.Join(t.TempDir(), "hang.sh")
		require.NoError(t, os.WriteFile(hang, []byte("#!/bin/sh\nexec sleep 60\n"), 0o755))
		_, err := kubelease.StartAPIServer(context.Background(), kubelease.APIServerConfig{Binary: hang, Dir: t.TempDir(), Etcd: []string{"127.0.0.1:1"}, ReadyTimeout: 300 * time.Millisecond})
		require.ErrorContains(t, err, "was not ready within 300ms")
		require.Empty(t, proc.Descendants(os.Getpid()))
	})
}

func TestCloseTwice(t *testing.T) {
	t.Parallel()
	b := start(t, kubelease.Config{})
	l := locker(t, b, b.Endpoints()[0], 0)
	le := harnesstest.Acquire(t, l)
	require.NoError(t, l.Close())
	require.NoError(t, l.Close())
	harnesstest.WaitClosed(t, le.Lost(), "Lost after the locker closed")
	require.NoError(t, b.Close())
	require.NoError(t, b.Close())
}
