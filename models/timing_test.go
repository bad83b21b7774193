package models

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/harness/history"
)

// timingFigures are the lock-timing fields of the evidence, for comparing just those.
type timingFigures struct {
	Superseded, Noticed, NeverNoticed                     int
	NoticeDelay, NoticeDelayP50, Takeover, AcqP50, AcqP99 int64
	GrantsPerSecond                                       float64
	Overshoot                                             int64
	Estimated                                             int
}

func figures(ev Evidence) timingFigures {
	return timingFigures{ev.Superseded, ev.Noticed, ev.NeverNoticed, ev.NoticeDelayNanos, ev.NoticeDelayP50Nanos,
		ev.TakeoverNanos, ev.AcquireP50Nanos, ev.AcquireP99Nanos, ev.GrantsPerSecond, ev.OvershootNanos, ev.Estimated}
}

// estimate sets op id's valid_until: the client's own estimate of its lease's end.
func estimate(b *builder, id int, until int64) {
	for i := range b.h.Ops {
		if b.h.Ops[i].ID == id {
			b.h.Ops[i].ValidUntil = until
		}
	}
}

// opAt is the id of the op at index i.
func opAt(b *builder, i int) int { return b.h.Ops[i].ID }

func lost(client, acquireID int, at int64) history.Lost {
	return history.Lost{Client: client, AcquireID: acquireID, At: at, Reason: "renewal refused"}
}

// pausedThenTakenOver: client 0 is granted at 10, writes (accepted, returns at 30), and
// stops; client 1 is granted at 110 and writes; client 0 releases at 160. It returns
// client 0's acquire id.
func pausedThenTakenOver(b *builder, release history.Status) int {
	a0 := b.acquire(0, 0, 10, ok, 1)
	b.write(0, 20, 30, ok, 1, "c0-1")
	b.acquire(1, 40, 110, ok, 2)
	b.write(1, 120, 130, ok, 2, "c1-1")
	b.release(1, 140, 150, ok, 2)
	ret := int64(170)
	if release == unknown {
		ret = never
	}
	b.release(0, 160, ret, release, 1)
	return a0
}

// TestLockTiming: the lock-timing figures of hand-built histories, the same from the
// in-memory analysis (Check) and the stream (CheckFile).
func TestLockTiming(t *testing.T) {
	const span = 170 // first call 0, last return 170 in pausedThenTakenOver
	rate := func(grants int, span int64) float64 { return float64(grants) / (float64(span) / 1e9) }
	tests := []struct {
		name  string
		build func() *history.History
		want  timingFigures
	}{
		{"superseded holder notices late: the delay is its lost record after the next grant's return", func() *history.History {
			b := newHistory(strict)
			a0 := pausedThenTakenOver(b, ok)
			b.h.Lost = []history.Lost{lost(0, a0, 150), lost(0, a0, 155)} // the earliest counts
			return b.h
		}, timingFigures{Superseded: 1, Noticed: 1, NoticeDelay: 40, NoticeDelayP50: 40, Takeover: 110 - 30, AcqP50: 10, AcqP99: 70, GrantsPerSecond: rate(2, span)}},
		{"superseded holder never notices", func() *history.History {
			b := newHistory(strict)
			pausedThenTakenOver(b, ok)
			return b.h
		}, timingFigures{Superseded: 1, NeverNoticed: 1, Takeover: 80, AcqP50: 10, AcqP99: 70, GrantsPerSecond: rate(2, span)}},
		{"lost before anyone else was granted: delay 0", func() *history.History {
			b := newHistory(strict)
			a0 := pausedThenTakenOver(b, ok)
			b.h.Lost = []history.Lost{lost(0, a0, 50)}
			return b.h
		}, timingFigures{Superseded: 1, Noticed: 1, Takeover: 80, AcqP50: 10, AcqP99: 70, GrantsPerSecond: rate(2, span)}},
		{"a release that returned unknown still ends the hold at its call", func() *history.History {
			b := newHistory(strict)
			a0 := pausedThenTakenOver(b, unknown)
			b.h.Lost = []history.Lost{lost(0, a0, 165)}
			return b.h
		}, timingFigures{Superseded: 1, Noticed: 1, NoticeDelay: 55, NoticeDelayP50: 55, Takeover: 80, AcqP50: 10, AcqP99: 70, GrantsPerSecond: rate(2, 150)}},
		{"no supersession: the next grant returned after the release's call", func() *history.History {
			b := newHistory(strict)
			a0 := b.acquire(0, 0, 10, ok, 1)
			b.write(0, 20, 30, ok, 1, "c0-1")
			b.acquire(1, 35, 60, ok, 2) // called while held, granted after the release began
			b.release(0, 50, 55, ok, 1)
			b.release(1, 70, 80, ok, 2)
			b.h.Lost = []history.Lost{lost(0, a0, 52)}
			return b.h
		}, timingFigures{AcqP50: 10, AcqP99: 25, GrantsPerSecond: rate(2, 80)}},
		{"a write still in flight at the takeover is no progress: from the grant's return", func() *history.History {
			b := newHistory(strict)
			b.acquire(0, 0, 10, ok, 1)
			b.write(0, 20, 120, ok, 1, "c0-1") // accepted, but returned after client 1's grant
			b.acquire(1, 40, 110, ok, 2)
			b.release(1, 140, 150, ok, 2)
			b.release(0, 160, 170, ok, 1)
			return b.h
		}, timingFigures{Superseded: 1, NeverNoticed: 1, Takeover: 100, AcqP50: 10, AcqP99: 70, GrantsPerSecond: rate(2, 170)}},
		{"rejected and unknown writes are no progress either", func() *history.History {
			b := newHistory(strict)
			b.acquire(0, 0, 10, ok, 1)
			b.write(0, 12, 14, ok, 1, "c0-1")
			b.write(0, 20, 30, rejected, 1, "c0-2")
			b.write(0, 31, never, unknown, 1, "c0-3")
			b.acquire(1, 40, 110, ok, 2)
			b.release(1, 140, 150, ok, 2)
			return b.h // client 0 never releases: held to the end of the history
		}, timingFigures{Superseded: 1, NeverNoticed: 1, Takeover: 110 - 14, AcqP50: 10, AcqP99: 70, GrantsPerSecond: rate(2, 150)}},
		{"three takeovers in a row: the longest delay and the median", func() *history.History {
			b := newHistory(strict)
			a0 := b.acquire(0, 0, 10, ok, 1)
			a1 := b.acquire(1, 5, 20, ok, 2)
			a2 := b.acquire(2, 6, 40, ok, 3)
			b.acquire(3, 7, 70, ok, 4)
			b.release(0, 100, 101, ok, 1)
			b.release(1, 102, 103, ok, 2)
			b.release(2, 104, 105, ok, 3)
			b.release(3, 106, 107, ok, 4)
			// Delays: 0 superseded at 20, noticed at 25 (5); 1 at 40, at 40 (0); 2 at 70, at 100 (30).
			b.h.Lost = []history.Lost{lost(0, a0, 25), lost(1, a1, 40), lost(2, a2, 100)}
			return b.h
		}, timingFigures{Superseded: 3, Noticed: 3, NoticeDelay: 30, NoticeDelayP50: 5, Takeover: 30, AcqP50: 15, AcqP99: 63, GrantsPerSecond: rate(4, 107)}},
		{"independent keys: a grant on another key supersedes nobody", func() *history.History {
			b := newHistory(strict)
			b.add(history.Op{Client: 0, Kind: history.Acquire, Call: 0, Status: ok, Token: 1, Key: "a"}, 10)
			b.add(history.Op{Client: 1, Kind: history.Acquire, Call: 20, Status: ok, Token: 1, Key: "b"}, 30)
			b.add(history.Op{Client: 2, Kind: history.Acquire, Call: 40, Status: ok, Token: 2, Key: "a"}, 50)
			b.add(history.Op{Client: 0, Kind: history.Release, Call: 60, Status: ok, Token: 1, Key: "a"}, 70)
			b.add(history.Op{Client: 1, Kind: history.Release, Call: 60, Status: ok, Token: 1, Key: "b"}, 70)
			b.add(history.Op{Client: 2, Kind: history.Release, Call: 60, Status: ok, Token: 2, Key: "a"}, 70)
			return b.h
		}, timingFigures{Superseded: 1, NeverNoticed: 1, Takeover: 40, AcqP50: 10, AcqP99: 10, GrantsPerSecond: rate(3, 70)}},
		{"the estimate ran out before the next grant: overshoot 0", func() *history.History {
			b := newHistory(strict)
			a0 := pausedThenTakenOver(b, ok)
			estimate(b, a0, 60)
			estimate(b, opAt(b, 1), 100) // client 0's write: its estimate when it wrote
			return b.h
		}, timingFigures{Superseded: 1, NeverNoticed: 1, Takeover: 80, AcqP50: 10, AcqP99: 70, GrantsPerSecond: rate(2, span), Estimated: 1}},
		{"the estimate still said held after the next grant: the latest counts", func() *history.History {
			b := newHistory(strict)
			a0 := pausedThenTakenOver(b, ok)
			estimate(b, a0, 60)
			estimate(b, opAt(b, 1), 140)
			estimate(b, opAt(b, 3), 500) // client 1's write: not the superseded holder's
			return b.h
		}, timingFigures{Superseded: 1, NeverNoticed: 1, Takeover: 80, AcqP50: 10, AcqP99: 70, GrantsPerSecond: rate(2, span), Overshoot: 30, Estimated: 1}},
		{"no grant at all", func() *history.History {
			b := newHistory(strict)
			b.acquire(0, 0, 10, failed, 0)
			return b.h
		}, timingFigures{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := tt.build()
			require.NoError(t, h.Validate())
			rep, err := Check(context.Background(), h, Options{PorcupineBudget: NoPorcupine})
			require.NoError(t, err)
			require.Equal(t, tt.want, figures(rep.Evidence))
			res, err := CheckFile(context.Background(), writeHistory(t, h), Options{StreamAbove: -1})
			require.NoError(t, err)
			require.True(t, res.Streamed)
			require.Equal(t, rep.Evidence, res.Report.Evidence, "the stream's evidence")
			require.Equal(t, rep.Verdicts, res.Report.Verdicts)
		})
	}
}

// TestLockTimingChangesNoVerdict: lost records change the evidence, never a verdict.
func TestLockTimingChangesNoVerdict(t *testing.T) {
	b := newHistory(strict)
	a0 := pausedThenTakenOver(b, ok)
	without, err := Check(context.Background(), b.h, Options{PorcupineBudget: NoPorcupine})
	require.NoError(t, err)
	b.h.Lost = []history.Lost{lost(0, a0, 150)}
	with, err := Check(context.Background(), b.h, Options{PorcupineBudget: NoPorcupine})
	require.NoError(t, err)
	require.Equal(t, without.Verdicts, with.Verdicts)
	require.NotEqual(t, without.Evidence, with.Evidence)
}

// TestAcquireLatencyPercentiles: nearest rank over the ok acquires only.
func TestAcquireLatencyPercentiles(t *testing.T) {
	b := newHistory(strict)
	for i := range int64(100) {
		call := i * 1000
		b.acquire(int(i), call, call+i+1, ok, i+1) // latencies 1..100
		b.release(int(i), call+500, call+600, ok, i+1)
	}
	b.acquire(100, 200_000, 900_000, failed, 0) // a failed acquire's latency does not count
	rep, err := Check(context.Background(), b.h, Options{PorcupineBudget: NoPorcupine})
	require.NoError(t, err)
	ev := rep.Evidence
	require.Equal(t, int64(50), ev.AcquireP50Nanos)
	require.Equal(t, int64(99), ev.AcquireP99Nanos)
	require.InDelta(t, 100/(900_000/1e9), ev.GrantsPerSecond, 1e-6, "100 grants over the span 0 to 900,000 ns")
	require.Zero(t, ev.Superseded)
}

// TestDurationsBeyondExact: past maxExact values the histogram's percentiles stay
// within 1/histSub of the exact ones, whatever order the values came in.
func TestDurationsBeyondExact(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	vals := make([]int64, 3*maxExact)
	for i := range vals {
		vals[i] = r.Int64N(1e9) + r.Int64N(50) // a wide range, and small values too
		if i%7 == 0 {
			vals[i] = r.Int64N(200)
		}
	}
	var fwd, rev durations
	for i := range vals {
		fwd.add(vals[i])
		rev.add(vals[len(vals)-1-i])
	}
	sorted := slices.Clone(vals)
	slices.Sort(sorted)
	for _, p := range []float64{1, 10, 50, 90, 99, 100} {
		exact, got := Percentile(sorted, p), fwd.percentile(p)
		require.Equal(t, got, rev.percentile(p), "p%v depends on the order", p)
		require.GreaterOrEqual(t, got, exact, "p%v", p)
		require.LessOrEqual(t, float64(got-exact), float64(exact)/histSub+1, "p%v: %d for %d", p, got, exact)
	}
	require.Equal(t, sorted[len(sorted)-1], fwd.max)
	for _, v := range []int64{0, 1, histSub - 1, histSub, histSub + 1, 1 << 20, 1<<40 + 12345, 1<<62 + 1, 1<<63 - 1} {
		i := bucket(v)
		require.GreaterOrEqual(t, bucketTop(i), v, "value %d in bucket %d", v, i)
		require.Equal(t, i, bucket(bucketTop(i)), "bucket %d's top", i)
		if i > 0 {
			require.Less(t, bucketTop(i-1), v, "value %d: bucket %d's predecessor", v, i)
		}
	}
}
