package etcd_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fencecheck/fencecheck/backend/etcd"
	"github.com/fencecheck/fencecheck/backend/etcd/etcdtest"
	"github.com/fencecheck/fencecheck/harness"
)

func TestClusterConfigValidate(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, etcd.ClusterConfig{Dir: dir}.Validate(), "zero Members means 1")
	require.NoError(t, etcd.ClusterConfig{Members: 3, Dir: dir}.Validate())
	for _, tc := range []struct {
		name string
		cfg  etcd.ClusterConfig
		want string
	}{
		{"negative members", etcd.ClusterConfig{Members: -1, Dir: dir}, "Members must be 1 or 3"},
		{"two members", etcd.ClusterConfig{Members: 2, Dir: dir}, "Members must be 1 or 3"},
		{"no dir", etcd.ClusterConfig{Members: 1}, "Dir is required"},
		{"election too short", etcd.ClusterConfig{Dir: dir, TickMs: 10, ElectionMs: 40}, "at least 5×TickMs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			require.ErrorContains(t, err, tc.want)
			_, err = etcd.StartCluster(context.Background(), tc.cfg)
			require.ErrorContains(t, err, tc.want)
		})
	}
	require.Equal(t, time.Second, etcd.ClusterConfig{Dir: dir}.MinTTL())
	require.Equal(t, 2*time.Second, etcd.ClusterConfig{Dir: dir, TickMs: 100, ElectionMs: 1000}.MinTTL())
}

func TestStartClusterRefusesUsedDir(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	c1, err := etcd.StartCluster(ctx, etcd.ClusterConfig{Dir: dir})
	require.NoError(t, err)
	require.NoError(t, c1.Close())
	_, err = etcd.StartCluster(ctx, etcd.ClusterConfig{Dir: dir})
	require.ErrorContains(t, err, "not empty")
}

// client dials exactly one member.
func client(t *testing.T, ep string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

func put(cli *clientv3.Client, key, val string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	_, err := cli.Put(ctx, key, val)
	return err
}

// patience is the ceiling of every wait for an event in these tests: generous, because
// a loaded 2-core machine can be many times slower than an idle one, and never spent
// on the passing path, which ends at the event.
const patience = 30 * time.Second

// eventually polls f every 10ms until it returns nil or the deadline passes.
func eventually(t *testing.T, timeout time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v: %v", what, timeout, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// settle waits until the members agree on a leader (see Cluster.WaitSettled).
func settle(t *testing.T, c *etcd.Cluster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	require.NoError(t, c.WaitSettled(ctx))
}

func leader(t *testing.T, c harness.Cluster) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	l, err := c.Leader(ctx)
	require.NoError(t, err)
	return l
}

// statusLeader asks member ep itself whether it is the leader.
func statusIsLeader(t *testing.T, ep string) bool {
	cli := client(t, ep)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	st, err := cli.Status(ctx, ep)
	require.NoError(t, err)
	return st.Leader == st.Header.MemberId
}

func TestSingleMember(t *testing.T) {
	c := etcdtest.StartCluster(t, 1)
	require.Equal(t, 1, c.Nodes())
	require.Len(t, c.Endpoints(), 1)
	require.Equal(t, 0, leader(t, c))
	require.True(t, statusIsLeader(t, c.Endpoints()[0]))
	require.NoError(t, put(client(t, c.Endpoints()[0]), "/k", "v", patience))
	require.ErrorContains(t, c.Isolate(context.Background(), 1), "no node 1")
	settle(t, c)
	require.NoError(t, c.Close())
	require.NoError(t, c.Close())
	_, err := c.Leader(context.Background())
	require.ErrorIs(t, err, etcd.ErrClosed)
	require.ErrorIs(t, c.WaitSettled(context.Background()), etcd.ErrClosed)
}

func TestThreeMembersIsolateLeader(t *testing.T) {
	c := etcdtest.StartCluster(t, 3)
	require.Equal(t, 3, c.Nodes())
	old := leader(t, c)
	require.True(t, statusIsLeader(t, c.Endpoints()[old]))
	oldCli := client(t, c.Endpoints()[old])
	require.NoError(t, put(oldCli, "/k", "before", patience))

	start := time.Now()
	require.NoError(t, c.Isolate(context.Background(), old))
	var now int
	eventually(t, patience, "a new leader", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		l, err := c.Leader(ctx)
		if err == nil && l == old {
			return errNotYet
		}
		now = l
		return err
	})
	t.Logf("new leader %d (was %d) after %v", now, old, time.Since(start))
	require.NotEqual(t, old, now)
	// The majority side commits; the isolated old leader cannot.
	require.NoError(t, put(client(t, c.Endpoints()[now]), "/k", "majority", patience))
	require.Error(t, put(oldCli, "/k", "isolated", 500*time.Millisecond), "an isolated member must not commit")
	// Cut off, the old leader cannot learn the new term, so the members cannot settle.
	sctx, scancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer scancel()
	require.ErrorIs(t, c.WaitSettled(sctx), context.DeadlineExceeded)

	require.NoError(t, c.Heal(context.Background()))
	healed := time.Now()
	settle(t, c)
	t.Logf("members settled %v after Heal", time.Since(healed))
	eventually(t, patience, "the old leader commits again after Heal", func() error {
		return put(oldCli, "/k", "healed", 500*time.Millisecond)
	})
	leader(t, c)
	for _, ep := range c.Endpoints() {
		cli := client(t, ep)
		eventually(t, patience, "member converges", func() error {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			r, err := cli.Get(ctx, "/k", clientv3.WithSerializable())
			if err != nil {
				return err
			}
			if len(r.Kvs) != 1 || string(r.Kvs[0].Value) != "healed" {
				return errNotYet
			}
			return nil
		})
	}
	// Close twice, concurrently.
	start = time.Now()
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() { require.NoError(t, c.Close()) })
	}
	wg.Wait()
	t.Logf("3-member Close took %v", time.Since(start))
	require.NoError(t, c.Close())
	require.ErrorIs(t, c.Heal(context.Background()), etcd.ErrClosed)
}

func TestStallNode(t *testing.T) {
	c := etcdtest.StartCluster(t, 3)
	old := leader(t, c)
	require.NoError(t, c.StallNode(context.Background(), old))
	eventually(t, patience, "a new leader", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		l, err := c.Leader(ctx)
		if err == nil && l == old {
			return errNotYet
		}
		return err
	})
	require.Error(t, put(client(t, c.Endpoints()[old]), "/k", "stalled", 500*time.Millisecond))
	require.NoError(t, c.Heal(context.Background()))
	oldCli := client(t, c.Endpoints()[old])
	eventually(t, patience, "the stalled member commits after Heal", func() error {
		return put(oldCli, "/k", "healed", 500*time.Millisecond)
	})
}

func TestCrashRestartSingle(t *testing.T) {
	c := etcdtest.StartCluster(t, 1)
	ep := c.Endpoints()[0]
	ctx, cancel := context.WithTimeout(context.Background(), 2*patience)
	defer cancel()
	cli := client(t, ep)
	for range 5 {
		require.NoError(t, put(cli, "/k", "v", patience))
	}
	require.NoError(t, c.Crash(ctx, 0))
	require.ErrorContains(t, c.Crash(ctx, 0), "already crashed")
	require.Error(t, put(cli, "/k", "down", 300*time.Millisecond))
	require.NoError(t, c.Restart(ctx, 0, true))
	require.Equal(t, []string{ep}, c.Endpoints())
	eventually(t, patience, "data kept", func() error {
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		r, err := cli.Get(rctx, "/k")
		if err != nil {
			return err
		}
		if len(r.Kvs) != 1 || r.Header.Revision != 6 {
			return errNotYet
		}
		return nil
	})
	require.ErrorContains(t, c.Restart(ctx, 0, true), "running")

	require.NoError(t, c.Crash(ctx, 0))
	require.NoError(t, c.Restart(ctx, 0, false))
	eventually(t, patience, "data lost, revision reset", func() error {
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		r, err := cli.Get(rctx, "/k")
		if err != nil {
			return err
		}
		if len(r.Kvs) != 0 || r.Header.Revision != 1 {
			return errNotYet
		}
		return nil
	})
}

func TestCrashRestartThree(t *testing.T) {
	c := etcdtest.StartCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*patience)
	defer cancel()
	old := leader(t, c)
	require.NoError(t, c.Crash(ctx, old))
	now := leader(t, c)
	require.NotEqual(t, old, now)
	require.NoError(t, put(client(t, c.Endpoints()[now]), "/k", "while-down", patience))

	require.NoError(t, c.Restart(ctx, old, true))
	oldCli := client(t, c.Endpoints()[old])
	eventually(t, patience, "restarted member caught up", func() error {
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		r, err := oldCli.Get(rctx, "/k", clientv3.WithSerializable())
		if err != nil {
			return err
		}
		if len(r.Kvs) != 1 || string(r.Kvs[0].Value) != "while-down" {
			return errNotYet
		}
		return nil
	})

}

// A follower that loses its data is replaced and catches up from the quorum; link
// faults outlive a crash and restart until Heal.
func TestCrashRestartThreeLoseData(t *testing.T) {
	c := etcdtest.StartCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*patience)
	defer cancel()
	l := leader(t, c)
	require.NoError(t, put(client(t, c.Endpoints()[l]), "/k", "before", patience))
	f := (l + 1) % 3
	require.NoError(t, c.Isolate(ctx, f))
	require.NoError(t, c.Crash(ctx, f))
	require.NoError(t, c.Heal(ctx))
	start := time.Now()
	require.NoError(t, c.Restart(ctx, f, false))
	t.Logf("replacing node %d took %v", f, time.Since(start))
	fCli := client(t, c.Endpoints()[f])
	eventually(t, patience, "replaced member caught up", func() error {
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		r, err := fCli.Get(rctx, "/k", clientv3.WithSerializable())
		if err != nil {
			return err
		}
		if len(r.Kvs) != 1 || string(r.Kvs[0].Value) != "before" {
			return errNotYet
		}
		return nil
	})
	require.NoError(t, put(fCli, "/k", "after-replace", patience))
	// The isolation survives a restart until Heal.
	require.NoError(t, c.Isolate(ctx, f))
	start = time.Now()
	require.NoError(t, c.Crash(ctx, f))
	t.Logf("crash took %v", time.Since(start))
	start = time.Now()
	require.NoError(t, c.Restart(ctx, f, true))
	t.Logf("restart (isolated) took %v", time.Since(start))
	require.Error(t, put(fCli, "/k", "isolated", 500*time.Millisecond))
	require.NoError(t, c.Heal(ctx))
	start = time.Now()
	eventually(t, patience, "healed member commits", func() error {
		return put(fCli, "/k", "healed", 500*time.Millisecond)
	})
	t.Logf("healed member committed after %v", time.Since(start))
}

type notYet struct{}

func (notYet) Error() string { return "not yet" }

var errNotYet error = notYet{}
