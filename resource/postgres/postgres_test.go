package postgres_test

import (
	"context"
	"database/sql"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/harness/proc/proctest"
	"go.uber.org/goleak"

	"github.com/fencecheck/fencecheck/harness/nemesis/proxy"
	"github.com/fencecheck/fencecheck/resource/postgres"
	"github.com/fencecheck/fencecheck/resource/sqldb"
	"github.com/fencecheck/fencecheck/resource/sqldb/sqldbtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// dsn returns the configured server's DSN, or skips the test.
func dsn(t *testing.T) string {
	t.Helper()
	d := os.Getenv(postgres.EnvDSN)
	if d == "" {
		t.Skipf("no PostgreSQL server configured: set %s (e.g. postgres://user:password@127.0.0.1:5432/db) to run this test; .ci/run does", postgres.EnvDSN)
	}
	return d
}

func factory(t *testing.T, name, fence string) *sqldb.Resource {
	t.Helper()
	r, err := postgres.New(context.Background(), postgres.Config{Name: name, Fence: fence, DSN: dsn(t)})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close()); require.NoError(t, r.Close()) })
	return r
}

func TestNames(t *testing.T) {
	require.Equal(t, []string{"postgres", "postgres-direct", "postgres-outbox", "postgres-toctou", "postgres-toctou-forupdate", "postgres-toctou-serializable", "postgres-toctou-tx"}, postgres.Names())
	for _, n := range postgres.Names() {
		m, ok := postgres.Mode(n)
		require.True(t, ok, n)
		require.Equal(t, n, postgres.Dialect.ResourceName(m))
	}
}

// Configuration problems are one clear error, fast, without the password.
func TestBadConfig(t *testing.T) {
	// A port nothing listens on.
	closed := proctest.DeadAddr(t)
	for _, tc := range []struct{ name, dsn, want string }{
		{"empty", "", "no PostgreSQL server configured"},
		{"garbage", "postgres://u:sekrit@127.0.0.1:notaport/db", "bad PostgreSQL DSN"},
		{"unix socket", "host=/var/run/postgresql user=u password=sekrit dbname=db", "Unix socket"},
		{"two hosts", "postgres://u:sekrit@127.0.0.1:5432,127.0.0.2:5433/db", "several hosts"},
		{"unreachable", "postgres://u:sekrit@" + closed + "/db?sslmode=disable", "cannot connect to PostgreSQL at " + closed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, err := postgres.New(context.Background(), postgres.Config{Name: "postgres", DSN: tc.dsn})
			require.ErrorIs(t, err, postgres.ErrUnavailable)
			require.ErrorContains(t, err, tc.want)
			require.NotContains(t, err.Error(), "sekrit")
			require.Less(t, time.Since(start), 6*time.Second)
		})
	}
}

func TestBadPassword(t *testing.T) {
	cfg, _, err := postgres.ParseDSN(dsn(t))
	require.NoError(t, err)
	u := "postgres://" + cfg.User + ":definitely-wrong-sekrit@" + net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))) + "/" + cfg.Database + "?sslmode=disable"
	start := time.Now()
	_, err = postgres.New(context.Background(), postgres.Config{Name: "postgres", DSN: u})
	require.ErrorIs(t, err, postgres.ErrUnavailable)
	require.NotContains(t, err.Error(), "sekrit")
	require.Contains(t, err.Error(), "password authentication failed")
	require.Less(t, time.Since(start), 6*time.Second)
}

func TestWriteRules(t *testing.T) {
	dsn(t)
	sqldbtest.WriteRules(t, factory, postgres.Names())
}

func TestTOCTOUWindow(t *testing.T) {
	dsn(t)
	for name, want := range map[string]sqldbtest.WindowOutcome{
		"postgres-toctou": sqldbtest.StaleAccepted,
		// READ COMMITTED: the UPDATE sees the newer committed row and overwrites it.
		"postgres-toctou-tx": sqldbtest.StaleAccepted,
		// SERIALIZABLE: "could not serialize access due to concurrent update" (40001);
		// the retry's check refuses.
		"postgres-toctou-serializable": sqldbtest.StaleRejected,
		// FOR UPDATE holds the row lock across the window.
		"postgres-toctou-forupdate": sqldbtest.NewerBlocked,
	} {
		t.Run(name, func(t *testing.T) { sqldbtest.TOCTOUWindow(t, factory(t, name, ""), want) })
	}
}

func TestEffects(t *testing.T) {
	dsn(t)
	sqldbtest.Effects(t, factory, "postgres")
}

// Another transaction holding the run's row makes a fenced write wait; a write whose op
// ends while it waits is an error, never a rejection.
func TestBlocked(t *testing.T) {
	r := factory(t, "postgres", "")
	sqldbtest.Blocked(t, r, false, func(ctx context.Context, locked chan<- struct{}, release <-chan struct{}) error {
		db, err := sql.Open("pgx", dsn(t))
		if err != nil {
			return err
		}
		defer db.Close()
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "SELECT token FROM fencecheck_register WHERE key = $1 FOR UPDATE", r.Key()); err != nil {
			return err
		}
		close(locked)
		<-release
		return tx.Rollback()
	})
}

// Clients reach the server through their proxied address: a stalled link holds the
// write, and it lands (late) when the link passes again.
func TestThroughProxy(t *testing.T) {
	r := factory(t, "postgres", "")
	require.Len(t, r.Endpoints(), 1)
	link, err := proxy.New(r.Endpoints()[0])
	require.NoError(t, err)
	defer link.Close()
	c, err := r.NewClient(context.Background(), 0, []string{link.Addr()}, nil)
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), sqldbtest.Patience)
	defer cancel()
	_, _, err = c.Read(ctx)
	require.NoError(t, err)
	link.Stall()
	done := make(chan bool, 1)
	go func() {
		ok, err := c.Write(ctx, sqldbtest.Lease(7), "late")
		require.NoError(t, err)
		done <- ok
	}()
	// A window in which the write must not go through (load only lengthens it).
	select {
	case <-done:
		t.Fatal("the write went through a stalled link")
	case <-time.After(300 * time.Millisecond):
	}
	_, tok, err := r.State(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(0), tok, "the held write must not have reached the server")
	link.Pass()
	require.True(t, <-done)
	require.Positive(t, link.Stats().BytesToTarget)
}

// The run's rows are removed at Close, so runs can share a database.
func TestRowsRemoved(t *testing.T) {
	r, err := postgres.New(context.Background(), postgres.Config{Name: "postgres-outbox", DSN: dsn(t)})
	require.NoError(t, err)
	key := r.Key()
	require.True(t, strings.HasPrefix(key, "run-"))
	require.NoError(t, r.Close())
	db, err := sql.Open("pgx", dsn(t))
	require.NoError(t, err)
	defer db.Close()
	var n int
	require.NoError(t, db.QueryRow("SELECT count(*) FROM fencecheck_register WHERE key = $1", key).Scan(&n))
	require.Zero(t, n)
}
