package zookeeper_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/backend/zookeeper"
	"github.com/fencecheck/fencecheck/harnesstest"
)

func startEnsemble(t *testing.T) *zookeeper.Ensemble {
	t.Helper()
	b := start(t, zookeeper.Config{Nodes: 3})
	e, ok := b.Ensemble()
	require.True(t, ok)
	return e
}

func leader(t *testing.T, e *zookeeper.Ensemble) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	i, err := e.Leader(ctx)
	require.NoError(t, err)
	return i
}

// A SIGSTOPped leader is replaced: a locker on the other servers gets the lock, with a
// czxid from the new leader's epoch, and the old leader follows after SIGCONT.
func TestEnsembleLeaderPause(t *testing.T) {
	e := startEnsemble(t)
	l0 := leader(t, e)
	before := harnesstest.Acquire(t, locker(t, e, nil))
	require.NoError(t, before.Release(context.Background()))
	pid := e.NodePID(l0)
	require.NotZero(t, pid)
	require.NoError(t, e.PauseNode(context.Background(), l0))
	paused := time.Now()
	l := locker(t, e, avoid(e, l0))
	after := harnesstest.Acquire(t, l)
	t.Logf("leader node %d (pid %d) stopped; a new grant after %v", l0, pid, time.Since(paused).Round(time.Millisecond))
	require.Greater(t, after.Token(), before.Token())
	require.Greater(t, after.Token()>>32, before.Token()>>32, "a new epoch")
	require.NoError(t, after.Release(context.Background()))
	require.NoError(t, e.ResumeNode(context.Background(), l0))
	require.NotEqual(t, l0, leader(t, e), "the resumed old leader does not take over at once")
}

// A leader killed with SIGKILL and restarted with its data rejoins; tokens keep
// growing.
func TestEnsembleCrashRestart(t *testing.T) {
	e := startEnsemble(t)
	l0 := leader(t, e)
	before := harnesstest.Acquire(t, locker(t, e, nil))
	require.NoError(t, before.Release(context.Background()))
	require.NoError(t, e.Crash(context.Background(), l0))
	require.Zero(t, e.NodePID(l0))
	mid := harnesstest.Acquire(t, locker(t, e, nil))
	require.Greater(t, mid.Token(), before.Token())
	require.NoError(t, mid.Release(context.Background()))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.NoError(t, e.Restart(ctx, l0, true))
	require.NotZero(t, e.NodePID(l0))
	after := harnesstest.Acquire(t, locker(t, e, only(e, l0)))
	require.Greater(t, after.Token(), mid.Token())
	require.NoError(t, after.Release(context.Background()))
}

// A leader cut off from its peers (through their proxies) stops serving; the others
// elect a new one and grant the lock. Then the new leader's links stall.
func TestEnsembleLeaderIsolation(t *testing.T) {
	e := startEnsemble(t)
	l0 := leader(t, e)
	before := harnesstest.Acquire(t, locker(t, e, nil))
	require.NoError(t, before.Release(context.Background()))
	require.NoError(t, e.Isolate(context.Background(), l0))
	isolated := time.Now()
	// The isolated leader keeps saying "leader" until it misses its followers' acks
	// for syncLimit (2 s).
	var l1 int
	require.Eventually(t, func() bool { l1 = leader(t, e); return l1 != l0 }, 60*time.Second, 50*time.Millisecond)
	t.Logf("leader %d isolated; node %d leads after %v", l0, l1, time.Since(isolated).Round(time.Millisecond))
	after := harnesstest.Acquire(t, locker(t, e, only(e, l1)))
	require.Greater(t, after.Token()>>32, before.Token()>>32, "a new epoch")
	require.NoError(t, after.Release(context.Background()))
	require.NoError(t, e.Heal(context.Background()))
	require.Equal(t, l1, leader(t, e))

	// A stalled leader (StallNode: its JVM stopped) is replaced too, once its followers
	// miss it for syncLimit; Heal continues it.
	require.NoError(t, e.StallNode(context.Background(), l1))
	var l2 int
	require.Eventually(t, func() bool { l2 = leader(t, e); return l2 != l1 }, 60*time.Second, 50*time.Millisecond)
	require.NoError(t, e.Heal(context.Background()))
	t.Logf("leader %d stalled; node %d took over", l1, l2)
}

// avoid is the ensemble's addresses with server i's replaced by another's: a client that
// cannot reach server i.
func avoid(e *zookeeper.Ensemble, i int) []string {
	eps := e.Endpoints()
	eps[i] = eps[(i+1)%len(eps)]
	return eps
}

// only is server i's address in every slot: a client that reaches only server i.
func only(e *zookeeper.Ensemble, i int) []string {
	eps := e.Endpoints()
	for j := range eps {
		eps[j] = e.Endpoints()[i]
	}
	return eps
}
