package mariadblock_test

import (
	"context"
	"os/exec"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/backend/mariadblock"
	"github.com/fencecheck/fencecheck/harnesstest"
)

// The version recorded is the server's own (SELECT VERSION()), the one its binary says;
// the session timeouts are the server's (a started one keeps wait_timeout's 8 h default).
func TestServerVersionAndSessionTimeouts(t *testing.T) {
	b := start(t, mariadblock.Config{TTL: time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), harnesstest.Ceiling)
	defer cancel()
	v, err := b.ServerVersion(ctx)
	require.NoError(t, err)
	bin, err := mariadblock.ServerNeed.Find()
	require.NoError(t, err)
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	require.NoError(t, err)
	m := regexp.MustCompile(`Ver (\S+)`).FindSubmatch(out)
	require.NotNil(t, m, "mariadbd --version: %s", out)
	require.Equal(t, "MariaDB "+string(m[1]), v)

	st, err := b.SessionTimeouts(ctx)
	require.NoError(t, err)
	require.Equal(t, "28800", st["wait_timeout"])
	t.Logf("server: %s; session timeouts: %v", v, st)
}
