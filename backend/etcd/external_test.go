package etcd_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencecheck/fencecheck/backend/etcd"
	"github.com/fencecheck/fencecheck/backend/etcd/etcdtest"
)

func TestPrefixValidation(t *testing.T) {
	for _, tc := range []struct {
		prefix string
		ok     bool
	}{
		{"", true},
		{etcd.RunPrefix("run-0a1b2c3d4e5f"), true},
		{"/fencecheck/", false},      // every run's keys
		{"/fencecheck//", false},     // no run id
		{"/fencecheck/run-1", false}, // would also match run-10's keys
		{"/fencecheck/a/b/", false},  // not one run's own level
		{"/", false},                 // the whole cluster
		{"/app/run-1/", false},       // a user's keys
	} {
		t.Run(tc.prefix, func(t *testing.T) {
			err := etcd.Config{Endpoints: []string{"127.0.0.1:2379"}, TTL: time.Second, Prefix: tc.prefix}.Validate()
			if tc.ok {
				require.NoError(t, err)
			} else {
				require.ErrorContains(t, err, "must be /fencecheck/<run id>/")
			}
		})
	}
}

func TestTTLErrorMessage(t *testing.T) {
	for _, tc := range []struct {
		asked, granted time.Duration
		want           string
	}{
		{time.Second, 2 * time.Second, "this cluster grants at least 2s leases; use --ttl 2s"},
		{5 * time.Second, 3 * time.Second, "this cluster granted a 3s lease when asked for 5s; use --ttl 3s"},
	} {
		require.EqualError(t, &etcd.TTLError{Asked: tc.asked, Granted: tc.granted}, tc.want)
	}
}

// Against an etcd server started on its own with its defaults (1000 ms election
// timeout): New refuses a TTL the server raises, and Close leaves nothing of the run
// behind — a lock abandoned by a client that closed without releasing included — while
// every key outside the run's prefix stays.
func TestExternalServerTTLAndCleanup(t *testing.T) {
	x := etcdtest.StartExternal(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	eps := []string{x.Endpoint}

	_, err := etcd.New(ctx, etcd.Config{Endpoints: eps, TTL: time.Second})
	var te *etcd.TTLError
	require.ErrorAs(t, err, &te)
	require.Equal(t, etcd.TTLError{Asked: time.Second, Granted: 2 * time.Second}, *te)

	cli, err := etcd.Dial(ctx, eps, 5*time.Second)
	require.NoError(t, err)
	defer cli.Close()
	leases, err := cli.Leases(ctx)
	require.NoError(t, err)
	require.Empty(t, leases.Leases, "the TTL probes revoked their leases")

	// Keys that are not this run's: a user's, and another run's.
	others := []string{"/app/config", "/fencecheck/run-other/lock"}
	for _, k := range others {
		_, err := cli.Put(ctx, k, "keep")
		require.NoError(t, err)
	}

	prefix := etcd.RunPrefix("run-cleanuptest")
	b, err := etcd.New(ctx, etcd.Config{Endpoints: eps, TTL: 10 * time.Second, Prefix: prefix})
	require.NoError(t, err)
	l, err := b.NewLocker(ctx, 0, eps)
	require.NoError(t, err)
	lease, err := l.Acquire(ctx)
	require.NoError(t, err)
	require.Equal(t, 10*time.Second, lease.TTL())
	_, err = cli.Put(ctx, prefix+"data", "c0-1")
	require.NoError(t, err)
	require.NoError(t, l.Close()) // no release: the lock key and its 10 s lease stay

	count := func(key string, opts ...clientv3.OpOption) int64 {
		r, err := cli.Get(ctx, key, append(opts, clientv3.WithCountOnly())...)
		require.NoError(t, err)
		return r.Count
	}
	require.EqualValues(t, 2, count(prefix, clientv3.WithPrefix()), "the lock key and the data")

	require.NoError(t, b.Close())
	require.NoError(t, b.Close(), "Close twice")
	require.Zero(t, count(prefix, clientv3.WithPrefix()), "keys under the run's prefix")
	leases, err = cli.Leases(ctx)
	require.NoError(t, err)
	require.Empty(t, leases.Leases, "the abandoned lock's lease was revoked")
	for _, k := range others {
		require.EqualValues(t, 1, count(k), "%s is not the run's and stays", k)
	}

	// A cluster gone before the cleanup: Close says which prefix is left.
	gone := etcd.RunPrefix("run-gone")
	b2, err := etcd.New(ctx, etcd.Config{Endpoints: eps, TTL: 2 * time.Second, Prefix: gone})
	require.NoError(t, err)
	require.NoError(t, x.Close())
	require.ErrorContains(t, b2.Close(), "clean up "+gone)
}
