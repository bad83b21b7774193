package leasetable

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/backend/pgadvisory"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/nemesis/proxy"
	"github.com/fencecheck/fencecheck/harness/proc/proctest"
	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/harnesstest"
)

// stores are the stores a behaviour test runs on: SQLite always, a private PostgreSQL
// where the Debian package is installed (else the subtest skips, naming it).
var stores = []struct {
	name string
	opts map[string]string
}{
	{StoreSQLite, nil},
	{StorePostgres, map[string]string{OptionStore: StorePostgres}},
}

// descriptor returns the registry entry called name.
func descriptor(t *testing.T, name string) registry.Backend {
	t.Helper()
	for _, d := range Descriptors() {
		if d.Name == name {
			return d
		}
	}
	t.Fatalf("no descriptor %q", name)
	return registry.Backend{}
}

// startWith starts the descriptor called name as a run would (3 clients on time.Now, a
// temporary directory, logs discarded) with opts, checks its capabilities against its
// descriptor's Shape, and closes it when t ends.
func startWith(t *testing.T, name string, ttl time.Duration, opts map[string]string) harness.Backend {
	t.Helper()
	d := descriptor(t, name)
	s := registry.Settings{TTL: ttl, Members: 1, Clients: 3, Options: opts}.WithOptions(d.Options)
	if why := d.Unavailability(s); why != "" {
		t.Skip(why)
	}
	require.NoError(t, d.CheckSettings(s))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b, err := d.Start(ctx, registry.Env{
		Settings: s, RunID: "run-leasetable-test",
		ClientClock: func(int) func() time.Time { return time.Now },
		TempDir:     func() (string, error) { return t.TempDir(), nil },
		LogFile:     func(string) (io.Writer, string, error) { return io.Discard, "", nil },
	})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	require.Empty(t, registry.ShapeDiff(d.ShapeOf(s), 1, b, nil, nil), "the descriptor's Shape is the started value's")
	return b
}

// core is the Backend inside a started value.
func core(t *testing.T, b harness.Backend) *Backend {
	t.Helper()
	c, ok := b.(interface{ core() *Backend })
	require.True(t, ok, "%T has no core Backend", b)
	return c.core()
}

// locker returns client id's locker through a fault-proxy link of its own; both are
// closed when t ends.
func locker(t *testing.T, b harness.Backend, id int) (harness.Locker, *proxy.Link) {
	t.Helper()
	l, err := proxy.New(b.Endpoints()[0])
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	lk, err := b.NewLocker(context.Background(), id, []string{l.Addr()})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, lk.Close()) })
	return lk, l
}

// havePostgres skips t without the Debian package.
func havePostgres(t *testing.T) {
	t.Helper()
	proctest.Skip(t, pgadvisory.ServerNeed)
}

// acquireAfterRestart takes the lock through a store that has just restarted: the first
// statement on a connection the crash broke may fail with an unknown outcome (it was
// sent, the answer never came), so it tries again until harnesstest.Ceiling.
func acquireAfterRestart(t *testing.T, l harness.Locker) harness.Lease {
	t.Helper()
	deadline := time.Now().Add(harnesstest.Ceiling)
	for {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		le, err := l.Acquire(ctx)
		cancel()
		if err == nil {
			return le
		}
		if time.Now().After(deadline) {
			t.Fatalf("Acquire after the restart: %v", err)
		}
		t.Logf("Acquire after the restart: %v (trying again)", err)
	}
}

// tryAcquire is one attempt of l's acquiring statement (the row exists): the fence it
// granted, or false when the row is held by someone else.
func tryAcquire(t *testing.T, l *Locker) (int64, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), harnesstest.Ceiling)
	defer cancel()
	fences, err := l.sess.Run(ctx, l.b.stmts.acquire, l.args(l.b.lock, l.by, l.b.ttl.Microseconds())...)
	require.NoError(t, err)
	require.LessOrEqual(t, len(fences), 1)
	if len(fences) == 0 {
		return 0, false
	}
	return fences[0], true
}
