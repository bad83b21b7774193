package redis_test

import (
	"context"
	"os/exec"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/backend/redis"
	"github.com/fencecheck/fencecheck/harnesstest"
)

// The version recorded is the server's own (INFO server), the one its binary says.
func TestServerVersion(t *testing.T) {
	b := start(t, redis.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), harnesstest.Ceiling)
	defer cancel()
	v, err := b.ServerVersion(ctx)
	require.NoError(t, err)
	out, err := exec.CommandContext(ctx, "redis-server", "--version").Output()
	require.NoError(t, err)
	m := regexp.MustCompile(`v=(\S+)`).FindSubmatch(out)
	require.NotNil(t, m, "redis-server --version: %s", out)
	require.Equal(t, "redis "+string(m[1]), v)
	t.Logf("INFO server: %s; --version: %s", v, out)
}
