package models

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/harness/history"
)

// builder writes small histories by hand. Ids follow the order ops are added; a return
// of never means the op is unknown.
type builder struct{ h *history.History }

const never = -1

func newHistory(fence string) *builder {
	return &builder{h: &history.History{Format: history.Format, Run: history.Run{Fence: fence}, Faults: []history.Fault{}}}
}

func (b *builder) add(o history.Op, ret int64) int {
	o.ID = len(b.h.Ops) + 1
	if ret != never {
		o.Return = &ret
	}
	b.h.Ops = append(b.h.Ops, o)
	return o.ID
}

func (b *builder) write(c int, call, ret int64, s history.Status, tok int64, v string) int {
	return b.add(history.Op{Client: c, Kind: history.Write, Call: call, Status: s, Token: tok, Value: v}, ret)
}

func (b *builder) rmw(c int, call, ret int64, s history.Status, tok int64, v string, readID int) int {
	return b.add(history.Op{Client: c, Kind: history.Write, Call: call, Status: s, Token: tok, Value: v, ReadID: &readID}, ret)
}

func (b *builder) read(c int, call, ret int64, tok int64, v string) int {
	return b.add(history.Op{Client: c, Kind: history.Read, Call: call, Status: history.OK, Token: tok, Value: v}, ret)
}

func (b *builder) acquire(c int, call, ret int64, s history.Status, tok int64) int {
	return b.add(history.Op{Client: c, Kind: history.Acquire, Call: call, Status: s, Token: tok}, ret)
}

func (b *builder) release(c int, call, ret int64, s history.Status, tok int64) int {
	return b.add(history.Op{Client: c, Kind: history.Release, Call: call, Status: s, Token: tok}, ret)
}

const (
	ok       = history.OK
	rejected = history.Rejected
	unknown  = history.Unknown
	failed   = history.Fail
	strict   = history.FenceStrict
	mono     = history.FenceMonotonic
)

type tcase struct {
	name string
	// build returns the history and the expected counterexample of the first violated
	// property in want (nil: not checked).
	build func() (*history.History, []int)
	want  map[Property]Verdict // properties left out may come out any way
	check func(t *testing.T, rep *Report)
}

func TestVerdicts(t *testing.T) {
	cases := []tcase{
		{
			name: "token 42 accepted after the token-43 write returned, then read: register violated",
			build: func() (*history.History, []int) {
				b := newHistory(strict)
				b.acquire(1, 0, 5, ok, 43)
				w43 := b.write(1, 10, 20, ok, 43, "c1-7")
				w42 := b.write(0, 30, 40, ok, 42, "c0-1")
				b.read(2, 50, 60, 42, "c0-1")
				return b.h, []int{w42, w43}
			},
			want: map[Property]Verdict{Register: Violated},
			check: func(t *testing.T, rep *Report) {
				require.Len(t, rep.StaleWrites, 1)
				s := rep.StaleWrites[0]
				assert.Equal(t, StaleWrite{Write: 3, Client: 0, Token: 42, At: 30, Status: "accepted", Newer: 2, NewerClient: 1, NewerToken: 43, NewerAt: 20}, s)
				assert.Equal(t, 1, rep.Evidence.StaleAccepted)
				assert.Equal(t, 1, rep.Evidence.StaleAttempted)
			},
		},
		{
			name: "a stale value seen by a read after the newer write returned: register violated, SeenBy names the read",
			build: func() (*history.History, []int) {
				b := newHistory(strict)
				w42 := b.write(0, 0, 100, ok, 42, "c0-1") // slow: could have landed late
				w43 := b.write(1, 10, 20, ok, 43, "c1-1")
				r := b.read(2, 30, 40, 42, "c0-1")
				return b.h, []int{w42, w43, r}
			},
			want: map[Property]Verdict{Register: Violated},
			check: func(t *testing.T, rep *Report) {
				require.Len(t, rep.StaleWrites, 1)
				assert.Equal(t, 3, rep.StaleWrites[0].SeenBy)
			},
		},
		{
			name: "overlapping concurrent writes with a legal order, and a rejected stale write: held",
			build: func() (*history.History, []int) {
				b := newHistory(strict)
				b.write(0, 0, 10, ok, 6, "c0-1")
				b.write(1, 2, 8, ok, 5, "c1-1") // lower token but concurrent: it can go first
				b.read(2, 12, 14, 6, "c0-1")
				b.write(1, 20, 25, rejected, 5, "c1-2")
				return b.h, nil
			},
			want: map[Property]Verdict{Register: Held, Updates: Held},
			check: func(t *testing.T, rep *Report) {
				assert.Equal(t, 1, rep.Evidence.StaleRejected)
				assert.Equal(t, 0, rep.Evidence.StaleAccepted)
			},
		},
		{
			name: "overlapping concurrent writes, no stale attempt, under a fault: inconclusive",
			build: func() (*history.History, []int) {
				b := newHistory(strict)
				b.write(0, 0, 10, ok, 6, "c0-1")
				b.write(1, 2, 8, ok, 5, "c1-1")
				b.read(2, 12, 14, 6, "c0-1")
				end := int64(9)
				b.h.Faults = []history.Fault{{Kind: "pause", Target: "client-1", Start: 3, End: &end}}
				return b.h, nil
			},
			want: map[Property]Verdict{Register: Inconclusive, Updates: Inconclusive, Tokens: Inconclusive, Mutex: Held},
		},
		{
			name: "the same without a fault: simply held",
			build: func() (*history.History, []int) {
				b := newHistory(strict)
				b.write(0, 0, 10, ok, 6, "c0-1")
				b.write(1, 2, 8, ok, 5, "c1-1")
				b.read(2, 12, 14, 6, "c0-1")
				return b.h, nil
			},
			want: map[Property]Verdict{Register: Held, Updates: Held, Tokens: Held, Mutex: Held},
		},
		{
			name: "rejected stale write: held with one rejection",
			build: func() (*history.History, []int) {
				b := newHistory(strict)
				b.write(1, 10, 20, ok, 43, "c1-7")
				b.write(0, 30, 40, rejected, 42, "c0-1")
				b.read(2, 50, 60, 43, "c1-7")
				return b.h, nil
			},
			want: map[Property]Verdict{Register: Held},
			check: func(t *testing.T, rep *Report) {
				require.Len(t, rep.StaleWrites, 1)
				assert.Equal(t, StaleWrite{Write: 2, Client: 0, Token: 42, At: 30, Status: "rejected", Newer: 1, NewerClient: 1, NewerToken: 43, NewerAt: 20}, rep.StaleWrites[0])
				assert.Equal(t, 1, rep.Evidence.StaleRejected)
				assert.Equal(t, 1, rep.Evidence.WritesRefused)
			},
		},
		{
			name: "lost update through a reused token under a monotonic fence: register held, updates violated",
			build: func() (*history.History, []int) {
				b := newHistory(mono)
				b.acquire(0, 0, 1, ok, 7)
				b.acquire(1, 0, 2, ok, 7) // the counter was lost: token 7 again
				r0 := b.read(0, 2, 3, 0, "")
				r1 := b.read(1, 3, 4, 0, "")
				w0 := b.rmw(0, 5, 6, ok, 7, "c0-1", r0)
				w1 := b.rmw(1, 7, 8, ok, 7, "c1-1", r1) // equal token passes a monotonic fence
				b.write(2, 9, 10, rejected, 6, "c2-1")
				b.read(2, 11, 12, 7, "c1-1")
				return b.h, []int{w1, w0}
			},
			want: map[Property]Verdict{Register: Held, Updates: Violated, Tokens: Violated, Mutex: Violated},
			check: func(t *testing.T, rep *Report) {
				require.Len(t, rep.LostUpdates, 1)
				l := rep.LostUpdates[0]
				assert.Equal(t, 6, l.Write)
				assert.Equal(t, 5, l.Lost)
				assert.Equal(t, 4, l.ReadID)
				assert.Equal(t, "", l.ReadValue)
			},
		},
		{
			name: "the same history under a strict fence: the equal token is a violation of the register",
			build: func() (*history.History, []int) {
				b := newHistory(strict)
				r0 := b.read(0, 2, 3, 0, "")
				r1 := b.read(1, 3, 4, 0, "")
				w0 := b.rmw(0, 5, 6, ok, 7, "c0-1", r0)
				w1 := b.rmw(1, 7, 8, ok, 7, "c1-1", r1)
				return b.h, []int{w1, w0}
			},
			want: map[Property]Verdict{Register: Violated, Updates: Violated},
		},
		{
			name: "an update lost to a write that came between the read value's write and the write",
			build: func() (*history.History, []int) {
				b := newHistory(strict)
				p := b.write(0, 0, 1, ok, 1, "p")
				r := b.read(1, 2, 3, 1, "p")
				y := b.write(2, 4, 5, ok, 2, "y")
				w := b.rmw(1, 6, 7, ok, 3, "w", r)
				_ = p
				return b.h, []int{w, y}
			},
			want: map[Property]Verdict{Register: Held, Updates: Violated},
			check: func(t *testing.T, rep *Report) {
				require.Len(t, rep.LostUpdates, 1)
				assert.Equal(t, LostUpdate{Write: 4, Client: 1, ReadID: 2, ReadValue: "p", Lost: 3,
					Explanation: rep.LostUpdates[0].Explanation}, rep.LostUpdates[0])
			},
		},
		{
			name: "a chain through an unknown write that a later read-modify-write read: updates held",
			build: func() (*history.History, []int) {
				b := newHistory(strict)
				r0 := b.read(0, 0, 1, 0, "")
				b.rmw(0, 2, never, unknown, 1, "a", r0)
				r1 := b.read(1, 5, 6, 1, "a")
				b.rmw(1, 7, 8, ok, 2, "b", r1)
				b.write(0, 9, 10, rejected, 1, "c0-2")
				return b.h, nil
			},
			want: map[Property]Verdict{Register: Held, Updates: Held},
		},
		{
			name: "tokens go backwards: tokens violated",
			build: func() (*history.History, []int) {
				b := newHistory(strict)
				a5 := b.acquire(0, 0, 1, ok, 5)
				b.release(0, 2, 3, ok, 5)
				a3 := b.acquire(1, 5, 6, ok, 3)
				return b.h, []int{a3, a5}
			},
			want: map[Property]Verdict{Tokens: Violated, Mutex: Held},
		},
		{
			name: "concurrent grants in either order: tokens held",
			build: func() (*history.History, []int) {
				b := newHistory(strict)
				b.acquire(0, 0, 10, ok, 5)
				b.acquire(1, 2, 4, ok, 3)
				return b.h, nil
			},
			want: map[Property]Verdict{Tokens: Held, Mutex: Violated},
		},
		{
			name: "overlapping holds: mutex violated with a positive validity gap",
			build: func() (*history.History, []int) {
				b := newHistory(strict)
				a0 := b.acquire(0, 0, 1, ok, 1)
				a1 := b.acquire(1, 5, 6, ok, 2)
				b.release(0, 10, 11, ok, 1)
				b.release(1, 12, 13, ok, 2)
				return b.h, []int{a0, a1}
			},
			want: map[Property]Verdict{Mutex: Violated, Tokens: Held},
			check: func(t *testing.T, rep *Report) {
				assert.Equal(t, int64(4), rep.Evidence.ValidityGapNanos) // [1,10] ∩ [6,12]
				assert.Equal(t, int64(4), rep.Evidence.ValidityGapTotalNanos)
			},
		},
		{
			name: "a release that returned unknown ends the belief at its call",
			build: func() (*history.History, []int) {
				b := newHistory(strict)
				b.acquire(0, 0, 1, ok, 1)
				b.release(0, 2, never, unknown, 1)
				b.acquire(1, 3, 4, ok, 2)
				b.release(1, 5, 6, ok, 2)
				return b.h, nil
			},
			want: map[Property]Verdict{Mutex: Held, Tokens: Held},
			check: func(t *testing.T, rep *Report) {
				assert.Equal(t, int64(0), rep.Evidence.ValidityGapNanos)
			},
		},
		{
			name: "a hold never released blocks every later acquire",
			build: func() (*history.History, []int) {
				b := newHistory(strict)
				a0 := b.acquire(0, 0, 1, ok, 1)
				a1 := b.acquire(1, 5, 6, ok, 2)
				b.release(1, 7, 8, ok, 2)
				return b.h, []int{a0, a1}
			},
			want: map[Property]Verdict{Mutex: Violated},
		},
		{
			name: "an unknown write nobody read explains a rejection",
			build: func() (*history.History, []int) {
				b := newHistory(strict)
				b.write(0, 0, never, unknown, 10, "u")
				b.write(1, 1, 2, rejected, 7, "x")
				b.write(2, 3, 4, ok, 11, "w")
				b.read(2, 5, 6, 11, "w")
				return b.h, nil
			},
			want: map[Property]Verdict{Register: Held},
		},
		{
			name: "a rejection nothing can explain: register violated",
			build: func() (*history.History, []int) {
				b := newHistory(strict)
				x := b.write(1, 1, 2, rejected, 7, "x")
				b.write(0, 3, never, unknown, 10, "u") // called after x returned
				w := b.write(2, 5, 6, ok, 11, "w")
				return b.h, []int{x, w}
			},
			want: map[Property]Verdict{Register: Violated},
		},
		{
			name: "an unread unknown write with an accepted token cannot explain a rejection under a strict fence",
			build: func() (*history.History, []int) {
				b := newHistory(strict)
				b.write(0, 0, never, unknown, 5, "u")
				x := b.write(1, 0, 1, rejected, 4, "x")
				w := b.write(2, 2, 3, ok, 5, "w")
				b.read(2, 4, 5, 5, "w")
				return b.h, []int{x, w}
			},
			want: map[Property]Verdict{Register: Violated},
		},
		{
			name: "the same under a monotonic fence: it can",
			build: func() (*history.History, []int) {
				b := newHistory(mono)
				b.write(0, 0, never, unknown, 5, "u")
				b.write(1, 0, 1, rejected, 4, "x")
				b.write(2, 2, 3, ok, 5, "w")
				b.read(2, 4, 5, 5, "w")
				return b.h, nil
			},
			want: map[Property]Verdict{Register: Held},
		},
		{
			name: "equal tokens under a monotonic fence: the write that must go first decides when the rejection is explained",
			build: func() (*history.History, []int) {
				// a could take effect at 0, but its value is read after b returned, so b
				// goes first, at 1 at the earliest: too late for x, rejected by 0.
				b := newHistory(mono)
				a := b.write(0, 0, 10, ok, 5, "a")
				bw := b.write(1, 1, 2, ok, 5, "b")
				b.read(2, 3, 4, 5, "a")
				x := b.write(3, 0, 0, rejected, 4, "x")
				_, _ = a, bw
				return b.h, []int{x, bw}
			},
			want: map[Property]Verdict{Register: Violated},
		},
		{
			name: "the same with the rejection returning at 1: b explains it",
			build: func() (*history.History, []int) {
				b := newHistory(mono)
				b.write(0, 0, 10, ok, 5, "a")
				b.write(1, 1, 2, ok, 5, "b")
				b.read(2, 3, 4, 5, "a")
				b.write(3, 0, 1, rejected, 4, "x")
				return b.h, nil
			},
			want: map[Property]Verdict{Register: Held},
		},
		{
			name: "a read returns a value before its write was called",
			build: func() (*history.History, []int) {
				b := newHistory(strict)
				r := b.read(0, 0, 1, 1, "a")
				w := b.write(1, 2, 3, ok, 1, "a")
				return b.h, []int{r, w}
			},
			want: map[Property]Verdict{Register: Violated},
		},
		{
			name: "a read returns a value no write wrote",
			build: func() (*history.History, []int) {
				b := newHistory(strict)
				r := b.read(0, 0, 1, 1, "ghost")
				return b.h, []int{r}
			},
			want: map[Property]Verdict{Register: Violated},
		},
		{
			name: "a read returns a rejected write's value",
			build: func() (*history.History, []int) {
				b := newHistory(strict)
				w := b.write(1, 0, 1, rejected, 0, "a")
				r := b.read(0, 2, 3, 0, "a")
				return b.h, []int{r, w}
			},
			want: map[Property]Verdict{Register: Violated},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, wantCE := tc.build()
			require.NoError(t, h.Validate())
			rep, err := Check(context.Background(), h, Options{})
			require.NoError(t, err)
			require.True(t, rep.Agree, "porcupine and the direct analysis disagree: %+v", rep.Results)
			for _, p := range Properties {
				want, ok := tc.want[p]
				if !ok {
					continue
				}
				res, _ := rep.Result(p)
				assert.Equal(t, want, rep.Verdicts[p], "%s: %s", p, res.Explanation)
				assert.NotEmpty(t, res.Explanation)
			}
			if wantCE != nil {
				for _, p := range Properties {
					if tc.want[p] == Violated {
						res, _ := rep.Result(p)
						assert.Equal(t, wantCE, res.Counterexample, "%s counterexample (%s)", p, res.Explanation)
						break
					}
				}
			}
			if tc.check != nil {
				tc.check(t, rep)
			}
		})
	}
}

// The direct analysis gives the verdict whatever becomes of porcupine's second opinion,
// and the report says which it was.
func TestPorcupineSecondOpinion(t *testing.T) {
	h := realisticHistory(10000)
	want := map[Property]Verdict{Register: Held, Updates: Held, Tokens: Held, Mutex: Violated}
	for _, tc := range []struct {
		name string
		opt  Options
		want Opinion
		note string
	}{
		{"waits", Options{PorcupineBudget: WaitForPorcupine}, OpinionAgreed, "porcupine agrees"},
		{"times out", Options{Timeout: time.Nanosecond}, OpinionTimedOut, "no answer"},
		{"skipped", Options{PorcupineBudget: NoPorcupine}, OpinionSkipped, "budget 0"},
		{"too big", Options{PorcupineMaxBytes: 1}, OpinionSkipped, "grows as n²"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Check(context.Background(), h, tc.opt)
			require.NoError(t, err)
			require.Equal(t, want, rep.Verdicts)
			for _, r := range rep.Results {
				assert.Equal(t, tc.want, r.Porcupine, r.Property)
				assert.Contains(t, r.PorcupineNote, tc.note, r.Property)
			}
			assert.True(t, rep.Agree, "a second opinion that did not answer cannot disagree")
			assert.Empty(t, rep.Trouble())
			mutex, _ := rep.Result(Mutex)
			assert.True(t, mutex.Certified, "the mutex violation is certified in every case: %s", mutex.CertifyNote)
		})
	}
}

func TestCheckLargeHistoryWithDeadline(t *testing.T) {
	h := realisticHistory(10000)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := Check(ctx, h, Options{})
	require.NoError(t, err)
	assert.True(t, rep.Agree)
	assert.Equal(t, Held, rep.Verdicts[Register])
	assert.Equal(t, Held, rep.Verdicts[Updates])
	assert.Equal(t, Held, rep.Verdicts[Tokens])
	assert.Equal(t, Violated, rep.Verdicts[Mutex], "leases expire during pauses")
	assert.Positive(t, rep.Evidence.StaleRejected)
	assert.Zero(t, rep.Evidence.StaleAccepted)
	assert.Positive(t, rep.Evidence.ValidityGapNanos)
	assert.Positive(t, rep.Evidence.LongestNoAcceptedWriteNanos)
}

// A stale write is named against the newest accepted write it fails against — the one
// that fenced it out — not the first, which may be its own client's earlier write with
// the same token. Under both fences the sentence stays true.
func TestStaleWriteNamesTheNewestWrite(t *testing.T) {
	for _, tc := range []struct {
		name, fence string
		stale       history.Status
		wantNewer   int // index into the ops below: 1 own 56, 2 client 2's 57
	}{
		{"strict, rejected", strict, rejected, 2},
		{"monotonic, rejected", history.FenceMonotonic, rejected, 2},
		{"strict, accepted", strict, ok, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newHistory(tc.fence)
			own := b.write(1, 10, 20, ok, 56, "c1-1")
			other := b.write(2, 30, 40, ok, 57, "c2-1")
			stale := b.write(1, 50, 60, tc.stale, 56, "c1-2")
			d := Direct(b.h)
			require.Len(t, d.StaleWrites, 1)
			s := d.StaleWrites[0]
			require.Equal(t, stale, s.Write)
			assert.Equal(t, []int{0, own, other}[tc.wantNewer], s.Newer)
			assert.Equal(t, 2, s.NewerClient)
			assert.EqualValues(t, 57, s.NewerToken)
			assert.Less(t, s.NewerAt, s.At, "the newer write was in effect before the stale one was called")
		})
	}
}

// Every violation carries a witness porcupine confirmed, small and naming the right ops.
func TestWitnessIsSmallAndCertified(t *testing.T) {
	b := newHistory(strict)
	for i := range 200 { // a long legal prefix the witness must not drag in
		b.write(i%3, int64(10*i), int64(10*i+5), ok, int64(i+1), fmt.Sprintf("v%d", i))
	}
	newer := b.write(0, 5000, 5010, ok, 500, "new")
	stale := b.write(1, 5020, 5030, ok, 400, "stale")
	rep, err := Check(context.Background(), b.h, Options{})
	require.NoError(t, err)
	r, _ := rep.Result(Register)
	require.Equal(t, Violated, r.Verdict)
	require.True(t, r.Certified, r.CertifyNote)
	assert.ElementsMatch(t, []int{newer, stale}, r.Witness)
	assert.Empty(t, rep.Trouble())
}

// When the ops the direct analysis names are not illegal on their own, the witness grows
// around them until porcupine confirms it. Here a rejection has one possible explainer,
// write #2, but a read of the older write #1 pins #2 after the rejected write returned;
// the first cut (the rejection and #2) is legal, the widened one is not.
func TestWitnessWidens(t *testing.T) {
	b := newHistory(strict)
	w7 := b.write(0, 0, 5, ok, 7, "a")
	w8 := b.write(1, 1, 100, ok, 8, "b")
	x := b.write(2, 10, 40, rejected, 8, "c")
	r := b.read(3, 50, 60, 7, "a")
	rep, err := Check(context.Background(), b.h, Options{})
	require.NoError(t, err)
	res, _ := rep.Result(Register)
	require.Equal(t, Violated, res.Verdict, res.Explanation)
	require.True(t, res.Certified, res.CertifyNote)
	assert.ElementsMatch(t, []int{x, w8}, res.Counterexample, "the ops the direct analysis names")
	assert.ElementsMatch(t, []int{w7, w8, x, r}, res.Witness, "the ops porcupine needed")
	assert.Empty(t, rep.Trouble())
}
