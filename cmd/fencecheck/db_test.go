package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/harness/proc/proctest"

	"github.com/fencecheck/fencecheck/backend/pgadvisory"
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
	closed := proctest.DeadAddr(t)
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

// A PostgreSQL that answers and refuses the user (a wrong password, a role that does not
// exist) is named as such, with the server and the user and never the password, by each
// command that takes a DSN: exit 2, one line, not "no PostgreSQL server answers".
func TestRunWrongDatabasePassword(t *testing.T) {
	t.Parallel()
	needBackend(t, "postgres-advisory")
	// Password authentication for everyone but the superuser the test sets up with.
	hbaDir, err := os.MkdirTemp("", "fencecheck-hba-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(hbaDir) })
	require.NoError(t, os.Chmod(hbaDir, 0o755)) // the server may run as the postgres user
	hba := filepath.Join(hbaDir, "pg_hba.conf")
	require.NoError(t, os.WriteFile(hba, []byte("host all postgres 127.0.0.1/32 trust\nhost all all 127.0.0.1/32 scram-sha-256\n"), 0o644))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv, err := pgadvisory.StartServer(ctx, pgadvisory.ServerConfig{Dir: t.TempDir(), Settings: []string{"hba_file=" + hba}})
	require.NoError(t, err)
	defer func() { require.NoError(t, srv.Close()) }()
	admin, err := pgx.Connect(ctx, srv.DSN())
	require.NoError(t, err)
	_, err = admin.Exec(ctx, "CREATE ROLE app LOGIN PASSWORD 'right-horse-battery'")
	require.NoError(t, admin.Close(ctx))
	require.NoError(t, err)

	const password = "Tr0ub4dor-wrong"
	for _, user := range []string{"app", "ghost"} {
		dsn := "postgres://" + user + ":" + password + "@" + srv.Addr() + "/postgres?sslmode=disable"
		want := "PostgreSQL at " + srv.Addr() + " refused user " + user + ": wrong password or no such user"
		for _, args := range [][]string{
			{"--backend", "postgres-advisory", "--postgres-lock-dsn", dsn},
			{"--backend", "lease-table", "--lease-table-dsn", dsn},
			{"--resource", "postgres", "--postgres-dsn", dsn},
		} {
			code, stdout, stderr := run(t, append([]string{"run", "--out", t.TempDir()}, args...)...)
			require.Equal(t, exitUsage, code, "%v\nstdout:\n%s\nstderr:\n%s", args, stdout, stderr)
			require.Contains(t, stderr, want, args)
			require.NotContains(t, stderr, "answers", args)
			require.NotContains(t, stdout+stderr, password, args)
			require.Equal(t, 1, strings.Count(strings.TrimSpace(stderr), "\n")+1, "one line: %s", stderr)
		}
	}
}
