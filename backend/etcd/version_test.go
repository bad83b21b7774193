package etcd_test

import (
	"context"
	"os/exec"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/backend/etcd"
	"github.com/fencecheck/fencecheck/backend/etcd/etcdtest"
	"github.com/fencecheck/fencecheck/harnesstest"
)

// An external server's version is asked over its own protocol (Maintenance Status)
// and is the one its binary says; a lease's TTL is the one the server granted.
func TestExternalServerVersionAndGrantedTTL(t *testing.T) {
	x := etcdtest.StartExternal(t)
	ctx, cancel := context.WithTimeout(context.Background(), harnesstest.Ceiling)
	defer cancel()
	b, err := etcd.New(ctx, etcd.Config{Endpoints: []string{x.Endpoint}, TTL: 2 * time.Second, Prefix: etcd.RunPrefix("run-versiontest")})
	require.NoError(t, err)
	defer func() { require.NoError(t, b.Close()) }()
	v, err := b.ServerVersion(ctx)
	require.NoError(t, err)
	out, err := exec.CommandContext(ctx, "etcd", "--version").Output()
	require.NoError(t, err)
	m := regexp.MustCompile(`etcd Version: (\S+)`).FindSubmatch(out)
	require.NotNil(t, m, "etcd --version: %s", out)
	require.Equal(t, "etcd "+string(m[1]), v)

	le := harnesstest.Acquire(t, harnesstest.NewLocker(t, b, 0, x.Endpoint))
	require.Equal(t, 2*time.Second, le.TTL(), "the server grants 2 s (its least TTL is 2 s)")
	t.Logf("Status: %s; lease TTL %v", v, le.TTL())
}
