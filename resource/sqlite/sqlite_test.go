package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/fencecheck/fencecheck/resource/sqldb"
	"github.com/fencecheck/fencecheck/resource/sqldb/sqldbtest"
	"github.com/fencecheck/fencecheck/resource/sqlite"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func factory(t *testing.T, name, fence string) *sqldb.Resource {
	t.Helper()
	r, err := sqlite.New(context.Background(), sqlite.Config{Name: name, Fence: fence, Dir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close()); require.NoError(t, r.Close()) })
	return r
}

func TestNames(t *testing.T) {
	require.Equal(t, []string{"sqlite", "sqlite-direct", "sqlite-outbox", "sqlite-toctou", "sqlite-toctou-immediate", "sqlite-toctou-tx"}, sqlite.Names())
	for _, n := range sqlite.Names() {
		m, ok := sqlite.Mode(n)
		require.True(t, ok, n)
		require.Equal(t, n, sqlite.Dialect.ResourceName(m))
	}
	_, ok := sqlite.Mode("sqlite-toctou-serializable")
	require.False(t, ok, "SQLite transactions are serializable already: that is sqlite-toctou-tx")
	_, err := sqlite.New(context.Background(), sqlite.Config{Name: "sqlite-nope", Dir: t.TempDir()})
	require.ErrorContains(t, err, `unknown sqlite resource "sqlite-nope"`)
}

// SQLite is embedded: no network endpoint, except the sink the direct client calls.
func TestEndpoints(t *testing.T) {
	require.Empty(t, factory(t, "sqlite", "").Endpoints())
	require.Empty(t, factory(t, "sqlite-outbox", "").Endpoints())
	d := factory(t, "sqlite-direct", "")
	require.Equal(t, []string{d.Sink().Addr()}, d.Endpoints())
}

func TestWriteRules(t *testing.T) { sqldbtest.WriteRules(t, factory, sqlite.Names()) }

func TestTOCTOUWindow(t *testing.T) {
	for name, want := range map[string]sqldbtest.WindowOutcome{
		// Two autocommitted statements: nothing spans the window.
		"sqlite-toctou": sqldbtest.StaleAccepted,
		// A deferred transaction's read snapshot went stale: the UPDATE fails with
		// SQLITE_BUSY_SNAPSHOT, the retry's check refuses.
		"sqlite-toctou-tx": sqldbtest.StaleRejected,
		// BEGIN IMMEDIATE holds the write lock across the window.
		"sqlite-toctou-immediate": sqldbtest.NewerBlocked,
	} {
		t.Run(name, func(t *testing.T) { sqldbtest.TOCTOUWindow(t, factory(t, name, ""), want) })
	}
}

func TestEffects(t *testing.T) { sqldbtest.Effects(t, factory, "sqlite") }

// A connection holding the write lock makes writes wait; busy is retried, and a busy
// that outlasts the op is unknown, not a rejection.
func TestBusy(t *testing.T) {
	dir := t.TempDir()
	r, err := sqlite.New(context.Background(), sqlite.Config{Name: "sqlite", Dir: dir})
	require.NoError(t, err)
	defer r.Close()
	sqldbtest.Blocked(t, r, true, func(ctx context.Context, locked chan<- struct{}, release <-chan struct{}) error {
		db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, sqlite.DBFile)+"?_txlock=immediate")
		if err != nil {
			return err
		}
		defer db.Close()
		tx, err := db.BeginTx(ctx, nil) // _txlock=immediate: BEGIN IMMEDIATE takes the write lock
		if err != nil {
			return err
		}
		close(locked)
		<-release
		return tx.Rollback()
	})
}
