package pgadvisory_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/backend/pgadvisory"
	"github.com/fencecheck/fencecheck/harness"
)

func needBouncer(t *testing.T) {
	t.Helper()
	if err := pgadvisory.BouncerAvailable(); err != nil {
		t.Skip(err)
	}
}

// connect opens a connection in the simple protocol (what works through PgBouncer's
// transaction pooling).
func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	require.NoError(t, err)
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.ConnectConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

func queryBool(t *testing.T, c *pgx.Conn, q string, args ...any) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var v bool
	require.NoError(t, c.QueryRow(ctx, q, args...).Scan(&v), q)
	return v
}

// lockedOut reports whether a session of its own on the server itself (past PgBouncer)
// is refused the lock: someone holds it. It gives the lock back when it got it.
func lockedOut(t *testing.T, b *pgadvisory.Backend) bool {
	t.Helper()
	c := connect(t, b.ServerDSN())
	defer c.Close(context.Background())
	if queryBool(t, c, "SELECT pg_try_advisory_lock($1)", b.Key()) {
		require.True(t, queryBool(t, c, "SELECT pg_advisory_unlock($1)", b.Key()))
		return false
	}
	return true
}

// Through transaction pooling every client's statements run on the one pooled server
// session, where the session lock is re-entrant: a second client is granted the lock
// the first still holds, and a client that goes away without unlocking leaves the lock
// held by the pool until PostgreSQL ends the idle pooled session.
func TestBouncerSharesTheLock(t *testing.T) {
	needBouncer(t)
	ttl := time.Second
	b := start(t, pgadvisory.Config{TTL: ttl, Bouncer: true})
	require.NotZero(t, b.BouncerPID())
	require.Equal(t, pgadvisory.BouncerName, b.Name())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	addr := b.Endpoints()[0]
	lockers := make([]harness.Locker, 3)
	for i := range lockers {
		l, err := b.NewLocker(ctx, i, []string{addr})
		require.NoError(t, err)
		lockers[i] = l
		defer l.Close()
	}
	first, err := lockers[0].Acquire(ctx)
	require.NoError(t, err)
	require.True(t, lockedOut(t, b), "a session on the server itself is refused the lock")
	t0 := time.Now()
	second, err := lockers[1].Acquire(ctx)
	require.NoError(t, err, "the second client is granted the lock the first holds")
	t.Logf("second grant in %v while the first (token %d) holds the lock; its token %d", time.Since(t0), first.Token(), second.Token())
	require.Greater(t, second.Token(), first.Token())
	select {
	case <-first.Lost():
		t.Fatal("the first lease was lost")
	default:
	}
	// Each unlock takes one level of the re-entrant lock off the shared session.
	require.NoError(t, first.Release(ctx))
	require.True(t, lockedOut(t, b), "the second client's level is still on the pooled session")
	require.NoError(t, second.Release(ctx))
	require.False(t, lockedOut(t, b), "both released: the lock is free")

	// A holder that goes away without unlocking (its lease lost, its connection to
	// PgBouncer closed) leaves the lock on the pooled session: PgBouncer keeps the
	// server connection and runs no reset query in transaction pooling.
	_, err = lockers[2].Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, lockers[2].Close())
	require.True(t, lockedOut(t, b), "the lock outlives the client's connection")
	// Another client through PgBouncer still gets it (same session, re-entrant).
	again, err := lockers[0].Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, again.Release(ctx))
	require.True(t, lockedOut(t, b), "the stranded level stays after the next holder's unlock")
	// A client that keeps its lease (a ping every TTL/3) keeps the pooled session from
	// idling, and so the stranded level with it.
	keeper, err := lockers[1].Acquire(ctx)
	require.NoError(t, err)
	time.Sleep(3 * ttl) // a negative: nothing must happen in three TTLs
	require.True(t, lockedOut(t, b), "the stranded lock lives while any client talks through PgBouncer")
	require.NoError(t, keeper.Release(ctx))
	// Only silence of every client for a TTL ends the pooled session (its
	// idle_session_timeout), and the stranded lock with it.
	t0 = time.Now()
	require.Eventually(t, func() bool { return !lockedOut(t, b) }, 30*time.Second, ttl/10,
		"idle_session_timeout of the pooled session did not free the stranded lock")
	t.Logf("stranded lock freed %v after the last statement through PgBouncer (TTL %v)", time.Since(t0), ttl)
	// PgBouncer opens a new server connection for the next client.
	l, err := lockers[1].Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))
}

// With two pooled server connections an unlock can run on the other one: PostgreSQL
// answers false (with a warning), and the lock stays held by the first connection,
// stranded, after the client has gone. The connections are steered deterministically by
// holding one in an open transaction.
func TestBouncerUnlockStrands(t *testing.T) {
	needBouncer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := pgadvisory.StartServer(ctx, pgadvisory.ServerConfig{Dir: tempDir(t)})
	require.NoError(t, err)
	defer s.Close()
	bo, err := pgadvisory.StartBouncer(ctx, s, pgadvisory.BouncerConfig{PoolSize: 2})
	require.NoError(t, err)
	defer bo.Close()
	const key = 4242
	pid := func(c *pgx.Conn) int32 {
		var p int32
		require.NoError(t, c.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&p))
		return p
	}
	hold1, hold2, client := connect(t, bo.DSN()), connect(t, bo.DSN()), connect(t, bo.DSN())
	_, err = hold1.Exec(ctx, "BEGIN")
	require.NoError(t, err)
	p1 := pid(hold1) // hold1 keeps server connection p1 until COMMIT
	var (
		p2      int32
		granted bool
	)
	require.NoError(t, client.QueryRow(ctx, "SELECT pg_backend_pid(), pg_try_advisory_lock($1)", key).Scan(&p2, &granted))
	require.True(t, granted)
	require.NotEqual(t, p1, p2)
	_, err = hold2.Exec(ctx, "BEGIN")
	require.NoError(t, err)
	require.Equal(t, p2, pid(hold2), "hold2 has the locking connection")
	_, err = hold1.Exec(ctx, "COMMIT")
	require.NoError(t, err)
	var (
		p3   int32
		held bool
	)
	require.NoError(t, client.QueryRow(ctx, "SELECT pg_backend_pid(), pg_advisory_unlock($1)", key).Scan(&p3, &held))
	require.Equal(t, p1, p3, "the unlock ran on the other server connection")
	require.False(t, held, "PostgreSQL: that session holds no such lock")
	_, err = hold2.Exec(ctx, "COMMIT")
	require.NoError(t, err)
	require.NoError(t, client.Close(ctx))
	direct := connect(t, s.DSN())
	var holder int32
	require.NoError(t, direct.QueryRow(ctx, "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objid = $1 AND granted", key).Scan(&holder))
	require.Equal(t, p2, holder, "the lock is stranded on the pooled connection that took it")
	require.False(t, queryBool(t, direct, "SELECT pg_try_advisory_lock($1)", key), "nobody else can take it")
	require.NoError(t, bo.Close())
	require.NoError(t, bo.Close())
}
