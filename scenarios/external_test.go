package scenarios

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	etcdlock "github.com/fencecheck/fencecheck/harness/lease/etcd"
	"github.com/fencecheck/fencecheck/models"
)

// The external-cluster path: an etcd server started on its own, reached only through
// its endpoints, as a user's cluster would be. Client-side faults still go through the
// local proxies; node faults are refused.
func TestExternalEtcd(t *testing.T) {
	ctx := context.Background()
	c, err := etcdlock.StartCluster(ctx, etcdlock.ClusterConfig{Members: 1, Dir: t.TempDir()})
	require.NoError(t, err)
	defer c.Close()

	o, err := Execute(ctx, Spec{Backend: "etcd", Options: map[string]string{etcdlock.OptionEndpoints: strings.Join(c.Endpoints(), ",")}, Resource: "fenced", Faults: []string{"pause"}}, Options{})
	require.NoError(t, err)
	sc, _ := Lookup("etcd-fenced-pause")
	require.Empty(t, sc.Expect.Diff(o.Report), "same verdicts as the embedded etcd-fenced-pause")
	require.Equal(t, models.Held, o.Report.Verdicts[models.Register])

	_, err = Execute(ctx, Spec{Backend: "etcd", Options: map[string]string{etcdlock.OptionEndpoints: strings.Join(c.Endpoints(), ",")}, Faults: []string{"leader-isolation"}}, Options{})
	require.ErrorIs(t, err, ErrSpec)
	require.ErrorContains(t, err, "needs a cluster fencecheck started itself")
}

func TestExternalEtcdUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens there now

	start := time.Now()
	_, err = Execute(context.Background(), Spec{Backend: "etcd", Options: map[string]string{etcdlock.OptionEndpoints: addr}}, Options{})
	require.ErrorIs(t, err, ErrSpec, "an unreachable endpoint is bad input (exit 2)")
	require.ErrorContains(t, err, addr)
	t.Logf("unreachable endpoint reported after %v", time.Since(start))
}
