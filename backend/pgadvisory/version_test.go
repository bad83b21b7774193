package pgadvisory_test

import (
	"context"
	"os/exec"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/backend/pgadvisory"
	"github.com/fencecheck/fencecheck/harnesstest"
)

// The version recorded is the server's own (SHOW server_version), the one its binary
// says; the session timeouts are the server's settings (the defaults of a started one).
func TestServerVersionAndSessionTimeouts(t *testing.T) {
	b := start(t, pgadvisory.Config{TTL: time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), harnesstest.Ceiling)
	defer cancel()
	v, err := b.ServerVersion(ctx)
	require.NoError(t, err)
	bin, err := pgadvisory.ServerNeed.Find()
	require.NoError(t, err)
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	require.NoError(t, err)
	m := regexp.MustCompile(`\(PostgreSQL\) (\S+)`).FindSubmatch(out)
	require.NotNil(t, m, "postgres --version: %s", out)
	require.Regexp(t, `^PostgreSQL `+regexp.QuoteMeta(string(m[1]))+`\b`, v)

	st, err := b.SessionTimeouts(ctx)
	require.NoError(t, err)
	require.Equal(t, "0", st["idle_session_timeout"], "a started server keeps the default: no idle session ends")
	t.Logf("server: %s; session timeouts: %v", v, st)
}
