package main

// The database-lock runs go against real PostgreSQL and MariaDB servers fencecheck
// starts.

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/backend/mariadblock"
	"github.com/fencecheck/fencecheck/backend/pgadvisory"
	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/harness/proc"
)

// The runs go at once, each with servers of its own; that none left a server behind is
// checked when they have all ended (the test itself is not parallel, so no other test's
// server is alive then).
func TestRunDBLocks(t *testing.T) {
	t.Run("runs", func(t *testing.T) { runDBLocks(t) })
	require.Empty(t, proc.Descendants(os.Getpid()), "a server outlived its run")
}

func runDBLocks(t *testing.T) {
	for _, tc := range []struct {
		backend, resource, fault string
		code                     int
		want                     string
		extra                    []string // more flags
	}{
		{"postgres-advisory", "unfenced", "pause", exitViolated, "result: UNSAFE", nil},
		{"postgres-advisory", "fenced", "pause", exitSafe, "result: safe", nil},
		{"postgres-advisory", "fenced", "node-pause", exitSafe, "SIGSTOP to node 0 (pid ", nil},
		{"postgres-advisory-notoken", "fenced", "pause", exitUsage, "no fencing token", nil},
		// Behind PgBouncer's transaction pooling: unsafe without any fault (every
		// client is granted the lock on the shared pooled session); fenced, the
		// register holds (exit 0 when only the register decides) while the lock
		// excludes nobody.
		{backend: pgadvisory.BouncerName, resource: "unfenced", code: exitViolated, want: "mutex     VIOLATED"},
		{backend: pgadvisory.BouncerName, resource: "fenced", code: exitSafe, want: "register  held", extra: []string{"--fail-on", "register"}},
		{backend: pgadvisory.BouncerName, resource: "fenced", fault: "pause", code: exitSafe, want: "mutex     VIOLATED", extra: []string{"--fail-on", "register,tokens"}},
		{"mariadb-lock", "unfenced", "pause", exitViolated, "result: UNSAFE", nil},
		{"mariadb-lock", "fenced", "pause", exitSafe, "result: safe", nil},
		{"mariadb-lock", "fenced", "crash", exitSafe, "SIGKILL to node 0 (pid ", nil},
		// Reused connection ids can also let the fence lose an update (exit 1): -1 takes
		// either exit.
		{"mariadb-lock-connid", "fenced", "crash", -1, "tokens    VIOLATED", nil},
		// mariadbd's clock 2x fast (libfaketime): a pause shorter than the TTL by the
		// client's clock outlives the session; a careful client is fooled too.
		{"mariadb-lock", "unfenced", "skew", exitViolated, "runs its clock 2x fast", nil},
		{"mariadb-lock", "fenced", "skew", exitSafe, "stale writes attempted 1, rejected 1, accepted 0", nil},
		{"mariadb-lock", "unfenced", "skew", exitViolated, "result: UNSAFE", []string{"--policy", "careful"}},
		{"mariadb-lock", "unfenced", "skew", exitUsage, "runs against servers given by --mariadb-lock-dsn, so it takes client-side faults only", []string{"--mariadb-lock-dsn", "root@tcp(127.0.0.1:1)/db"}},
	} {
		fault := tc.fault
		if fault == "" {
			fault = "nofault"
		}
		name := []string{tc.backend, tc.resource, fault}
		for _, a := range tc.extra {
			if strings.HasPrefix(a, "--") {
				name = append(name, strings.TrimPrefix(a, "--"))
			}
		}
		t.Run(strings.Join(name, "-"), func(t *testing.T) {
			needBackend(t, tc.backend)
			if tc.fault == "skew" && tc.code != exitUsage {
				if err := mariadblock.FaketimeAvailable(); err != nil {
					t.Skip(err)
				}
			}
			t.Parallel()
			out := t.TempDir()
			args := append([]string{"run", "--out", out, "--backend", tc.backend, "--resource", tc.resource}, tc.extra...)
			if tc.fault != "" {
				args = append(args, "--fault", tc.fault)
			}
			code, stdout, stderr := run(t, args...)
			if tc.code >= 0 {
				require.Equal(t, tc.code, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			} else {
				require.Contains(t, []int{exitSafe, exitViolated}, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			}
			require.Contains(t, stdout+stderr, tc.want)
			if code == exitUsage {
				require.Equal(t, 1, strings.Count(strings.TrimSpace(stderr), "\n")+1, "one line: %q", stderr)
				return
			}
			files, err := filepath.Glob(filepath.Join(out, "*", "2*", "history.json"))
			require.NoError(t, err)
			require.Len(t, files, 1)
			h, err := history.ReadFile(files[0])
			require.NoError(t, err)
			for _, f := range h.Faults {
				switch f.Kind {
				case "node-pause", "crash":
					require.Regexp(t, `(SIGSTOP|SIGKILL) to node 0 \(pid [1-9][0-9]*\)`, f.Detail)
				case "skew":
					require.Regexp(t, `the only server \(pid [1-9][0-9]*\) runs its clock 2x fast`, f.Detail)
				case "pause":
					if tc.fault == "skew" {
						require.NotNil(t, f.End)
						require.Less(t, *f.End-f.Start, h.Run.TTLms*int64(time.Millisecond), "the pause is shorter than the TTL")
					}
				}
			}
		})
	}
}

// Ctrl-C in the middle of a run: every server process (PostgreSQL's backends too) is
// gone when Main returns.
func TestRunDBLockInterrupted(t *testing.T) {
	for _, backend := range []string{"postgres-advisory", pgadvisory.BouncerName, "mariadb-lock"} {
		t.Run(backend, func(t *testing.T) {
			needBackend(t, backend)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			out := t.TempDir()
			done := make(chan int, 1)
			go func() {
				var o, e strings.Builder
				done <- Main(ctx, []string{"run", "--out", out, "--backend", backend, "--resource", "unfenced", "--fault", "pause", "--duration", "30s"}, &o, &e)
			}()
			// Past the server's set-up (initdb, or mariadbd's first start) and into the
			// workload, which lasts 30 s.
			waitForWorkload(t, out)
			require.NotEmpty(t, proc.Descendants(os.Getpid()), "no server started")
			cancel()
			select {
			case <-done:
			case <-time.After(60 * time.Second):
				t.Fatal("run did not return after cancel")
			}
			require.Empty(t, proc.Descendants(os.Getpid()), "a server outlived the interrupted run")
		})
	}
}

// A run on an existing server (here one the test starts): client-side faults only, and
// its started value declares what its descriptor does (no node or clock faults).
func TestRunDBLockExistingServer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		backend, option string
		start           func(ctx context.Context, dir string) (string, func() error, error)
	}{
		{"mariadb-lock", "--mariadb-lock-dsn", func(ctx context.Context, dir string) (string, func() error, error) {
			srv, err := mariadblock.Start(ctx, mariadblock.Config{TTL: time.Second, Dir: dir})
			if err != nil {
				return "", nil, err
			}
			return "root@tcp(" + srv.Endpoints()[0] + ")/fencecheck", srv.Close, nil
		}},
		{"postgres-advisory", "--postgres-lock-dsn", func(ctx context.Context, dir string) (string, func() error, error) {
			srv, err := pgadvisory.StartServer(ctx, pgadvisory.ServerConfig{Dir: dir})
			if err != nil {
				return "", nil, err
			}
			return srv.DSN(), srv.Close, nil
		}},
	} {
		t.Run(tc.backend, func(t *testing.T) {
			needBackend(t, tc.backend)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			dsn, stop, err := tc.start(ctx, t.TempDir())
			require.NoError(t, err)
			defer func() { require.NoError(t, stop()) }()
			code, stdout, stderr := run(t, "run", "--out", t.TempDir(), "--backend", tc.backend, "--resource", "unfenced", "--fault", "pause", tc.option, dsn)
			require.Equal(t, exitViolated, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			require.Contains(t, stdout, "result: UNSAFE")
			code, _, stderr = run(t, "run", "--out", t.TempDir(), "--backend", tc.backend, "--fault", "crash", tc.option, dsn)
			require.Equal(t, exitUsage, code)
			require.Contains(t, stderr, "takes client-side faults only")
		})
	}
}
