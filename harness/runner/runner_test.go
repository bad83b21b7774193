package runner

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/backend/naive"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/harness/proc/proctest"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/resource/register"
)

func TestMain(m *testing.M) { os.Exit(proctest.VerifyNoLeaks(m)) }

// startNaive starts a naive lock server and a fenced register, closed (and the closes
// checked) when the test ends.
func startNaive(t *testing.T) (*naive.Backend, harness.Resource) {
	t.Helper()
	be, err := naive.New(naive.Config{TTL: 200 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, be.Close()) })
	res, err := register.New(register.Fenced, history.FenceStrict)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, res.Close()) })
	return be, res
}

// A run that records more ops than its Spill.After writes them to disk as it goes: the
// segmented history holds every op, reads as a history, and checks to verdicts (a
// fenced register without faults holds). The run is bounded by grants, not by time:
// every grant is followed by its holder's read, write and release (a run stops its
// clients between critical sections), so 100 grants are more than 200 ops on any machine.
func TestRunSpillsItsHistory(t *testing.T) {
	be, res := startNaive(t)
	head := filepath.Join(t.TempDir(), "history.json")
	run := history.Run{Scenario: "spill", Backend: "naive", Resource: "fenced", Seed: 1, TTLms: 200}
	h, err := Run(context.Background(), Config{
		Run: run, Backend: be, Resource: res, Clients: 3, Duration: time.Millisecond, MinGrants: 100,
		Spill: history.Spill{Head: head, After: 200, PerSegment: 100, Keep: 50},
	})
	require.NoError(t, err)
	require.Nil(t, h.Ops, "the history is on disk")
	want := run
	want.GrantedTTLms = 200 // the naive server grants the TTL asked for, and the run says so
	require.Equal(t, want, h.Run)

	whole, err := history.ReadFile(head)
	require.NoError(t, err)
	require.Greater(t, len(whole.Ops), 200, "the run recorded enough ops to spill")
	for i, o := range whole.Ops {
		require.Equal(t, i+1, o.ID)
	}
	segs, err := filepath.Glob(filepath.Join(filepath.Dir(head), history.SegmentsDir, "ops-*.jsonl"))
	require.NoError(t, err)
	require.Len(t, segs, (len(whole.Ops)+99)/100)

	checked, err := models.CheckFile(context.Background(), head, models.Options{})
	require.NoError(t, err)
	require.True(t, checked.Streamed)
	require.Equal(t, len(whole.Ops), checked.Report.Ops)
	inMemory, err := models.Check(context.Background(), whole, models.Options{PorcupineBudget: models.NoPorcupine})
	require.NoError(t, err)
	require.Equal(t, inMemory.Verdicts, checked.Report.Verdicts)
	require.Equal(t, models.Held, checked.Report.Verdicts[models.Register])
}

// MinGrants bounds a run by events: with a Duration far too short for them, it still
// ends only once that many acquires were granted; a negative count is refused.
func TestRunMinGrants(t *testing.T) {
	be, res := startNaive(t)
	var log strings.Builder
	h, err := Run(context.Background(), Config{
		Run: history.Run{Backend: "naive", Resource: "fenced", Seed: 1, TTLms: 200}, Backend: be, Resource: res,
		Clients: 2, Duration: time.Millisecond, MinGrants: 25, Logger: slog.New(slog.NewTextHandler(&log, nil)),
	})
	require.NoError(t, err)
	grants := 0
	for _, o := range h.Ops {
		if o.Kind == history.Acquire && o.Status == history.OK {
			grants++
		}
	}
	require.GreaterOrEqual(t, grants, 25)
	require.Contains(t, log.String(), "workload started")
	require.NotContains(t, log.String(), "time limit")

	_, err = Run(context.Background(), Config{Backend: be, Resource: res, Duration: time.Second, MinGrants: -1})
	require.ErrorContains(t, err, "min grants must not be negative")
}

// MaxOps ends a run by its operations: with a Duration of an hour, it ends once that
// many were called (every fault healed: there is none), with no more than each client's
// critical section under way and its final read besides.
func TestRunMaxOps(t *testing.T) {
	be, res := startNaive(t)
	h, err := Run(context.Background(), Config{
		Run: history.Run{Backend: "naive", Resource: "fenced", Seed: 1, TTLms: 200}, Backend: be, Resource: res,
		Clients: 2, Duration: time.Hour, MaxOps: 20,
	})
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(h.Ops), 20)
	require.LessOrEqual(t, len(h.Ops), 20+2*4+2, "a critical section (acquire, read, write, release) per client under way, and the final reads")
}

// selfBoundedLocker bounds its acquires itself (harness.SelfBoundedAcquirer); with
// never, its lock never comes (its Acquire waits for its ctx, and closes waiting once
// in it), so only the run's stop can end it; the others acquire only once it waits.
type selfBoundedLocker struct {
	harness.Locker
	never       bool
	waiting     chan struct{}
	once        *sync.Once
	sawDeadline *atomic.Bool
}

func (selfBoundedLocker) AcquireBoundsItself() bool { return true }

func (l selfBoundedLocker) Acquire(ctx context.Context) (harness.Lease, error) {
	if _, ok := ctx.Deadline(); ok {
		l.sawDeadline.Store(true)
	}
	if l.never {
		l.once.Do(func() { close(l.waiting) })
		<-ctx.Done()
		return nil, ctx.Err()
	}
	select {
	case <-l.waiting:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return l.Locker.Acquire(ctx)
}

// A locker that bounds its acquires itself gets no deadline from the worker, so a grant
// that comes after AcquireTimeout is recorded, not abandoned; the run's stop still ends
// an acquire that never returns. AcquireTimeout is 1 ns: any deadline would fail every
// acquire. The run is bounded by its grants.
func TestRunSelfBoundedAcquire(t *testing.T) {
	be, res := startNaive(t)
	var (
		saw     atomic.Bool
		once    sync.Once
		waiting = make(chan struct{})
	)
	lockers := &lockerFunc{Backend: be, wrap: func(id int, l harness.Locker) harness.Locker {
		return selfBoundedLocker{Locker: l, never: id == 1, waiting: waiting, once: &once, sawDeadline: &saw}
	}}
	h, err := Run(context.Background(), Config{
		Run: history.Run{Backend: "naive", Resource: "fenced", Seed: 1, TTLms: 200}, Backend: be, Lockers: lockers, Resource: res,
		Clients: 2, Duration: time.Millisecond, MinGrants: 10, AcquireTimeout: time.Nanosecond,
	})
	require.NoError(t, err)
	grants, unknown := 0, 0
	for _, o := range h.Ops {
		switch {
		case o.Kind == history.Acquire && o.Status == history.OK:
			require.Equal(t, 0, o.Client, "client 1's lock never came")
			grants++
		case o.Kind == history.Acquire && o.Status == history.Unknown && o.Client == 1:
			unknown++ // (client 0 may be inside an acquire at the stop too)
		}
	}
	require.GreaterOrEqual(t, grants, 10)
	require.Equal(t, 1, unknown, "client 1's one acquire ended at the run's stop")
	require.False(t, saw.Load(), "an acquire was given a deadline")
}

// lockerFunc makes the Backend's lockers and wraps each.
type lockerFunc struct {
	*naive.Backend
	wrap func(id int, l harness.Locker) harness.Locker
}

func (b *lockerFunc) NewLocker(ctx context.Context, id int, addrs []string) (harness.Locker, error) {
	l, err := b.Backend.NewLocker(ctx, id, addrs)
	if err != nil {
		return nil, err
	}
	return b.wrap(id, l), nil
}

// slowStart is a lock client whose first answer comes only after wait (an interpreter or
// a JVM starting on a loaded machine).
type slowStart struct {
	harness.Locker
	from time.Time
	wait time.Duration
}

func (l *slowStart) AcquireBoundsItself() bool { return true }

func (l *slowStart) Acquire(ctx context.Context) (harness.Lease, error) {
	select {
	case <-time.After(time.Until(l.from.Add(l.wait))):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return l.Locker.Acquire(ctx)
}

// The ceiling's clock starts at the clients' first answer (at the latest Limit in): a
// client whose start-up outlasts Duration+Limit still gets its grants made. The client
// answers 200 ms after the old ceiling (Duration+Limit from the start); the new one is
// Limit later.
func TestRunCeilingStartsAtTheFirstAnswer(t *testing.T) {
	be, res := startNaive(t)
	const limit = time.Second
	var log strings.Builder
	lockers := &lockerFunc{Backend: be, wrap: func(_ int, l harness.Locker) harness.Locker {
		return &slowStart{Locker: l, from: time.Now(), wait: limit + 200*time.Millisecond}
	}}
	h, err := Run(context.Background(), Config{
		Run: history.Run{Backend: "naive", Resource: "fenced", Seed: 1, TTLms: 200}, Backend: be, Lockers: lockers, Resource: res,
		Clients: 1, Duration: time.Millisecond, Limit: limit, MinGrants: 1, Logger: slog.New(slog.NewTextHandler(&log, nil)),
	})
	require.NoError(t, err)
	grants := 0
	for _, o := range h.Ops {
		if o.Kind == history.Acquire && o.Status == history.OK {
			grants++
		}
	}
	require.Positive(t, grants, "the slow client's grant was made")
	require.NotContains(t, log.String(), "time limit")
}
