package mariadblock_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/backend/mariadblock"
	"github.com/fencecheck/fencecheck/backend/sqlsession/sqlsessiontest"
	"github.com/fencecheck/fencecheck/harness/proc"
	"github.com/fencecheck/fencecheck/harnesstest"
)

func start(t *testing.T, cfg mariadblock.Config) *mariadblock.Backend {
	t.Helper()
	if err := mariadblock.Available(); err != nil {
		t.Skip(err)
	}
	if cfg.DSN == "" {
		cfg.Dir = t.TempDir()
	}
	return sqlsessiontest.Start(t, func(ctx context.Context) (*mariadblock.Backend, error) { return mariadblock.Start(ctx, cfg) })
}

func TestBackend(t *testing.T) {
	b := start(t, mariadblock.Config{TTL: time.Second})
	t.Run("mutual exclusion, counter tokens increase", func(t *testing.T) {
		sqlsessiontest.MutualExclusion(t, b, 20, true)
	})
	t.Run("lost on a stalled client", func(t *testing.T) { sqlsessiontest.LostOnStall(t, b) })
	t.Run("close twice", func(t *testing.T) { sqlsessiontest.CloseTwice(t, b) })
	dsn := "root@tcp(" + b.Endpoints()[0] + ")/fencecheck"
	t.Run("connection ids, external DSN", func(t *testing.T) {
		c := start(t, mariadblock.Config{TTL: time.Second, Token: mariadblock.TokenConnID, DSN: dsn})
		require.Zero(t, c.Nodes(), "an external server takes no node faults")
		require.Error(t, c.Crash(context.Background(), 0))
		// Not in grant order under contention: an id is given when the session
		// connects, and a waiting session connected before the grants it waits out.
		sqlsessiontest.MutualExclusion(t, c, 10, false)
		// One client after another, they grow.
		a, b := sqlsessiontest.Grant(t, c), sqlsessiontest.Grant(t, c)
		require.Greater(t, b, a)
	})
	t.Run("no token: grants in the order seen", func(t *testing.T) {
		n := start(t, mariadblock.Config{TTL: time.Second, Token: mariadblock.TokenNone, DSN: dsn})
		sqlsessiontest.MutualExclusion(t, n, 4, false)
	})
	require.NoError(t, b.Close())
	require.NoError(t, b.Close())
}

// The contract suite on the counter descriptor, started as a run starts it, and on the
// connection-id one, whose declared token reset after a restart the suite checks.
func TestDescriptorContract(t *testing.T) {
	if err := mariadblock.Available(); err != nil {
		t.Skip(err)
	}
	for _, d := range mariadblock.Descriptors()[:2] {
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel() // each starts servers of its own
			harnesstest.Descriptor(t, d)
		})
	}
}

// TestNodeFaults: SIGSTOP and SIGKILL end the holder's lease; across the crash the
// counter goes on increasing and the connection id starts again near 1.
func TestNodeFaults(t *testing.T) {
	b := start(t, mariadblock.Config{TTL: time.Second})
	c := start(t, mariadblock.Config{TTL: time.Second, Token: mariadblock.TokenConnID, DSN: "root@tcp(" + b.Endpoints()[0] + ")/fencecheck"})
	for range 5 {
		sqlsessiontest.Grant(t, c)
	}
	counterBefore, idBefore := sqlsessiontest.Grant(t, b), sqlsessiontest.Grant(t, c)
	sqlsessiontest.LostOnNodeFault(t, b)
	counterAfter, idAfter := sqlsessiontest.Grant(t, b), sqlsessiontest.Grant(t, c)
	t.Logf("counter %d -> %d, connection id %d -> %d across the crash", counterBefore, counterAfter, idBefore, idAfter)
	require.Greater(t, counterAfter, counterBefore, "InnoDB keeps the counter across a crash")
	require.Less(t, idAfter, idBefore, "connection ids start again after a restart")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.NoError(t, b.Crash(ctx, 0))
	require.NoError(t, b.Restart(ctx, 0, false))
	require.Less(t, sqlsessiontest.Grant(t, b), counterAfter, "an empty data dir starts the counter again")
}

func TestStartErrors(t *testing.T) {
	if err := mariadblock.Available(); err != nil {
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
		cfg  mariadblock.Config
		want string
	}{
		{"sub-second ttl", mariadblock.Config{TTL: 500 * time.Millisecond, Dir: "x"}, "whole seconds"},
		{"bad token", mariadblock.Config{TTL: time.Second, Dir: "x", Token: "uuid"}, "token must be"},
		{"no dir", mariadblock.Config{TTL: time.Second}, "Dir is required"},
		{"unix dsn", mariadblock.Config{TTL: time.Second, DSN: "root@unix(/run/mysqld/mysqld.sock)/db"}, "needs tcp(host:port)"},
		{"no database", mariadblock.Config{TTL: time.Second, DSN: "root@tcp(127.0.0.1:3306)/"}, "names no database"},
		{"nothing at the dsn", mariadblock.Config{TTL: time.Second, DSN: "root@tcp(127.0.0.1:1)/db"}, "no MariaDB server answers at 127.0.0.1:1"},
		{"port in use", mariadblock.Config{TTL: time.Second, Port: busy}, "exited before it was ready"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.cfg.Port != 0 {
				tc.cfg.Dir = t.TempDir()
			}
			b, err := mariadblock.Start(ctx, tc.cfg)
			require.Error(t, err)
			require.Nil(t, b)
			require.Contains(t, err.Error(), tc.want)
			require.NotContains(t, err.Error(), "\n", "one line")
		})
	}
	_, err = mariadblock.StartServer(ctx, mariadblock.ServerConfig{Dir: t.TempDir(), Binary: "/nonexistent/mariadbd"})
	require.ErrorIs(t, err, proc.ErrNotFound)
	require.Contains(t, err.Error(), "mariadb-server")
}
