package etcdtxn_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/backend/etcd"
	"github.com/fencecheck/fencecheck/backend/etcd/etcdtest"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/resource/etcdtxn"
)

type setup struct {
	c *etcd.Cluster
	// b's 2s leases outlive a loaded machine (the client renews every 500ms at best);
	// short's 1s leases are for the client meant to lose its lease.
	b, short *etcd.Backend
	res      *etcdtxn.Resource
}

// patience is the ceiling of every wait for an event in these tests: generous, because
// a loaded 2-core machine can be many times slower than an idle one, and never spent on
// the passing path, which ends at the event.
const patience = 30 * time.Second

func start(t *testing.T) setup {
	t.Helper()
	c := etcdtest.StartCluster(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	b, err := etcd.New(ctx, etcd.Config{Endpoints: c.Endpoints(), TTL: 2 * time.Second})
	require.NoError(t, err)
	short, err := etcd.New(ctx, etcd.Config{Endpoints: c.Endpoints(), TTL: time.Second})
	require.NoError(t, err)
	res := etcdtxn.New(c.Endpoints())
	t.Cleanup(func() { _ = res.Close() })
	return setup{c, b, short, res}
}

func locker(t *testing.T, b harness.Backend, id int, addrs []string) harness.Locker {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	l, err := b.NewLocker(ctx, id, addrs)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return l
}

func (s setup) client(t *testing.T, id int, addrs []string) harness.ResourceClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	rc, err := s.res.NewClient(ctx, id, addrs, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = rc.Close() })
	return rc
}

func acquire(t *testing.T, l harness.Locker) harness.Lease {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	le, err := l.Acquire(ctx)
	require.NoError(t, err)
	return le
}

func write(t *testing.T, rc harness.ResourceClient, le harness.Lease, v string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	ok, err := rc.Write(ctx, le, v)
	require.NoError(t, err)
	return ok
}

func read(t *testing.T, rc harness.ResourceClient) (string, int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	v, tok, err := rc.Read(ctx)
	require.NoError(t, err)
	return v, tok
}

func TestReadWrite(t *testing.T) {
	s := start(t)
	require.Equal(t, "etcd-txn", s.res.Name())
	require.Equal(t, history.FenceOwner, s.res.Fence())
	require.Equal(t, s.c.Endpoints(), s.res.Endpoints())
	var _ harness.Resource = s.res

	rc := s.client(t, 0, s.c.Endpoints())
	v, tok := read(t, rc)
	require.Equal(t, "", v)
	require.Zero(t, tok)

	l := locker(t, s.b, 0, s.c.Endpoints())
	le := acquire(t, l)
	require.True(t, write(t, rc, le, "c0-1"))
	v, tok = read(t, rc)
	require.Equal(t, "c0-1", v)
	require.Equal(t, le.Token(), tok)
	require.NoError(t, le.Release(context.Background()))
	require.False(t, write(t, rc, le, "c0-2"), "a released lease no longer owns the lock")
	v, tok = read(t, rc)
	require.Equal(t, "c0-1", v)
	require.Equal(t, le.Token(), tok)

	le2 := acquire(t, l)
	require.True(t, write(t, rc, le2, "c0-3"))
	_, tok = read(t, rc)
	require.Greater(t, tok, le.Token())
	require.NoError(t, le2.Release(context.Background()))
	require.NoError(t, rc.Close())
	require.NoError(t, rc.Close())
}

type plainLease struct{}

func (plainLease) Token() int64                  { return 1 }
func (plainLease) TTL() time.Duration            { return time.Second }
func (plainLease) Lost() <-chan struct{}         { return nil }
func (plainLease) Release(context.Context) error { return nil }

func TestForeignLease(t *testing.T) {
	s := start(t)
	rc := s.client(t, 0, s.c.Endpoints())
	ok, err := rc.Write(context.Background(), plainLease{}, "x")
	require.False(t, ok)
	require.ErrorIs(t, err, harness.ErrNoEffect)
	require.ErrorContains(t, err, "Key()/CreateRevision()")
}

func TestUnreachable(t *testing.T) {
	s := start(t)
	f := etcdtest.MustForward(t, s.c.Endpoints()[0])
	f.Stall()
	res := etcdtxn.New([]string{f.Addr()})
	res.DialTimeout = 300 * time.Millisecond
	_, err := res.NewClient(context.Background(), 0, []string{f.Addr()}, nil)
	require.ErrorIs(t, err, harness.ErrNoEffect)
	_, err = res.NewClient(context.Background(), 0, []string{f.Addr(), f.Addr()}, nil)
	require.ErrorContains(t, err, "want 1 addresses")
}

// A pauses past its TTL (its links stall, so its keep-alives stop), B takes the lock;
// A's late writes are rejected by the transaction, B's are accepted.
func TestStaleWriteRejected(t *testing.T) {
	s := start(t)
	f := etcdtest.MustForward(t, s.c.Endpoints()[0])
	la := locker(t, s.short, 0, []string{f.Addr()})
	ra := s.client(t, 0, []string{f.Addr()})
	lb := locker(t, s.b, 1, s.c.Endpoints())
	rb := s.client(t, 1, s.c.Endpoints())

	a := acquire(t, la)
	require.True(t, write(t, ra, a, "a-1"))
	f.Stall()
	b := acquire(t, lb) // granted once A's lease expired on the server
	require.Greater(t, b.Token(), a.Token())
	select {
	case <-a.Lost():
	case <-time.After(patience):
		t.Fatal("A's Lost did not close")
	}
	f.Resume()

	// A's token is still above the stored one, but A no longer owns the lock.
	_, stored := read(t, rb)
	require.Greater(t, a.Token(), int64(0))
	require.Equal(t, a.Token(), stored)
	require.False(t, write(t, ra, a, "a-2-stale"), "stale write before B wrote")
	require.True(t, write(t, rb, b, "b-1"))
	require.False(t, write(t, ra, a, "a-3-stale"), "stale write after B wrote")

	for _, rc := range []harness.ResourceClient{ra, rb} {
		v, tok := read(t, rc)
		require.Equal(t, "b-1", v)
		require.Equal(t, b.Token(), tok)
	}
	require.ErrorIs(t, a.Release(context.Background()), harness.ErrNoEffect)
	require.NoError(t, b.Release(context.Background()))
}
