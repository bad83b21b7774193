package zookeeper_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/backend/zookeeper"
	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/harnesstest"
)

// The version recorded is the server's srvr report, the one its jar says; a lease's
// TTL is the session timeout the server negotiated.
func TestServerVersionAndGrantedTTL(t *testing.T) {
	b := start(t, zookeeper.Config{TTL: 2 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), harnesstest.Ceiling)
	defer cancel()
	v, err := b.ServerVersion(ctx)
	require.NoError(t, err)
	require.Equal(t, zookeeper.Descriptors()[0].VersionOf(ctx, registry.Settings{Members: 1}), v)

	le := harnesstest.Acquire(t, harnesstest.NewLocker(t, b, 0, b.Endpoints()...))
	require.Equal(t, 2*time.Second, le.TTL())
	t.Logf("srvr: %s; negotiated session timeout %v", v, le.TTL())
}
