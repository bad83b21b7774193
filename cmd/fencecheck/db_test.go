package main

import (
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// etcd + SQLite under a pause exits 0 with a stale write rejected by
// the database; the check-then-write variant exits 1; the saved history re-checks alike.
func TestRunSQLite(t *testing.T) {
	for _, tc := range []struct {
		resource string
		code     int
		want     []string
	}{
		{"sqlite", exitSafe, []string{"resource=sqlite ", "the fence rejected it", "stale writes attempted 1, rejected 1, accepted 0", "result: safe"}},
		{"sqlite-toctou", exitViolated, []string{"register  VIOLATED", "it was ACCEPTED", "result: UNSAFE"}},
	} {
		t.Run(tc.resource, func(t *testing.T) {
			t.Parallel()
			out := t.TempDir()
			code, stdout, stderr := run(t, "run", "--out", out, "--backend", "etcd", "--resource", tc.resource, "--fault", "pause")
			require.Equal(t, tc.code, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			for _, w := range tc.want {
				require.Contains(t, stdout, w)
			}
			files, err := filepath.Glob(filepath.Join(out, "*", "*", "history.json"))
			require.NoError(t, err)
			require.NotEmpty(t, files)
			code, stdout, _ = run(t, "check", files[0])
			require.Equal(t, tc.code, code, stdout)
		})
	}
}

// A database that cannot be used is one clear line and exit 2, within seconds, without
// the password.
func TestRunBadDatabase(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := ln.Addr().String()
	require.NoError(t, ln.Close())
	t.Setenv("FENCECHECK_POSTGRES_DSN", "")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unreachable", []string{"--resource", "postgres", "--postgres-dsn", "postgres://u:sekrit@" + closed + "/db?sslmode=disable"}, "cannot connect to PostgreSQL at " + closed},
		{"bad dsn", []string{"--resource", "postgres-outbox", "--postgres-dsn", "postgres://u:sekrit@127.0.0.1:x/db"}, "bad PostgreSQL DSN"},
		{"no dsn", []string{"--resource", "postgres-toctou"}, "no PostgreSQL server configured (--postgres-dsn"},
		{"sqlite delay", []string{"--resource", "sqlite", "--fault", "delay"}, "no network between the client and SQLite"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			out := t.TempDir()
			code, stdout, stderr := run(t, append([]string{"run", "--out", out}, tc.args...)...)
			require.Equal(t, exitUsage, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			require.Contains(t, stderr, tc.want)
			require.NotContains(t, stderr+stdout, "sekrit")
			require.Less(t, time.Since(start), 5*time.Second)
		})
	}
}

// The postgres resources take the server from --postgres-dsn or the environment.
func TestRunPostgres(t *testing.T) {
	dsn := os.Getenv("FENCECHECK_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("no PostgreSQL server configured: set FENCECHECK_POSTGRES_DSN (.ci/run does)")
	}
	out := t.TempDir()
	code, stdout, stderr := run(t, "run", "--out", out, "--resource", "postgres-direct", "--fault", "pause", "--postgres-dsn", dsn)
	require.Equal(t, exitSafe, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	require.Contains(t, stdout, "effects   VIOLATED")
	require.Contains(t, stdout, "escaped the fence")
}
