// Package sqldbtest holds the tests every sqldb dialect must pass, run by the sqlite and
// postgres packages against their real databases.
package sqldbtest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/resource/sqldb"
)

// Factory creates a resource by name and fence on a fresh run key; the test closes it.
type Factory func(t *testing.T, name, fence string) *sqldb.Resource

// Lease is a fixed-token lease.
type Lease int64

func (l Lease) Token() int64                { return int64(l) }
func (Lease) TTL() time.Duration            { return time.Second }
func (Lease) Lost() <-chan struct{}         { return nil }
func (Lease) Release(context.Context) error { return nil }

// GateFunc runs f at every pause point, standing in for the nemesis.
type GateFunc func(p harness.PausePoint)

// Pause implements harness.Gate.
func (g GateFunc) Pause(_ context.Context, p harness.PausePoint) { g(p) }

// Client opens a client of r (through r's real endpoints, no proxy).
func Client(t *testing.T, r *sqldb.Resource, id int, gate harness.Gate) harness.ResourceClient {
	t.Helper()
	c, err := r.NewClient(context.Background(), id, r.Endpoints(), gate)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Close()); require.NoError(t, c.Close()) })
	return c
}

// Patience is the ceiling of every wait for an event in these tests: generous, because a
// loaded 2-core machine can be many times slower than an idle one, and never spent on
// the passing path, which ends at the event.
const Patience = 30 * time.Second

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), Patience)
	t.Cleanup(cancel)
	return c
}

// WriteRules: without concurrency every mode accepts exactly the writes the fence rule
// passes, and reads return what was accepted.
func WriteRules(t *testing.T, f Factory, names []string) {
	type step struct {
		token    int64
		accepted bool
	}
	rules := map[string][]step{
		history.FenceStrict:    {{5, true}, {5, false}, {4, false}, {6, true}},
		history.FenceMonotonic: {{5, true}, {5, true}, {4, false}, {6, true}},
	}
	for _, name := range names {
		for _, fence := range []string{history.FenceStrict, history.FenceMonotonic} {
			t.Run(name+"-"+fence, func(t *testing.T) {
				r := f(t, name, fence)
				require.Equal(t, name, r.Name())
				require.Equal(t, fence, r.Fence())
				c := Client(t, r, 0, nil)
				v, tok, err := c.Read(ctx(t))
				require.NoError(t, err)
				require.Equal(t, "", v)
				require.Equal(t, int64(0), tok)
				for i, s := range rules[fence] {
					val := string(rune('a' + i))
					ok, err := c.Write(ctx(t), Lease(s.token), val)
					require.NoError(t, err)
					require.Equal(t, s.accepted, ok, "step %d token %d", i, s.token)
					if ok {
						v, tok, err := c.Read(ctx(t))
						require.NoError(t, err)
						require.Equal(t, val, v)
						require.Equal(t, s.token, tok)
					}
				}
			})
		}
	}
}

// WindowOutcome is what a check-then-write mode does when a newer writer slips into the
// window between its check and its write.
type WindowOutcome int

const (
	// StaleAccepted: the stale write lands after the newer one (TOCTOU broken).
	StaleAccepted WindowOutcome = iota
	// StaleRejected: the database undoes the stale attempt (a conflict), and the retried
	// check sees the newer token and refuses.
	StaleRejected
	// NewerBlocked: the newer writer cannot write until the stale one commits, so the
	// stale write is not stale when it lands; the newer write follows it.
	NewerBlocked
)

// TOCTOUWindow runs the race for real: a client with token 5 checks, and at its
// PauseAfterCheck a client with token 6 writes; then the first client writes.
func TOCTOUWindow(t *testing.T, r *sqldb.Resource, want WindowOutcome) {
	newer := Client(t, r, 1, nil)
	var newerOK bool
	var newerErr error
	newerDone := make(chan struct{})
	paused := 0
	stale := Client(t, r, 0, GateFunc(func(p harness.PausePoint) {
		if p != harness.PauseAfterCheck {
			return
		}
		paused++
		if paused > 1 {
			return // a retry's check: the race is over
		}
		go func() {
			defer close(newerDone)
			newerOK, newerErr = newer.Write(ctx(t), Lease(6), "newer")
		}()
		select {
		case <-newerDone:
		case <-time.After(500 * time.Millisecond):
			// Still blocked: the stale client's transaction holds the lock.
		}
	}))
	ok, err := stale.Write(ctx(t), Lease(5), "stale")
	require.NoError(t, err)
	<-newerDone
	require.NoError(t, newerErr)
	require.True(t, newerOK, "the newer write must be accepted")
	require.GreaterOrEqual(t, paused, 1, "the client never paused between check and write")
	v, tok, err := r.State(ctx(t))
	require.NoError(t, err)
	switch want {
	case StaleAccepted:
		require.True(t, ok, "the stale write should get through")
		require.Zero(t, r.Conflicts(), "nothing stopped the stale write")
		require.Equal(t, "stale", v, "the stale write overwrote the newer one")
		require.Equal(t, int64(5), tok, "the token went backwards")
	case StaleRejected:
		require.False(t, ok, "the stale write should be refused")
		require.Positive(t, r.Conflicts(), "the database should have undone the stale attempt")
		require.Equal(t, "newer", v)
		require.Equal(t, int64(6), tok)
	case NewerBlocked:
		require.True(t, ok, "the stale client still held the row, its write is not stale yet")
		require.Equal(t, "newer", v, "the newer write must land after it")
		require.Equal(t, int64(6), tok)
	}
}

// Effects: the outbox delivers exactly the accepted writes, after commit; direct
// delivers every attempt, the rejected one too.
func Effects(t *testing.T, f Factory, dialect string) {
	for _, mode := range []sqldb.Mode{sqldb.Outbox, sqldb.Direct} {
		t.Run(string(mode), func(t *testing.T) {
			r := f(t, dialect+"-"+string(mode), history.FenceStrict)
			rec := history.NewRecorder()
			r.RecordEffects(rec)
			c := Client(t, r, 0, nil)
			for _, s := range []struct {
				token int64
				val   string
				ok    bool
			}{{5, "v5", true}, {4, "v4", false}, {7, "v7", true}} {
				ok, err := c.Write(ctx(t), Lease(s.token), s.val)
				require.NoError(t, err)
				require.Equal(t, s.ok, ok, s.val)
			}
			want := []string{"v5", "v7"}
			if mode == sqldb.Direct {
				want = []string{"v5", "v4", "v7"}
			} else {
				_, err := r.Relay().Drain(ctx(t))
				require.NoError(t, err)
			}
			require.Eventually(t, func() bool { return len(r.Sink().Deliveries()) >= len(want) }, Patience, 5*time.Millisecond)
			var got []string
			for _, d := range r.Sink().Deliveries() {
				got = append(got, d.Value)
				require.Equal(t, string(mode), d.Via)
			}
			require.Equal(t, want, dedup(got))
			h := rec.History(history.Run{})
			require.Len(t, h.Effects, len(got))
			require.Equal(t, want[0], h.Effects[0].Value)
		})
	}
}

func dedup(s []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, v := range s {
		if !seen[v] {
			out = append(out, v)
		}
		seen[v] = true
	}
	return out
}

// Blocked: while another connection holds the row (or the database's write lock), a
// fenced write waits and retries; when the holder lets go it goes through, and when the
// op's context ends first the write is an error — never a silent rejection — and with
// wantUnknown an error that is not "no effect". hold closes locked once it holds the
// lock, then waits for release.
func Blocked(t *testing.T, r *sqldb.Resource, wantUnknown bool, hold func(ctx context.Context, locked chan<- struct{}, release <-chan struct{}) error) {
	c := Client(t, r, 0, nil)
	release := make(chan struct{})
	locked := make(chan struct{})
	held := make(chan error, 1)
	go func() { held <- hold(context.Background(), locked, release) }()
	select {
	case <-locked:
	case err := <-held:
		t.Fatalf("the holder did not take the lock: %v", err)
	case <-time.After(Patience):
		t.Fatalf("the holder did not take the lock within %v", Patience)
	}

	short, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	ok, err := c.Write(short, Lease(3), "timed-out")
	cancel()
	require.Error(t, err, "a blocked write must not come back as a rejection")
	require.False(t, ok)
	if wantUnknown {
		require.False(t, errors.Is(err, harness.ErrNoEffect), "a write that timed out while blocked is unknown, got %v", err)
	}

	var wg sync.WaitGroup
	wg.Add(1)
	var wok bool
	var werr error
	go func() {
		defer wg.Done()
		wok, werr = c.Write(ctx(t), Lease(4), "after")
	}()
	// Give the write time to start waiting. Not needed for the verdict: a write that
	// starts after the release goes through as well.
	time.Sleep(200 * time.Millisecond)
	close(release)
	require.NoError(t, <-held)
	wg.Wait()
	require.NoError(t, werr)
	require.True(t, wok, "once the lock is free the write goes through")
}
