package mariadblock_test

import (
	"context"
	"database/sql"
	"slices"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/backend/mariadblock"
	"github.com/fencecheck/fencecheck/backend/sqlsession/sqlsessiontest"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/nemesis/faults"
	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/harnesstest"
)

// fastClock starts a private mariadbd with libfaketime preloaded, its clock running
// rate times fast (rate 0: real time).
func fastClock(t *testing.T, ttl time.Duration, rate float64) *mariadblock.Backend {
	t.Helper()
	if rate > 0 {
		if err := mariadblock.FaketimeAvailable(); err != nil {
			t.Skip(err)
		}
	}
	return start(t, mariadblock.Config{TTL: ttl, ClockRate: rate})
}

// serverSeconds is how far the server's clock moved while the test's moved by about
// a second.
func serverSeconds(t *testing.T, b *mariadblock.Backend) (server, real time.Duration) {
	t.Helper()
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr, cfg.User = "tcp", b.Endpoints()[0], "root"
	c, err := mysql.NewConnector(cfg)
	require.NoError(t, err)
	db := sql.OpenDB(c)
	defer db.Close()
	now := func() float64 {
		var f float64
		require.NoError(t, db.QueryRowContext(t.Context(), "SELECT UNIX_TIMESTAMP(SYSDATE(6))").Scan(&f))
		return f
	}
	s0, r0 := now(), time.Now()
	time.Sleep(time.Second) // a measuring window: the test compares the two clocks' rates over it
	s1, r1 := now(), time.Now()
	return time.Duration((s1 - s0) * float64(time.Second)), r1.Sub(r0)
}

// The server's clock runs at the rate, and so does wait_timeout: a silent session is
// ended after TTL/rate in real time, while its holder, by its own clock, is well inside
// its TTL. At 1x the same stall lasts at least the TTL.
func TestFastServerClockEndsSilentSessionsEarly(t *testing.T) {
	ttl := 2 * time.Second
	for _, tc := range []struct {
		name     string
		rate     float64
		min, max time.Duration // of the stall before the next grant
	}{
		{"real time", 0, ttl * 9 / 10, 10 * ttl},
		// The last statement before the stall was the grant, just before it: the
		// session is ended TTL/2 after it, in real time.
		{"2x", mariadblock.SkewRate, ttl / 3, ttl * 4 / 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := fastClock(t, ttl, tc.rate)
			require.Equal(t, tc.rate, b.ClockRate())
			server, real := serverSeconds(t, b)
			t.Logf("server clock moved %v in %v", server.Round(time.Millisecond), real.Round(time.Millisecond))
			want := max(tc.rate, 1)
			require.InDelta(t, want, server.Seconds()/real.Seconds(), 0.25*want, "the server's clock rate")

			a, link := sqlsessiontest.Locker(t, b, 0)
			other, _ := sqlsessiontest.Locker(t, b, 1)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			le, err := a.Acquire(ctx)
			require.NoError(t, err)
			link.Stall()
			stalled := time.Now()
			le2, err := other.Acquire(ctx) // granted once the server ended le's session
			require.NoError(t, err)
			gap := time.Since(stalled)
			t.Logf("clock rate %g: a silent %v session lost the lock after %v", tc.rate, ttl, gap.Round(time.Millisecond))
			require.GreaterOrEqual(t, gap, tc.min)
			require.Less(t, gap, tc.max)
			require.Greater(t, le2.Token(), le.Token())
			if tc.rate > 0 {
				e, ok := le.(harness.Expiring)
				require.True(t, ok)
				require.True(t, time.Now().Before(e.ValidUntil()), "by its own clock the holder's lease is still valid")
			}
			link.Pass()
			require.NoError(t, le2.Release(ctx))
			_ = le.Release(ctx)
		})
	}
}

// Why SkewRate is 2: a healthy holder pings every TTL/3, 2/3 of wait_timeout by a 2x
// server clock, and keeps its session for many TTLs: a ping may be TTL/6 late. At 4x its
// pings are 4/3 of wait_timeout apart by the server's clock: every session is ended,
// busy or not, whatever the TTL. The test runs at 3 s, where TTL/6 is 500 ms, beyond the
// scheduling delays of a loaded machine; at the default 1 s it is 167 ms, which a loaded
// machine can exceed (a healthy session then ends, and another client takes over).
func TestClockRateAndHealthySessions(t *testing.T) {
	ttl := 3 * time.Second
	for _, tc := range []struct {
		name     string
		rate     float64
		survives bool
	}{
		{"2x keeps pinged sessions", mariadblock.SkewRate, true},
		{"4x ends every session", 4, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := fastClock(t, ttl, tc.rate)
			l, _ := sqlsessiontest.Locker(t, b, 0)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			le, err := l.Acquire(ctx)
			require.NoError(t, err)
			granted := time.Now()
			if !tc.survives {
				// The loss is an event: waited for with a generous ceiling (the ctx), not
				// within a window a loaded machine could outrun.
				select {
				case <-le.Lost():
					t.Logf("at %gx a pinged %v session was lost %v after its grant", tc.rate, ttl, time.Since(granted).Round(time.Millisecond))
				case <-ctx.Done():
					t.Fatalf("a pinged session survived %v at %gx", time.Since(granted).Round(time.Millisecond), tc.rate)
				}
				return
			}
			// A window in which the loss must not happen (load only lengthens it). It
			// ends between two pings: a Release racing a ping in flight cancels it, and
			// the driver closes a connection whose statement was cancelled.
			held := 3*ttl + ttl/6
			select {
			case <-le.Lost():
				t.Fatalf("a pinged session was lost at %gx", tc.rate)
			case <-time.After(held):
				require.NoError(t, le.Release(ctx), "still held after %v", held)
			}
		})
	}
}

// The capabilities each descriptor's Shape gives are the started value's: a clock that
// can start fast on the private server, fast only with skew; an existing server takes
// neither node nor clock faults.
func TestDescriptorCaps(t *testing.T) {
	if err := mariadblock.Available(); err != nil {
		t.Skip(err)
	}
	existing := start(t, mariadblock.Config{TTL: time.Second})
	dsn := "root@tcp(" + existing.Endpoints()[0] + ")/fencecheck"
	ds := mariadblock.Descriptors()
	private := registry.Caps{Crasher: true, ProcessNodes: true, FastClock: true, ClientExpiry: true}
	for _, tc := range []struct {
		name      string
		d         registry.Backend
		s         registry.Settings
		plan      registry.Caps
		clockRate float64
		setup     string
	}{
		{"private", ds[0], registry.Settings{Faults: []string{"pause"}}, private, 0,
			"a private mariadbd (Debian mariadb-server) on loopback, wait_timeout = TTL"},
		{"private with skew", ds[0], registry.Settings{Faults: []string{"skew"}}, private, mariadblock.SkewRate,
			"a private mariadbd (Debian mariadb-server) on loopback, wait_timeout = TTL, its clock 2x fast (libfaketime)"},
		{"existing server with skew asked", ds[2], registry.Settings{Faults: []string{"skew"}, Options: map[string]string{mariadblock.OptionDSN: dsn}},
			registry.Caps{ClientExpiry: true, External: "servers given by --mariadb-lock-dsn", NoToken: "no token"}, 0,
			"an existing MariaDB, wait_timeout = TTL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.s
			s.TTL, s.Members, s.Clients = time.Second, 1, 2
			if slices.Contains(s.Faults, "skew") && s.Option(mariadblock.OptionDSN) == "" {
				if err := mariadblock.FaketimeAvailable(); err != nil {
					t.Skip(err)
				}
			}
			require.Empty(t, tc.d.Unavailability(s))
			require.Equal(t, tc.setup, tc.d.SetupOf(s))
			plan := tc.d.PlanCaps(s)
			require.Equal(t, tc.plan, plan)
			b := harnesstest.Start(t, tc.d, s)
			require.Equal(t, tc.clockRate, tc.d.RunCaps(s, b).ClockRate)

			// The skew fault applies to the private server only, and is refused on an
			// existing one with one line.
			var skew registry.Fault
			for _, f := range faults.All() {
				if f.Name() == "skew" {
					skew = f
				}
			}
			require.NotNil(t, skew)
			err := skew.Applies(registry.Target{Backend: tc.d.Name, Caps: plan, TTL: s.TTL, ClientFaults: []string{"pause"}})
			if plan.External != "" {
				require.ErrorContains(t, err, "takes client-side faults only")
				require.NotContains(t, err.Error(), "\n")
			} else {
				require.NoError(t, err)
			}
		})
	}
}

func TestClockRateConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  mariadblock.Config
		want string
	}{
		{"negative", mariadblock.Config{TTL: time.Second, Dir: "x", ClockRate: -1}, "between 0 (real time) and 100"},
		{"too fast", mariadblock.Config{TTL: time.Second, Dir: "x", ClockRate: 1000}, "between 0 (real time) and 100"},
		{"existing server", mariadblock.Config{TTL: time.Second, DSN: "root@tcp(127.0.0.1:3306)/db", ClockRate: 2}, "not an existing one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			require.ErrorContains(t, err, tc.want)
			require.NotContains(t, err.Error(), "\n")
		})
	}
}
