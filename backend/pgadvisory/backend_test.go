package pgadvisory_test

import (
	"bufio"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/backend/pgadvisory"
	"github.com/fencecheck/fencecheck/backend/sqlsession/sqlsessiontest"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/proc"
	"github.com/fencecheck/fencecheck/harnesstest"
)

// tempDir is the test's data directory (as root, StartServer moves the cluster to a
// directory the postgres user can reach: t.TempDir's parent is 0700).
func tempDir(t *testing.T) string { return t.TempDir() }

func start(t *testing.T, cfg pgadvisory.Config) *pgadvisory.Backend {
	t.Helper()
	if err := pgadvisory.Available(); err != nil {
		t.Skip(err)
	}
	if cfg.DSN == "" {
		cfg.Dir = tempDir(t)
	}
	return sqlsessiontest.Start(t, func(ctx context.Context) (*pgadvisory.Backend, error) { return pgadvisory.Start(ctx, cfg) })
}

func TestBackend(t *testing.T) {
	b := start(t, pgadvisory.Config{TTL: time.Second})
	t.Run("mutual exclusion, sequence tokens increase", func(t *testing.T) {
		sqlsessiontest.MutualExclusion(t, b, 20, true)
	})
	t.Run("lost on a stalled client", func(t *testing.T) { sqlsessiontest.LostOnStall(t, b) })
	t.Run("close twice", func(t *testing.T) { sqlsessiontest.CloseTwice(t, b) })
	// The other token options, as external servers (by DSN) on the same cluster.
	dsn := "postgres://postgres@" + b.Endpoints()[0] + "/postgres?sslmode=disable"
	t.Run("xact tokens increase, external DSN", func(t *testing.T) {
		x := start(t, pgadvisory.Config{TTL: time.Second, Token: pgadvisory.TokenXact, DSN: dsn})
		require.Zero(t, x.Nodes(), "an external server takes no node faults")
		require.Error(t, x.PauseNode(context.Background(), 0))
		sqlsessiontest.MutualExclusion(t, x, 10, true)
	})
	t.Run("no token: grants in the order seen", func(t *testing.T) {
		n := start(t, pgadvisory.Config{TTL: time.Second, Token: pgadvisory.TokenNone, DSN: dsn})
		sqlsessiontest.MutualExclusion(t, n, 4, false)
	})
	require.NoError(t, b.Close())
	require.NoError(t, b.Close())
}

// The contract suite on the sequence descriptor, started as a run starts it, and on the
// xact one, whose declared token reset after a crash the suite checks really happens.
func TestDescriptorContract(t *testing.T) {
	if err := pgadvisory.Available(); err != nil {
		t.Skip(err)
	}
	for _, d := range pgadvisory.Descriptors()[:2] {
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel() // each starts servers of its own
			harnesstest.Descriptor(t, d)
		})
	}
}

func TestNodeFaults(t *testing.T) {
	b := start(t, pgadvisory.Config{TTL: 500 * time.Millisecond})
	var _ harness.ProcessNodes = b
	before := sqlsessiontest.Grant(t, b)
	sqlsessiontest.LostOnNodeFault(t, b)
	after := sqlsessiontest.Grant(t, b)
	require.Greater(t, after, before, "the sequence goes on after crash recovery")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.NoError(t, b.Crash(ctx, 0))
	require.NoError(t, b.Restart(ctx, 0, false))
	require.Less(t, sqlsessiontest.Grant(t, b), after, "a fresh cluster starts its sequence again")
}

func TestStartErrors(t *testing.T) {
	if err := pgadvisory.Available(); err != nil {
		t.Skip(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	busy := ln.Addr().(*net.TCPAddr).Port
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name string
		cfg  pgadvisory.Config
		want string
	}{
		{"bad ttl", pgadvisory.Config{TTL: time.Millisecond, Dir: "x"}, "at least 100ms"},
		{"bad token", pgadvisory.Config{TTL: time.Second, Dir: "x", Token: "pid"}, "token must be"},
		{"no dir", pgadvisory.Config{TTL: time.Second}, "Dir is required"},
		{"socket dsn", pgadvisory.Config{TTL: time.Second, DSN: "host=/run/postgresql"}, "Unix socket"},
		{"nothing at the dsn", pgadvisory.Config{TTL: time.Second, DSN: "postgres://u@127.0.0.1:1/db?connect_timeout=2"}, "no PostgreSQL server answers at 127.0.0.1:1"},
		{"port in use", pgadvisory.Config{TTL: time.Second, Port: busy}, "exited before it was ready"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.cfg.Dir == "" && tc.cfg.DSN == "" && tc.cfg.Port != 0 {
				tc.cfg.Dir = tempDir(t)
			}
			b, err := pgadvisory.Start(ctx, tc.cfg)
			require.Error(t, err)
			require.Nil(t, b)
			require.Contains(t, err.Error(), tc.want)
			require.NotContains(t, err.Error(), "\n", "one line")
		})
	}
	_, err = pgadvisory.StartServer(ctx, pgadvisory.ServerConfig{Dir: t.TempDir(), BinDir: "/nonexistent"})
	require.ErrorIs(t, err, proc.ErrNotFound)
	require.True(t, strings.Contains(err.Error(), "postgresql"), err.Error())
}

// A SIGKILL of the process that started the server (fencecheck) takes the server with
// it, also when it runs as the postgres user (changing uid clears the die-with-parent
// signal; setpriv sets it again).
func TestServerDiesWithFencecheck(t *testing.T) {
	if err := pgadvisory.Available(); err != nil {
		t.Skip(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+t.TempDir())
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err, "the helper printed nothing")
	pidText, dir, ok := strings.Cut(strings.TrimSpace(line), " ")
	require.True(t, ok, "helper: %s", line)
	pid, err := strconv.Atoi(pidText)
	require.NoError(t, err, "helper: %s", line)
	// The killed helper cannot remove a cluster it made under the system temp dir.
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
		return err != nil || strings.Contains(string(b), ") Z ")
	}, 30*time.Second, 20*time.Millisecond, "postgres (pid %d) outlived the process that started it", pid)
}
