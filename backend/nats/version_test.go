package nats_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/backend/nats"
	"github.com/fencecheck/fencecheck/harnesstest"
)

// The version recorded is the server's INFO, the one its binary says; a lease's TTL is
// the bucket's MaxAge as the server reports it.
func TestServerVersionAndGrantedTTL(t *testing.T) {
	b := start(t, nats.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), harnesstest.Ceiling)
	defer cancel()
	v, err := b.ServerVersion(ctx)
	require.NoError(t, err)
	out, err := exec.CommandContext(ctx, "nats-server", "--version").Output()
	require.NoError(t, err)
	require.Equal(t, strings.TrimSpace(string(out)), v)

	nc, err := natsgo.Connect("nats://" + b.Endpoints()[0])
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	kv, err := js.KeyValue(ctx, nats.DefaultBucket)
	require.NoError(t, err)
	st, err := kv.Status(ctx)
	require.NoError(t, err)

	le := harnesstest.Acquire(t, harnesstest.NewLocker(t, b, 0, b.Endpoints()[0]))
	require.Equal(t, st.TTL(), le.TTL(), "the lease's TTL is the bucket's")
	t.Logf("INFO: %s; bucket TTL %v", v, st.TTL())
}
