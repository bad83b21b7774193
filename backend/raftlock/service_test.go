package raftlock

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/jsonhttp"
)

func TestStartLeaderAndBackend(t *testing.T) {
	s := startService(t, testConfig(t))
	require.Equal(t, "raft", s.Name())
	require.Equal(t, 3, s.Nodes())
	require.Len(t, s.Endpoints(), 3)
	leader, err := s.Leader(ctxTimeout(t, patience))
	require.NoError(t, err)
	require.GreaterOrEqual(t, leader, 0)

	_, err = s.NewLocker(context.Background(), 0, []string{"127.0.0.1:1"})
	require.Error(t, err)
	require.Error(t, s.Isolate(context.Background(), 3))
	require.Error(t, s.StallNode(context.Background(), -1))
}

func TestAcquireReleaseAlternation(t *testing.T) {
	s := startService(t, testConfig(t))
	a := newTestLocker(t, s, 0, nil)
	b := newTestLocker(t, s, 1, nil)
	var last int64
	for range 5 {
		for _, l := range []*locker{a, b} {
			ls := acquire(t, l, patience)
			require.Greater(t, ls.Token(), last, "tokens must increase")
			require.Equal(t, 300*time.Millisecond, ls.TTL())
			last = ls.Token()
			release(t, ls)
			select {
			case <-ls.Lost():
			default:
				t.Fatal("Lost must be closed after Release")
			}
			// (Refused only if a first attempt's outcome was unknown but it took effect.)
			require.True(t, errors.Is(ls.Err(), ErrLeaseReleased) || errors.Is(ls.Err(), ErrLeaseRefused), "%v", ls.Err())
			require.ErrorIs(t, ls.Release(ctxTimeout(t, time.Second)), harness.ErrNoEffect, "a second Release does nothing")
		}
	}
	require.NoError(t, s.CheckSafety())
	require.GreaterOrEqual(t, len(s.Grants()), 10) // more if an unknown outcome was a grant
}

func TestBusyLockBlocks(t *testing.T) {
	cfg := testConfig(t)
	cfg.TTL = 600 * time.Millisecond // renewals must keep up on a loaded machine
	s := startService(t, cfg)
	a := newTestLocker(t, s, 0, nil)
	b := newTestLocker(t, s, 1, nil)
	la := acquire(t, a, patience)

	// B waits for longer than a TTL: A's renewals keep the lock. (B gives up between
	// polls, so its error says no effect.)
	ctx, cancel := context.WithCancel(context.Background())
	begin := time.Now()
	b.busyHook = func(response) {
		if time.Since(begin) > 2*s.Config().TTL {
			cancel()
		}
	}
	for {
		_, err := b.Acquire(ctx)
		if errors.Is(err, harness.ErrNoEffect) {
			require.ErrorIs(t, err, context.Canceled)
			break
		}
		require.Error(t, err)
		t.Logf("acquire outcome unknown (leader change), retrying: %v", err)
	}
	b.busyHook = nil
	for _, g := range s.Grants() {
		require.Equal(t, a.Owner(), g.Owner, "B was granted the lock while A held it")
	}
	select {
	case <-la.Lost():
		t.Fatalf("A lost its lease: %v", la.Err())
	default:
	}

	// B blocks until A releases.
	got := make(chan *Lease, 1)
	errc := make(chan error, 1)
	go func() {
		ls, err := b.AcquireLease(ctxTimeout(t, patience))
		errc <- err
		got <- ls
	}()
	release(t, la)
	require.NoError(t, <-errc)
	lb := <-got
	require.Greater(t, lb.Token(), la.Token())
	release(t, lb)
	require.NoError(t, s.CheckSafety())
}

func TestLeaseExpiresWhenHolderCutOff(t *testing.T) {
	s := startService(t, testConfig(t))
	fs, addrs := forwarders(t, s)
	a := newTestLocker(t, s, 0, addrs)
	b := newTestLocker(t, s, 1, nil)

	la := acquire(t, a, patience)
	for _, f := range fs {
		f.Cut()
	}
	select {
	case <-la.Lost():
	case <-time.After(patience):
		t.Fatal("A never noticed its lease expired")
	}
	require.ErrorIs(t, la.Err(), ErrLeaseExpired)
	require.False(t, time.Now().Before(la.ValidUntil()))

	lb := acquire(t, b, patience)
	require.Greater(t, lb.Token(), la.Token())

	// In FSM time, B's grant is at or after A's last expiry.
	grants := s.Grants()
	require.Len(t, grants, 2)
	var aExpiry int64
	for _, ev := range s.Events() {
		if ev.Owner == a.Owner() && (ev.Outcome == OutcomeGranted || ev.Outcome == OutcomeRenewed) {
			aExpiry = ev.Expiry
		}
	}
	require.GreaterOrEqual(t, grants[1].Now, aExpiry)

	// A's release fails: first it cannot reach anyone (a cut connection may leave the
	// outcome unknown), then it is refused (no effect).
	err := la.Release(ctxTimeout(t, 100*time.Millisecond))
	require.Error(t, err)
	for _, f := range fs {
		f.Mend()
	}
	err = la.Release(ctxTimeout(t, patience))
	require.ErrorIs(t, err, harness.ErrNoEffect)
	require.ErrorContains(t, err, "not held")

	release(t, lb)
	require.NoError(t, s.CheckSafety())
}

func TestIsolateLeader(t *testing.T) {
	s := startService(t, testConfig(t))
	l := newTestLocker(t, s, 0, nil)
	ls := acquire(t, l, patience)
	t1 := ls.Token()
	release(t, ls)

	old, err := s.Leader(ctxTimeout(t, patience))
	require.NoError(t, err)
	require.NoError(t, s.Isolate(context.Background(), old))
	begin := time.Now()
	var leader int
	eventually(t, patience, "a new leader", func() bool {
		leader, err = s.Leader(ctxTimeout(t, time.Second))
		return err == nil && leader != old
	})
	t.Logf("failover after Isolate(leader): %s (old %d, new %d)", time.Since(begin), old, leader)

	// The isolated node answers "not leader" (definitely no effect) once it steps down.
	c := jsonhttp.New(s.Endpoints()[old])
	defer c.Close()
	eventually(t, patience, "the old leader to step down", func() bool {
		var resp response
		err := c.Do(ctxTimeout(t, patience), http.MethodPost, "/acquire", request{Owner: "probe", TTL: int64(time.Second)}, &resp)
		require.NoError(t, err)
		return resp.Status == StatusNotLeader
	})

	ls = acquire(t, l, patience)
	t2 := ls.Token()
	require.Greater(t, t2, t1)
	release(t, ls)

	require.NoError(t, s.Heal(context.Background()))
	ls = acquire(t, l, patience)
	require.Greater(t, ls.Token(), t2)
	release(t, ls)
	waitConverged(t, s, patience)
	st, err := s.NodeState(old)
	require.NoError(t, err)
	require.Equal(t, uint64(ls.Token()), st.Token, "the healed node caught up")
	require.NoError(t, s.CheckSafety())
}

func TestNotLeaderAnswersWithLeaderIndex(t *testing.T) {
	s := startService(t, testConfig(t))
	leader, err := s.Leader(ctxTimeout(t, patience))
	require.NoError(t, err)
	follower := (leader + 1) % s.Nodes()
	c := jsonhttp.New(s.Endpoints()[follower])
	defer c.Close()
	eventually(t, patience, "the follower to know the leader", func() bool {
		var resp response
		err := c.Do(ctxTimeout(t, patience), http.MethodPost, "/acquire", request{Owner: "x", TTL: int64(time.Second)}, &resp)
		require.NoError(t, err)
		require.Equal(t, StatusNotLeader, resp.Status)
		require.Equal(t, follower, resp.Node)
		return resp.Leader == leader
	})

	// Bad requests are HTTP errors (no effect).
	err = c.Do(ctxTimeout(t, patience), http.MethodPost, "/acquire", request{Owner: "x"}, nil)
	require.ErrorIs(t, err, harness.ErrNoEffect)

	// Reads: local (may be stale) anywhere, confirmed only on the leader.
	var resp response
	require.NoError(t, c.Do(ctxTimeout(t, patience), http.MethodGet, "/state?local=1", nil, &resp))
	require.Equal(t, StatusOK, resp.Status)
	require.NotNil(t, resp.State)
	require.NoError(t, c.Do(ctxTimeout(t, patience), http.MethodGet, "/state", nil, &resp))
	require.Equal(t, StatusNotLeader, resp.Status)
	lc := jsonhttp.New(s.Endpoints()[leader])
	defer lc.Close()
	require.NoError(t, lc.Do(ctxTimeout(t, patience), http.MethodGet, "/state", nil, &resp))
	require.Equal(t, StatusOK, resp.Status)
	require.Equal(t, leader, resp.Leader)
}

func TestStallNode(t *testing.T) {
	s := startService(t, testConfig(t))
	l := newTestLocker(t, s, 0, nil)
	ls := acquire(t, l, patience)
	last := ls.Token()
	release(t, ls)

	old, err := s.Leader(ctxTimeout(t, patience))
	require.NoError(t, err)
	require.NoError(t, s.StallNode(context.Background(), old))
	eventually(t, patience, "a new leader", func() bool {
		i, err := s.Leader(ctxTimeout(t, time.Second))
		return err == nil && i != old
	})
	ls = acquire(t, l, patience)
	require.Greater(t, ls.Token(), last)
	last = ls.Token()
	release(t, ls)
	require.NoError(t, s.Heal(context.Background()))

	// A stalled follower does not stop the lock.
	leader, err := s.Leader(ctxTimeout(t, patience))
	require.NoError(t, err)
	require.NoError(t, s.StallNode(context.Background(), (leader+1)%s.Nodes()))
	ls = acquire(t, l, patience)
	require.Greater(t, ls.Token(), last)
	release(t, ls)
	require.NoError(t, s.Heal(context.Background()))
	waitConverged(t, s, patience)
	require.NoError(t, s.CheckSafety())
}

func TestCrashRestart(t *testing.T) {
	s := startService(t, testConfig(t))
	l := newTestLocker(t, s, 0, nil)
	ls := acquire(t, l, patience)
	t1 := ls.Token()
	release(t, ls)

	old, err := s.Leader(ctxTimeout(t, patience))
	require.NoError(t, err)
	ctx := ctxTimeout(t, patience)
	require.ErrorIs(t, s.Restart(ctx, old, false), ErrUnsafeRestart)
	require.Error(t, s.Restart(ctx, old, true), "restart of a running node")
	begin := time.Now()
	require.NoError(t, s.Crash(ctx, old))
	t.Logf("crash took %s", time.Since(begin))
	require.Error(t, s.Crash(ctx, old), "crash of a crashed node")
	_, err = s.NodeState(old)
	require.Error(t, err)

	// Its client API is gone: connections are refused (definitely no effect).
	c := jsonhttp.New(s.Endpoints()[old])
	defer c.Close()
	err = c.Do(ctx, http.MethodGet, "/state?local=1", nil, nil)
	require.ErrorIs(t, err, harness.ErrNoEffect)

	ls = acquireAfterFault(t, l, patience) // held across the restart
	t2 := ls.Token()
	require.Greater(t, t2, t1)

	require.NoError(t, s.Restart(ctx, old, true))
	var resp response
	require.NoError(t, c.Do(ctx, http.MethodGet, "/state?local=1", nil, &resp), "same port after restart")
	require.Equal(t, old, resp.Node)
	waitConverged(t, s, patience)
	st, err := s.NodeState(old)
	require.NoError(t, err)
	require.Equal(t, uint64(t2), st.Token)
	require.Equal(t, l.Owner(), st.Holder)

	// Crash a follower while the lock is held; renewals go on.
	leader, err := s.Leader(ctx)
	require.NoError(t, err)
	f := (leader + 1) % s.Nodes()
	require.NoError(t, s.Crash(ctx, f))
	require.NoError(t, s.Restart(ctx, f, true))
	select {
	case <-ls.Lost():
		t.Fatalf("lease lost: %v", ls.Err())
	default:
	}
	release(t, ls)
	ls = acquire(t, l, patience)
	require.Greater(t, ls.Token(), t2)
	release(t, ls)
	waitConverged(t, s, patience)
	require.NoError(t, s.CheckSafety())
}

func TestCrashLeaderUnderLoad(t *testing.T) {
	s := startService(t, testConfig(t))
	ctx := ctxTimeout(t, patience)
	done := make(chan struct{})
	errc := make(chan error, 3)
	for id := range 3 {
		l := newTestLocker(t, s, id, nil)
		go func() {
			var last int64
			for {
				select {
				case <-done:
					errc <- nil
					return
				default:
				}
				actx, cancel := context.WithTimeout(ctx, time.Second)
				ls, err := l.AcquireLease(actx)
				cancel()
				if err != nil {
					continue // unknown or no effect: both fine under a crash
				}
				if ls.Token() <= last {
					errc <- errors.New("token went back for one client")
					return
				}
				last = ls.Token()
				rctx, cancel := context.WithTimeout(ctx, time.Second)
				_ = ls.Release(rctx)
				cancel()
			}
		}()
	}
	eventually(t, patience, "some grants", func() bool { return len(s.Grants()) >= 3 })
	leader, err := s.Leader(ctx)
	require.NoError(t, err)
	require.NoError(t, s.Crash(ctx, leader))
	n := len(s.Grants())
	eventually(t, patience, "grants after the crash", func() bool { return len(s.Grants()) >= n+3 })
	require.NoError(t, s.Restart(ctx, leader, true))
	close(done)
	for range 3 {
		require.NoError(t, <-errc)
	}
	waitConverged(t, s, patience)
	require.NoError(t, s.CheckSafety())
}

func TestSnapshotInstallAndRestore(t *testing.T) {
	cfg := testConfig(t)
	cfg.TrailingLogs = 2
	s := startService(t, cfg)
	ctx := ctxTimeout(t, patience)
	l := newTestLocker(t, s, 0, nil)
	leader, err := s.Leader(ctx)
	require.NoError(t, err)
	f := (leader + 1) % s.Nodes()
	require.NoError(t, s.Crash(ctx, f))

	var last int64
	for range 5 {
		ls := acquire(t, l, patience)
		require.Greater(t, ls.Token(), last)
		last = ls.Token()
		release(t, ls)
	}
	held := acquire(t, l, patience)
	leader, err = s.Leader(ctx)
	require.NoError(t, err)
	require.NoError(t, s.Snapshot(ctx, leader))
	st, err := s.Status(leader)
	require.NoError(t, err)
	require.Positive(t, st.SnapshotIndex)

	// The restarted follower's log is behind the leader's compacted log: it needs the
	// snapshot (InstallSnapshot), then holds the same state.
	require.NoError(t, s.Restart(ctx, f, true))
	waitConverged(t, s, patience)
	fst, err := s.Status(f)
	require.NoError(t, err)
	require.Positive(t, fst.SnapshotIndex, "follower installed a snapshot")
	want, err := s.NodeState(leader)
	require.NoError(t, err)
	got, err := s.NodeState(f)
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.Equal(t, uint64(held.Token()), got.Token)

	// A node restarting from its own snapshot has the snapshot's state at once. (The held
	// lease's renewals give the follower entries past the installed snapshot.)
	eventually(t, patience, "entries past the snapshot", func() bool {
		st, err := s.Status(f)
		require.NoError(t, err)
		return st.AppliedIndex > st.SnapshotIndex
	})
	require.NoError(t, s.Snapshot(ctx, f))
	want, err = s.NodeState(f)
	require.NoError(t, err)
	require.NoError(t, s.Crash(ctx, f))
	require.NoError(t, s.Restart(ctx, f, true))
	got, err = s.NodeState(f)
	require.NoError(t, err)
	require.Equal(t, want.Token, got.Token)
	require.Equal(t, want.Holder, got.Holder)

	release(t, held)
	ls := acquire(t, l, patience)
	require.Greater(t, ls.Token(), held.Token())
	release(t, ls)
	require.NoError(t, s.CheckSafety())
}

func TestCloseTwice(t *testing.T) {
	s, err := Start(ctxTimeout(t, patience), testConfig(t))
	require.NoError(t, err)
	l, err := s.NewLocker(context.Background(), 0, s.Endpoints())
	require.NoError(t, err)
	ls, err := l.Acquire(ctxTimeout(t, patience))
	require.NoError(t, err)
	require.NoError(t, s.Isolate(context.Background(), 0))
	require.NoError(t, s.StallNode(context.Background(), 1))
	require.NoError(t, s.Close())
	require.NoError(t, s.Close())
	require.ErrorIs(t, s.Crash(context.Background(), 0), ErrClosed)
	require.ErrorIs(t, s.Restart(context.Background(), 0, true), ErrClosed)
	_, err = s.Leader(ctxTimeout(t, time.Second))
	require.Error(t, err)
	require.Error(t, ls.Release(ctxTimeout(t, 100*time.Millisecond)))
	require.NoError(t, l.Close())
	require.NoError(t, l.Close())
	<-ls.Lost()
}

func TestSingleNode(t *testing.T) {
	cfg := testConfig(t)
	cfg.Nodes = 1
	s := startService(t, cfg)
	l := newTestLocker(t, s, 0, nil)
	ls := acquire(t, l, patience)
	release(t, ls)
	ctx := ctxTimeout(t, patience)
	require.NoError(t, s.Crash(ctx, 0))
	require.NoError(t, s.Restart(ctx, 0, true))
	_, err := s.Leader(ctx)
	require.NoError(t, err)
	ls2 := acquireAfterFault(t, l, patience)
	require.Greater(t, ls2.Token(), ls.Token())
	release(t, ls2)
	require.NoError(t, s.CheckSafety())
}

func TestFiveNodes(t *testing.T) {
	cfg := testConfig(t)
	cfg.Nodes = 5
	s := startService(t, cfg)
	l := newTestLocker(t, s, 0, nil)
	leader, err := s.Leader(ctxTimeout(t, patience))
	require.NoError(t, err)
	// A minority partition containing the leader: the majority side goes on.
	require.NoError(t, s.Partition([]int{leader, (leader + 1) % 5}, []int{(leader + 2) % 5, (leader + 3) % 5, (leader + 4) % 5}))
	ls := acquire(t, l, patience)
	release(t, ls)
	require.NoError(t, s.Heal(context.Background()))
	require.NoError(t, s.CheckSafety())
}
