package etcd_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/harness/proc/proctest"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencecheck/fencecheck/backend/etcd"
	"github.com/fencecheck/fencecheck/backend/etcd/etcdtest"
	"github.com/fencecheck/fencecheck/harness"
)

func TestConfigValidate(t *testing.T) {
	ok := etcd.Config{Endpoints: []string{"127.0.0.1:2379"}, TTL: time.Second}
	require.NoError(t, ok.Validate())
	for _, tc := range []struct {
		name string
		mod  func(*etcd.Config)
		want string
	}{
		{"ttl 500ms", func(c *etcd.Config) { c.TTL = 500 * time.Millisecond }, "below 1s"},
		{"ttl zero", func(c *etcd.Config) { c.TTL = 0 }, "below 1s"},
		{"ttl 1.5s", func(c *etcd.Config) { c.TTL = 1500 * time.Millisecond }, "whole number of seconds"},
		{"no endpoints", func(c *etcd.Config) { c.Endpoints = nil }, "at least one endpoint"},
		{"bad endpoint", func(c *etcd.Config) { c.Endpoints = []string{"http://x"} }, "not host:port"},
		{"bad token", func(c *etcd.Config) { c.Token = "wall-clock" }, "token source"},
		{"negative dial timeout", func(c *etcd.Config) { c.DialTimeout = -time.Second }, "DialTimeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ok
			tc.mod(&cfg)
			require.ErrorContains(t, cfg.Validate(), tc.want)
			_, err := etcd.New(context.Background(), cfg)
			require.ErrorContains(t, err, tc.want)
		})
	}
	// The server's minimum depends on its election timeout.
	_, err := etcd.StartBackend(context.Background(),
		etcd.ClusterConfig{Dir: t.TempDir(), TickMs: 100, ElectionMs: 1000}, etcd.Config{TTL: time.Second})
	require.ErrorContains(t, err, "below the cluster's minimum 2s")
}

func TestUnreachableEndpoint(t *testing.T) {
	c := etcdtest.StartCluster(t, 1)
	const dial = 300 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()

	// Nothing listening: connection refused, retried until the dial timeout.
	start := time.Now()
	_, err := etcd.New(ctx, etcd.Config{Endpoints: []string{proctest.DeadAddr(t)}, TTL: time.Second, DialTimeout: dial})
	require.ErrorIs(t, err, harness.ErrNoEffect)
	require.ErrorContains(t, err, "answered within 300ms")
	t.Logf("refused endpoint failed after %v: %v", time.Since(start), err)

	// A listener that never answers (a stalled link).
	f := etcdtest.MustForward(t, c.Endpoints()[0])
	f.Stall()
	// The healthy member must answer within the short dial timeout too, which a loaded
	// machine can miss once or twice.
	var b *etcd.Backend
	eventually(t, patience, "the member answers within the dial timeout", func() (err error) {
		b, err = etcd.New(ctx, etcd.Config{Endpoints: c.Endpoints(), TTL: time.Second, DialTimeout: dial})
		return err
	})
	// A lock client waits up to 30 s for its first answer (NewLocker); its ctx may end
	// that sooner.
	start = time.Now()
	sctx, scancel := context.WithTimeout(ctx, time.Second)
	defer scancel()
	_, err = b.NewLocker(sctx, 0, []string{f.Addr()})
	require.ErrorIs(t, err, harness.ErrNoEffect)
	t.Logf("stalled endpoint failed after %v: %v", time.Since(start), err)

	_, err = b.NewLocker(ctx, 0, []string{f.Addr(), f.Addr()})
	require.ErrorContains(t, err, "want 1 addresses")
}

// safeTTL is the TTL of leases a test needs to outlive a loaded machine (the client
// renews every 500ms at best, so a 1s lease can expire under heavy load); a lease
// meant to expire uses shortTTL.
const (
	safeTTL  = 2 * time.Second
	shortTTL = time.Second
)

func ttl(d time.Duration) func(*etcd.Config) { return func(c *etcd.Config) { c.TTL = d } }

func newBackend(t *testing.T, c *etcd.Cluster, mod ...func(*etcd.Config)) *etcd.Backend {
	t.Helper()
	cfg := etcd.Config{Endpoints: c.Endpoints(), TTL: safeTTL}
	for _, m := range mod {
		m(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	b, err := etcd.New(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func newLocker(t *testing.T, b harness.Backend, id int, addrs []string) harness.Locker {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	l, err := b.NewLocker(ctx, id, addrs)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return l
}

func acquire(t *testing.T, l harness.Locker) harness.Lease {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	le, err := l.Acquire(ctx)
	require.NoError(t, err)
	return le
}

func release(t *testing.T, le harness.Lease) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	require.NoError(t, le.Release(ctx))
}

func TestLockAlternates(t *testing.T) {
	for _, src := range []etcd.TokenSource{etcd.TokenCreateRevision, etcd.TokenHeaderRevision} {
		t.Run(string(src), func(t *testing.T) {
			c := etcdtest.StartCluster(t, 1)
			b := newBackend(t, c, func(cfg *etcd.Config) { cfg.Token = src })
			require.Equal(t, "etcd", b.Name())
			require.Equal(t, c.Endpoints(), b.Endpoints())
			lockers := []harness.Locker{newLocker(t, b, 0, c.Endpoints()), newLocker(t, b, 1, c.Endpoints())}
			var last int64
			for i := range 6 {
				le := acquire(t, lockers[i%2])
				require.Greater(t, le.Token(), last, "grant %d", i)
				last = le.Token()
				require.Equal(t, safeTTL, le.TTL())
				el := le.(*etcd.Lease)
				require.Regexp(t, `^/fencecheck/lock/[0-9a-f]+$`, el.Key())
				if src == etcd.TokenCreateRevision {
					require.Equal(t, el.CreateRevision(), le.Token())
				}
				select {
				case <-le.Lost():
					t.Fatal("lease lost while held")
				default:
				}
				release(t, le)
				<-le.Lost() // a released lease is no longer kept alive
				err := le.Release(context.Background())
				require.ErrorIs(t, err, harness.ErrNoEffect, "second release")
			}
		})
	}
}

// waiters counts the lock's waiter keys (the holder's included).
func waiters(t *testing.T, cli *clientv3.Client) int64 {
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	r, err := cli.Get(ctx, etcd.DefaultLockKey+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	require.NoError(t, err)
	return r.Count
}

func TestSecondAcquireBlocks(t *testing.T) {
	for _, src := range []etcd.TokenSource{etcd.TokenCreateRevision, etcd.TokenHeaderRevision} {
		t.Run(string(src), func(t *testing.T) {
			c := etcdtest.StartCluster(t, 1)
			b := newBackend(t, c, func(cfg *etcd.Config) { cfg.Token = src })
			cli := client(t, c.Endpoints()[0])
			a, bl := newLocker(t, b, 0, c.Endpoints()), newLocker(t, b, 1, c.Endpoints())
			la := acquire(t, a)

			type res struct {
				le  harness.Lease
				err error
			}
			got := make(chan res, 1)
			ctx, cancel := context.WithTimeout(context.Background(), 2*patience)
			defer cancel()
			go func() {
				le, err := bl.Acquire(ctx)
				got <- res{le, err}
			}()
			eventually(t, patience, "B waits in line", func() error {
				if waiters(t, cli) != 2 {
					return errNotYet
				}
				return nil
			})
			select {
			case r := <-got:
				t.Fatalf("B acquired while A holds: %+v", r)
			default:
			}
			release(t, la)
			r := <-got
			require.NoError(t, r.err)
			require.Greater(t, r.le.Token(), la.Token())
			t.Logf("A token %d, B token %d", la.Token(), r.le.Token())

			// An Acquire given up while waiting leaves nothing behind.
			cctx, ccancel := context.WithCancel(context.Background())
			defer ccancel()
			errc := make(chan error, 1)
			go func() {
				_, err := a.Acquire(cctx)
				errc <- err
			}()
			eventually(t, patience, "A waits in line", func() error {
				if waiters(t, cli) != 2 {
					return errNotYet
				}
				return nil
			})
			ccancel()
			err := <-errc
			require.ErrorIs(t, err, harness.ErrNoEffect)
			require.ErrorIs(t, err, context.Canceled)
			require.EqualValues(t, 1, waiters(t, cli))
			release(t, r.le)
			require.EqualValues(t, 0, waiters(t, cli))
		})
	}
}

func TestLeaseLostWhileStalled(t *testing.T) {
	c := etcdtest.StartCluster(t, 1)
	f := etcdtest.MustForward(t, c.Endpoints()[0])
	a := newLocker(t, newBackend(t, c, ttl(shortTTL)), 0, []string{f.Addr()})
	bl := newLocker(t, newBackend(t, c), 1, c.Endpoints())
	la := acquire(t, a)

	f.Stall() // A's process is "paused": no keep-alive reaches the server
	start := time.Now()
	lb := acquire(t, bl)
	t.Logf("B acquired %v after A stalled (TTL %v)", time.Since(start), la.TTL())
	require.Greater(t, lb.Token(), la.Token())
	select {
	case <-la.Lost():
		t.Logf("A noticed the loss %v after stalling", time.Since(start))
	case <-time.After(patience):
		t.Fatal("A's Lost did not close")
	}
	f.Resume()
	err := la.Release(context.Background())
	require.ErrorIs(t, err, harness.ErrNoEffect)
	require.ErrorContains(t, err, "already gone")
	release(t, lb)
}

func TestLockerClose(t *testing.T) {
	c := etcdtest.StartCluster(t, 1)
	b := newBackend(t, c)
	a := newLocker(t, newBackend(t, c, ttl(shortTTL)), 0, c.Endpoints())
	la := acquire(t, a)
	require.NoError(t, a.Close())
	require.NoError(t, a.Close())
	<-la.Lost()
	_, err := a.Acquire(context.Background())
	require.ErrorIs(t, err, harness.ErrNoEffect)
	// The lease was not revoked: the next holder waits for its TTL.
	lb := acquire(t, newLocker(t, b, 1, c.Endpoints()))
	require.Greater(t, lb.Token(), la.Token())
	release(t, lb)
}

func TestStartBackend(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*patience)
	defer cancel()
	cb, err := etcd.StartBackend(ctx, etcd.ClusterConfig{Members: 3, Dir: t.TempDir()}, etcd.Config{TTL: safeTTL})
	require.NoError(t, err)
	var (
		_ harness.Backend = cb
		_ harness.Cluster = cb
		_ harness.Crasher = cb
	)
	require.Equal(t, "etcd", cb.Name())
	require.Len(t, cb.Endpoints(), 3)
	require.Equal(t, cb.Cluster.Endpoints(), cb.Endpoints())
	require.Equal(t, 3, cb.Nodes())

	l := newLocker(t, cb, 0, cb.Endpoints())
	le := acquire(t, l)
	// The lock survives losing the leader: the client reaches the other members.
	old := leader(t, cb)
	require.NoError(t, cb.Isolate(ctx, old))
	eventually(t, patience, "a new leader", func() error {
		lctx, lcancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer lcancel()
		if n, err := cb.Leader(lctx); err != nil || n == old {
			return errNotYet
		}
		return nil
	})
	require.NoError(t, cb.Heal(ctx))
	// The old leader may not have noticed its isolation yet; a request it takes before
	// the new leader's term reaches it is lost and hangs for etcd's 5.2s request
	// timeout. Wait until the members agree.
	start := time.Now()
	require.NoError(t, cb.WaitSettled(ctx))
	t.Logf("members settled %v after Heal", time.Since(start))
	if err := le.Release(ctx); err != nil {
		// Only a machine stalled for a whole TTL lets the lease expire meanwhile.
		require.ErrorIs(t, err, harness.ErrNoEffect)
		require.ErrorContains(t, err, "already gone")
		t.Logf("the lease expired before its release: %v", err)
	}
	require.NoError(t, l.Close())
	ol := newLocker(t, cb, 1, cb.Endpoints())
	other := acquire(t, ol)
	require.Greater(t, other.Token(), le.Token())
	release(t, other)
	// An open client keeps an idle lease stream, which a member's Close waits 5.2s for.
	require.NoError(t, ol.Close())

	_, err = etcd.StartBackend(ctx, etcd.ClusterConfig{Dir: t.TempDir()}, etcd.Config{Endpoints: []string{"x:1"}, TTL: time.Second})
	require.ErrorContains(t, err, "leave Config.Endpoints empty")

	start = time.Now()
	require.NoError(t, cb.Close())
	t.Logf("3-member Close took %v", time.Since(start))
	require.NoError(t, cb.Close())
}
