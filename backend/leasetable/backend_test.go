package leasetable

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/harnesstest"
)

const testTTL = time.Second

// The holder keeps the lock past its TTL by renewing; every grant bumps the fence by
// exactly one; a second release has no effect.
func TestExclusionAndTokens(t *testing.T) {
	for _, st := range stores {
		for _, name := range []string{Name, NameClientTime} {
			t.Run(st.name+"/"+name, func(t *testing.T) {
				t.Parallel() // each starts its own store
				b := startWith(t, name, testTTL, st.opts)
				a, _ := locker(t, b, 0)
				c, _ := locker(t, b, 1)
				le := harnesstest.Acquire(t, a)
				harnesstest.HeldAgainst(t, le, c, 3*testTTL)
				harnesstest.ReleaseOnce(t, le)
				prev := le.Token()
				for i := range 6 {
					l := harnesstest.Acquire(t, []harness.Locker{a, c}[i%2])
					require.Equal(t, prev+1, l.Token(), "grant %d: the fence goes up by one per grant", i+1)
					prev = l.Token()
					require.NoError(t, l.Release(context.Background()))
				}
			})
		}
	}
}

// A holder that goes silent loses the lock once its lease has ended by its own clock
// (not before: no clock is skewed), the next grant has a greater token, and the holder
// notices (Lost) and cannot release what it no longer holds.
func TestTakeoverAfterExpiry(t *testing.T) {
	for _, st := range stores {
		for _, name := range []string{Name, NameClientTime} {
			t.Run(st.name+"/"+name, func(t *testing.T) {
				t.Parallel() // each starts its own store
				b := startWith(t, name, testTTL, st.opts)
				a, alink := locker(t, b, 0)
				c, _ := locker(t, b, 1)
				held := harnesstest.Acquire(t, a)
				alink.Stall()
				next := harnesstest.Acquire(t, c)
				took := time.Now()
				validA := held.(harness.Expiring).ValidUntil()
				require.False(t, took.Before(validA), "client 1 got the lock at %v, before the holder's lease ended by its clock (%v)", took, validA)
				require.Greater(t, next.Token(), held.Token())
				alink.Pass()
				harnesstest.WaitClosed(t, held.Lost(), "the old holder's Lost")
				require.ErrorIs(t, held.Release(context.Background()), harness.ErrNoEffect)
				harnesstest.ReleaseOnce(t, next)
			})
		}
	}
}

// Client time: the client next in line to take the lock has a clock that runs ahead
// (the skew fault's clock: ServiceClock names it), and takes the lock while the holder
// still holds it by its own clock and keeps renewing. Database time: the same client
// clock changes nothing; only the database's clock decides, and only SQLite's is
// fencecheck's to move.
func TestSkew(t *testing.T) {
	const ttl = 2 * time.Second // a holder renews every TTL/3: its lease is well inside its validity
	for _, st := range stores {
		t.Run(st.name+"/client-time", func(t *testing.T) {
			t.Parallel() // each starts its own store
			b := startWith(t, NameClientTime, ttl, st.opts)
			a, _ := locker(t, b, 0)
			c, _ := locker(t, b, 1)
			held := harnesstest.Acquire(t, a)
			sc, ok := b.(registry.ServiceClocked)
			require.True(t, ok, "the client-time variant's deciding clock is a client's: ServiceClocked")
			target, clock, err := sc.ServiceClock(context.Background())
			require.NoError(t, err)
			require.Equal(t, "client-1", target, "the clock to skew is the next taker's, not the holder's")
			clock.Jump(10 * ttl)
			next := harnesstest.Acquire(t, c)
			validA := held.(harness.Expiring).ValidUntil()
			require.True(t, time.Now().Before(validA), "client 1 took the lock while the holder held it until %v by its own clock", validA)
			require.Greater(t, next.Token(), held.Token(), "the fence still orders the two grants")
			harnesstest.WaitClosed(t, held.Lost(), "the overtaken holder's Lost (its renewal is refused)")
			require.NoError(t, next.Release(context.Background()))
		})
		t.Run(st.name+"/database-time", func(t *testing.T) {
			t.Parallel() // each starts its own store
			b := startWith(t, Name, ttl, st.opts)
			a, _ := locker(t, b, 0)
			c, _ := locker(t, b, 1)
			held := harnesstest.Acquire(t, a)
			core(t, b).driftOf(1).Jump(10 * ttl)
			harnesstest.HeldAgainst(t, held, c, 2*ttl) // a client's clock decides nothing
			sc, ok := b.(registry.ServiceClocked)
			if st.name == StorePostgres {
				require.False(t, ok, "PostgreSQL's now() is its server's clock, which fencecheck does not own")
				return
			}
			require.True(t, ok, "SQLite's now() is fencecheck's function on the database's clock")
			target, clock, err := sc.ServiceClock(context.Background())
			require.NoError(t, err)
			require.Equal(t, "database", target)
			// The holder stops renewing, as the skew fault's pause makes it, and no
			// renewal is left in flight: one forwarded just before a stall would run
			// after the jump and set lock_until by the jumped clock too (each statement
			// reads the database's now()), and the taker would then wait out a whole
			// TTL. Stop returns once the last attempt has been answered.
			a.(*Locker).leases.Stop(held.(*Lease).Keeper)
			cl := c.(*Locker)
			_, ok = tryAcquire(t, cl)
			require.False(t, ok, "before the jump the holder's row still holds the lock")
			clock.Jump(10 * ttl)
			start := cl.now()
			fence, ok := tryAcquire(t, cl)
			require.True(t, ok, "right after the jump one attempt takes the lock: the database's clock decided")
			validA := held.(harness.Expiring).ValidUntil()
			require.True(t, time.Now().Before(validA), "a database clock ahead ends the holder's lease early: client 1 took it while the holder held it until %v", validA)
			require.Greater(t, fence, held.Token())
			next := cl.newLease(fence, start)
			require.NoError(t, next.Release(context.Background()))
		})
	}
}

// A crash keeps the row: a silent holder's lease still runs out on its own time after
// the restart, and the fence goes on from where it was. A wipe loses the row, and the
// fence starts again at 1 (these backends do not claim to survive one).
func TestCrash(t *testing.T) {
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel() // each starts its own store
			b := startWith(t, Name, testTTL, st.opts)
			cr, ok := b.(harness.Crasher)
			require.True(t, ok)
			a, alink := locker(t, b, 0)
			c, _ := locker(t, b, 1)
			held := harnesstest.Acquire(t, a)
			alink.Stall() // a paused holder: no renewal across the crash
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			require.NoError(t, cr.Crash(ctx, 0))
			require.NoError(t, cr.Restart(ctx, 0, true))
			next := acquireAfterRestart(t, c)
			validA := held.(harness.Expiring).ValidUntil()
			require.False(t, time.Now().Before(validA), "the crash freed the lock before the holder's lease ended (%v)", validA)
			require.Greater(t, next.Token(), held.Token(), "the fence survives a crash with the data")
			require.NoError(t, next.Release(ctx))
			alink.Pass()

			require.NoError(t, cr.Crash(ctx, 0))
			require.NoError(t, cr.Restart(ctx, 0, false))
			fresh := acquireAfterRestart(t, c)
			require.Equal(t, int64(1), fresh.Token(), "a wiped store starts the fence again")
			require.NoError(t, fresh.Release(ctx))
		})
	}
}

// An existing PostgreSQL (here: a private one, given by DSN) is External: client-side
// faults only; the run's row is removed when the backend closes.
func TestExternalDSN(t *testing.T) {
	havePostgres(t)
	priv := startWith(t, Name, testTTL, map[string]string{OptionStore: StorePostgres})
	dsn := "postgres://postgres@" + priv.Endpoints()[0] + "/postgres?sslmode=disable"
	for _, name := range []string{Name, NameClientTime} {
		t.Run(name, func(t *testing.T) {
			b := startWith(t, name, testTTL, map[string]string{OptionDSN: dsn})
			require.Implements(t, (*harness.External)(nil), b)
			require.NotImplements(t, (*harness.Crasher)(nil), b)
			a, _ := locker(t, b, 0)
			le := harnesstest.Acquire(t, a)
			row := core(t, b).LockName()
			by, err := core(t, b).Holder(context.Background())
			require.NoError(t, err)
			require.Equal(t, "client-0", by)
			require.NoError(t, le.Release(context.Background()))
			require.NoError(t, b.Close())
			left, err := core(t, priv).st.Admin(context.Background(), "SELECT name FROM "+Table+" WHERE name = $1", row)
			require.NoError(t, err)
			require.Empty(t, left, "the run's row outlived its backend on a server fencecheck does not own")
		})
	}
}

// Bad settings are one clear line each.
func TestCheck(t *testing.T) {
	d := descriptor(t, Name)
	for _, tc := range []struct {
		opts    map[string]string
		members int
		ttl     time.Duration
		want    string
	}{
		{nil, 3, time.Second, "--members must be 1"},
		{nil, 1, time.Millisecond, "below 10ms"},
		{map[string]string{OptionStore: "mysql"}, 1, time.Second, "must be sqlite or postgres"},
		{map[string]string{OptionStore: StoreSQLite, OptionDSN: "postgres://u@127.0.0.1:1/db"}, 1, time.Second, "names a PostgreSQL server"},
		{map[string]string{OptionDSN: "postgres://u:secret@/tmp/x"}, 1, time.Second, "Unix socket"},
		{map[string]string{OptionDSN: "postgres://u:secret@h1:1,h2:2/db"}, 1, time.Second, "several hosts"},
	} {
		err := d.CheckSettings(registry.Settings{TTL: tc.ttl, Members: tc.members, Options: tc.opts})
		require.ErrorContains(t, err, tc.want)
		require.NotContains(t, err.Error(), "secret")
		require.NotContains(t, err.Error(), "\n")
	}
}
