package zookeeper_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/backend/zookeeper"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/nemesis/proxy"
	"github.com/fencecheck/fencecheck/harness/proc"
	"github.com/fencecheck/fencecheck/harness/proc/proctest"
	"github.com/fencecheck/fencecheck/harnesstest"
)

// start starts a backend for t, skipping when Debian's zookeeper is not installed.
func start(t *testing.T, cfg zookeeper.Config) *zookeeper.Backend {
	t.Helper()
	if cfg.Dir == "" && len(cfg.Servers) == 0 {
		cfg.Dir = t.TempDir()
	}
	if cfg.TTL == 0 {
		cfg.TTL = 500 * time.Millisecond
	}
	if cfg.LogWriter == nil && cfg.Dir != "" {
		// The servers' output, quoted when the test fails.
		f, err := os.Create(filepath.Join(cfg.Dir, "servers.log"))
		require.NoError(t, err)
		cfg.LogWriter = f
		t.Cleanup(func() {
			_ = f.Close()
			if t.Failed() || os.Getenv("ZK_TEST_LOG") != "" {
				b, _ := os.ReadFile(f.Name())
				t.Logf("servers' output:\n%s", b)
			}
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	begin := time.Now()
	b, err := zookeeper.Start(ctx, cfg)
	if errors.Is(err, proc.ErrNotFound) {
		t.Skip(err.Error())
	}
	require.NoError(t, err)
	t.Logf("%d zookeeper server(s) serving in %v at %v", b.Nodes(), time.Since(begin).Round(time.Millisecond), b.Endpoints())
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	return b
}

func locker(t *testing.T, b harness.Backend, addrs []string) harness.Locker {
	t.Helper()
	if addrs == nil {
		addrs = b.Endpoints()
	}
	return harnesstest.NewLocker(t, b, 0, addrs...)
}

// Two lockers take turns on the lock: never both inside, and each grant's token is
// above every earlier one. The sequence token keeps that promise only while the lock
// parent lives, so its servers delete empty containers at ZooKeeper's default pace (a
// minute) rather than every TTL (TestSequenceRestartsWithTheParent shows the rest).
func TestMutualExclusionAndIncreasingTokens(t *testing.T) {
	for _, token := range []zookeeper.TokenSource{zookeeper.TokenCzxid, zookeeper.TokenSequence} {
		t.Run(string(token), func(t *testing.T) {
			cfg := zookeeper.Config{Token: token}
			if token == zookeeper.TokenSequence {
				cfg.ContainerCheck = time.Minute
			}
			b := start(t, cfg)
			var inside atomic.Int32
			var mu sync.Mutex
			var tokens []int64
			var wg sync.WaitGroup
			for range 2 {
				l := locker(t, b, nil)
				wg.Go(func() {
					for range 10 {
						ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
						le, err := l.Acquire(ctx)
						if !(assertNoErr(t, err)) {
							cancel()
							return
						}
						if n := inside.Add(1); n != 1 {
							t.Errorf("%d holders at once", n)
						}
						mu.Lock()
						tokens = append(tokens, le.Token())
						mu.Unlock()
						time.Sleep(time.Millisecond) // pacing: a moment inside, where a second holder would be counted
						inside.Add(-1)
						assertNoErr(t, le.Release(ctx))
						cancel()
					}
				})
			}
			wg.Wait()
			require.Len(t, tokens, 20)
			for i := 1; i < len(tokens); i++ {
				require.Greater(t, tokens[i], tokens[i-1], "grant %d: tokens %v", i, tokens)
			}
		})
	}
}

func assertNoErr(t *testing.T, err error) bool {
	t.Helper()
	if err != nil {
		t.Error(err)
		return false
	}
	return true
}

// A holder whose link to the server stalls (a paused client) loses its session: the
// server expires it after the TTL, another locker gets the lock with a higher token,
// and the holder's Lost closes once it has been cut off for a session timeout.
func TestLostWhenTheClientGoesSilent(t *testing.T) {
	b := start(t, zookeeper.Config{})
	link, err := proxy.New(b.Endpoints()[0])
	require.NoError(t, err)
	t.Cleanup(func() { _ = link.Close() })
	holder := harnesstest.Acquire(t, locker(t, b, []string{link.Addr()}))
	select {
	case <-holder.Lost():
		t.Fatal("lease lost before any fault")
	default:
	}
	link.Stall()
	stalled := time.Now()
	next := harnesstest.Acquire(t, locker(t, b, nil)) // blocks until the server expired the holder
	t.Logf("another locker got the lock %v after the stall", time.Since(stalled).Round(time.Millisecond))
	require.GreaterOrEqual(t, time.Since(stalled), b.Config().TTL, "granted before the holder's session could expire")
	require.Greater(t, next.Token(), holder.Token())
	select {
	case <-holder.Lost():
	case <-time.After(30 * time.Second):
		t.Fatal("Lost did not close after the session expired")
	}
	t.Logf("holder noticed %v after the stall", time.Since(stalled).Round(time.Millisecond))
	why := holder.(harness.LossReasoner).LossReason()
	require.NotEmpty(t, why, "the history's lost record says why")
	t.Logf("why: %s", why)
	link.Pass()
	err = holder.Release(context.Background())
	require.ErrorIs(t, err, harness.ErrNoEffect, "releasing a lost lease has no effect")
	require.NoError(t, next.Release(context.Background()))
}

// The sequence token restarts at 0 once the empty container parent is deleted and made
// again; the czxid of the same grants keeps growing.
func TestSequenceRestartsWithTheParent(t *testing.T) {
	b := start(t, zookeeper.Config{Token: zookeeper.TokenSequence, ContainerCheck: 100 * time.Millisecond})
	l := locker(t, b, nil)
	var first *zookeeper.Lease
	for range 3 {
		le := harnesstest.Acquire(t, l).(*zookeeper.Lease)
		if first == nil {
			first = le
		}
		require.NoError(t, le.Release(context.Background()))
	}
	// Wait for the server to delete the empty lock parent.
	conn := rawConn(t, b)
	require.Eventually(t, func() bool {
		ok, _, err := conn.Exists(zookeeper.DefaultLockPath)
		return err == nil && !ok
	}, 30*time.Second, 20*time.Millisecond, "the empty container parent was never deleted")
	le := harnesstest.Acquire(t, l).(*zookeeper.Lease)
	defer le.Release(context.Background())
	require.Equal(t, int64(0), le.Sequence(), "the sequence restarts with the parent")
	require.Equal(t, le.Sequence()+1, le.Token())
	require.Greater(t, le.Czxid(), first.Czxid(), "the czxid keeps growing")
	require.Less(t, le.Token(), first.Token()+3, "a later grant's sequence token is not above the earlier ones")
}

// rawConn is a plain go-zookeeper client on the real servers, for looking at the tree.
func rawConn(t *testing.T, b *zookeeper.Backend) *zk.Conn {
	t.Helper()
	c, _, err := zk.Connect(b.Endpoints(), 10*b.Config().TTL, zk.WithLogInfo(false), zk.WithLogger(nopLogger{}))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}

// A session timeout the server would change is refused, not silently used: the
// started server ticks at TTL/10, so it grants at most 20 ticks = 2 × its TTL.
func TestRefusesATTLTheServerDoesNotGrant(t *testing.T) {
	b := start(t, zookeeper.Config{TTL: 200 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := zookeeper.Start(ctx, zookeeper.Config{Servers: b.Endpoints(), TTL: 5 * time.Second})
	require.ErrorContains(t, err, "asked for a 5s session timeout, the server granted 400ms")
}

// Start fails with one clear error, and leaves no process behind, for a port in use, a
// wrong external address, a missing server and a bad configuration.
func TestStartFailures(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	busyPort := busy.Addr().(*net.TCPAddr).Port
	deadAddr := proctest.DeadAddr(t)
	tests := []struct {
		name string
		cfg  zookeeper.Config
		want string
	}{
		{"port in use", zookeeper.Config{ClientPorts: []int{busyPort}}, "exited before it was ready"},
		{"not up in time", zookeeper.Config{StartTimeout: time.Millisecond}, "was not ready within 1ms"},
		{"ensemble not up in time", zookeeper.Config{Nodes: 3, StartTimeout: time.Millisecond}, "did not serve in time"},
		{"nothing at the external address", zookeeper.Config{Servers: []string{deadAddr}}, "no server answers at [" + deadAddr + "]"},
		{"missing jar", zookeeper.Config{Jar: "/nonexistent/zookeeper.jar"}, "apt-get install zookeeper"},
		{"bad ttl", zookeeper.Config{TTL: 1500 * time.Microsecond}, "below 20ms"},
		{"bad nodes", zookeeper.Config{Nodes: 2}, "nodes must be 1, 3 or 5"},
		{"bad server", zookeeper.Config{Servers: []string{"localhost"}}, "is not host:port"},
		{"bad token", zookeeper.Config{Token: "random"}, "token source must be"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			proctest.Skip(t, zookeeper.ServerNeeds(zookeeper.Config{})...)
			cfg := tc.cfg
			if cfg.TTL == 0 {
				cfg.TTL = 500 * time.Millisecond
			}
			if len(cfg.Servers) == 0 {
				cfg.Dir = t.TempDir()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			b, err := zookeeper.Start(ctx, cfg)
			if err == nil {
				_ = b.Close()
			}
			require.ErrorContains(t, err, tc.want)
			require.NotContains(t, err.Error(), "\n", "one line")
			require.Empty(t, proc.Descendants(os.Getpid()), "no process left behind")
		})
	}
}

// Close is safe twice, on the backend and on a locker with a lease still held; the
// held lease's Lost closes.
func TestCloseTwice(t *testing.T) {
	b := start(t, zookeeper.Config{})
	l, err := b.NewLocker(context.Background(), 0, b.Endpoints())
	require.NoError(t, err)
	le := harnesstest.Acquire(t, l)
	require.NoError(t, l.Close())
	require.NoError(t, l.Close())
	<-le.Lost()
	require.NoError(t, b.Close())
	require.NoError(t, b.Close())
	require.Empty(t, proc.Descendants(os.Getpid()))
}

// A standalone server killed with SIGKILL and restarted with its data still knows the
// holder's session and znode (both are in its transaction log), and later tokens keep
// growing. The holder's client, disconnected for longer than the TTL while the JVM
// restarted, has given the lease up by then. Restarted without its data the server
// knows neither, and its zxids start again from the beginning: the token goes back.
func TestStandaloneCrashRestart(t *testing.T) {
	for _, keepData := range []bool{true, false} {
		t.Run(fmt.Sprintf("keepData=%v", keepData), func(t *testing.T) {
			b := start(t, zookeeper.Config{})
			l := locker(t, b, nil)
			for range 5 { // some history, so that a restart from nothing shows
				require.NoError(t, harnesstest.Acquire(t, l).Release(context.Background()))
			}
			holder := harnesstest.Acquire(t, l).(*zookeeper.Lease)
			// A persistent marker shows what the server kept: the holder's own znode is
			// ephemeral, and whether it is still there after the restart depends on
			// whether its client's close-session request reached the restarted server
			// before anyone looked.
			const marker = "/fencecheck-crash-marker"
			_, err := rawConn(t, b).Create(marker, nil, 0, zk.WorldACL(zk.PermAll))
			require.NoError(t, err)
			pid := b.NodePID(0)
			require.NoError(t, b.Crash(context.Background(), 0))
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			require.NoError(t, b.Restart(ctx, 0, keepData))
			require.NotEqual(t, pid, b.NodePID(0))
			ok, _, err := rawConn(t, b).Exists(marker)
			require.NoError(t, err)
			if keepData {
				require.True(t, ok, "the server kept its data across the crash")
				<-holder.Lost() // disconnected for a TTL
				require.ErrorIs(t, holder.Release(context.Background()), harness.ErrNoEffect)
				require.Greater(t, harnesstest.Acquire(t, l).Token(), holder.Token())
				return
			}
			require.False(t, ok, "a server without its data knows no znode")
			<-holder.Lost()
			next := harnesstest.Acquire(t, l)
			t.Logf("token before the restart without data %d, after %d", holder.Token(), next.Token())
			require.Less(t, next.Token(), holder.Token(), "the token went back")
		})
	}
}
