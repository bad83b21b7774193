package models

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/harness/history"
)

// memSource streams a history held in memory, a few ops at a time, as a Scanner would.
type memSource struct {
	h    *history.History
	i    int
	step int
	done bool
}

func (m *memSource) Read(dst []history.Op) (int, error) {
	n := 0
	for n < len(dst) && n < m.step && m.i < len(m.h.Ops) {
		dst[n] = m.h.Ops[m.i].Clone()
		n++
		m.i++
	}
	if m.i == len(m.h.Ops) {
		m.done = true
		return n, io.EOF
	}
	return n, nil
}

func (m *memSource) Header() *history.History {
	h := *m.h
	h.Ops = nil
	if !m.done {
		h.Faults, h.Effects, h.Lost = nil, nil, nil
	}
	return &h
}

func (m *memSource) TailKnown() bool { return m.done }
func (m *memSource) Close() error    { return nil }

// streamCheck checks h as a stream.
// streamCheckAll checks h as a stream, step ops at a time, with every opt-in property
// asked for.
func streamCheckAll(t testing.TB, h *history.History, step int) (*FileResult, error) {
	t.Helper()
	return streamSelect(context.Background(), func() (opSource, error) { return &memSource{h: h, step: step}, nil }, AllProperties)
}

// TestStreamAgreesWithDirect holds the streaming analysis to the direct analysis
// (which TestDirectAgreesWithPorcupine holds to porcupine) on the same generated
// histories, and on multi-key ones: every verdict, the evidence and the stale writes equal, and every
// violation certified on the witness the stream kept: 20,000 histories (2,000 with
// -short or under the race detector); FENCECHECK_AGREE_N sets the number.
func TestStreamAgreesWithDirect(t *testing.T) {
	n := 20_000
	if testing.Short() || raceDetector {
		n = 2_000
	}
	if s := os.Getenv("FENCECHECK_AGREE_N"); s != "" {
		v, err := strconv.Atoi(s)
		require.NoError(t, err, "FENCECHECK_AGREE_N")
		n = v
	}
	var fallbacks, violated, superseded, noticed, neverStruck, acquireErrors atomic.Int64
	var failMu sync.Mutex
	var failures []string
	fail := func(format string, args ...any) {
		failMu.Lock()
		defer failMu.Unlock()
		if len(failures) < 3 {
			failures = append(failures, fmt.Sprintf(format, args...))
		}
	}
	failed := func() bool { failMu.Lock(); defer failMu.Unlock(); return len(failures) > 0 }
	one := func(i int) {
		seed := uint64(20240601)*1_000_003 + uint64(i)
		r := rand.New(rand.NewPCG(seed, 1))
		var h *history.History
		switch {
		case i%10 == 9: // independent keys
			cfg := randomConfig(r)
			cfg.cycles, cfg.keys = true, 2+r.IntN(3)
			cfg.ops *= 3
			h = simulate(cfg, r)
		case i%4 == 2:
			h = arbitraryHistory(r)
		case i%4 == 3:
			h = mutate(simulate(randomConfig(r), r), r)
		default:
			h = simulate(randomConfig(r), r)
		}
		if h.FenceRule() == history.FenceStrict && r.IntN(3) == 0 {
			h.Run.Fence = history.FenceOwner
		}
		addLost(h, r)
		addEvidenceGaps(h, r)
		if h.Validate() != nil {
			return
		}
		d := directSelect(h, AllProperties) // every property, the opt-in ones too
		res, err := streamCheckAll(t, h, 1+r.IntN(5))
		if errors.Is(err, errNeedsMemory) {
			fallbacks.Add(1)
			return
		}
		if err != nil {
			fail("history %d: stream: %v\n%s", i, err, dump(h))
			return
		}
		rep := res.Report
		if res, _ := rep.Result(Register); res.Reason == ReasonFaultNeverStruck {
			neverStruck.Add(1)
		}
		if d.Evidence.FirstAcquireError != "" {
			acquireErrors.Add(1)
		}
		if d.Evidence.Superseded > 0 {
			superseded.Add(1)
		}
		if d.Evidence.NoticeDelayNanos > 0 {
			noticed.Add(1)
		}
		for _, pl := range keyedPlugins(h, AllProperties) { // every property the list decides per key
			p := pl.name()
			// Every verdict, and an inconclusive one's reason, as the in-memory check gives it.
			if dr, sr := directResult(pl, h, len(h.Ops), d), mustResult(rep, p); dr.Verdict != sr.Verdict || dr.Reason != sr.Reason || dr.Why != sr.Why {
				fail("history %d: %s: direct says %s (%s: %s), the stream %s (%s: %s)\n%s", i, p, dr.Verdict, dr.Reason, dr.Why, sr.Verdict, sr.Reason, sr.Why, dump(h))
				return
			}
			got := rep.Verdicts[p] == Violated
			if got != d.Violated(p) {
				rr, _ := rep.Result(p)
				fail("history %d: %s: direct says violated=%v (%s), the stream %v (%s)\n%s", i, p, d.Violated(p), d.Findings[p].Reason, got, rr.Explanation, dump(h))
				return
			}
			if got {
				violated.Add(1)
				rr, _ := rep.Result(p)
				if !p.HasModel() { // no porcupine to certify it: the witness names the ops
					if len(rr.Witness) == 0 || !slices.Equal(rr.Witness, d.Findings[p].Ops) {
						fail("history %d: %s: the stream's witness %v, the direct analysis's %v\n%s", i, p, rr.Witness, d.Findings[p].Ops, dump(h))
						return
					}
					continue
				}
				if !rr.Certified {
					fail("history %d: %s: the stream's witness %v of %v was not confirmed: %s (%s)\n%s", i, p, rr.Witness, rr.Counterexample, rr.CertifyNote, rr.Explanation, dump(h))
					return
				}
			}
		}
		// Where the register is violated, the stream lists the stale writes it can tell
		// in call order: a read that returned a value before its write was even called
		// puts that write in effect earlier than a stream can know.
		want := d.Evidence
		if d.Violated(Register) {
			got := rep.Evidence
			want.StaleAttempted, want.StaleRejected, want.StaleAccepted = got.StaleAttempted, got.StaleRejected, got.StaleAccepted
		}
		if rep.Evidence != want {
			fail("history %d: evidence differs:\ndirect %+v\nstream %+v\n%s", i, d.Evidence, rep.Evidence, dump(h))
			return
		}
		if !d.Violated(Register) && !slices.Equal(rep.StaleWrites, d.StaleWrites) {
			fail("history %d: stale writes differ:\ndirect %+v\nstream %+v\n%s", i, d.StaleWrites, rep.StaleWrites, dump(h))
			return
		}
		if (len(rep.LostUpdates) > 0) != d.Violated(Updates) {
			fail("history %d: lost updates %+v but updates violated=%v\n%s", i, rep.LostUpdates, d.Violated(Updates), dump(h))
		}
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for !failed() {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				one(i)
			}
		})
	}
	wg.Wait()
	for _, f := range failures {
		t.Error(f)
	}
	t.Logf("%d histories, %d checked in memory instead, %d violations certified, %d with a superseded holder, %d with a notice delay", n, fallbacks.Load(), violated.Load(), superseded.Load(), noticed.Load())
	require.Less(t, fallbacks.Load(), int64(n/20), "the stream takes almost every history")
	require.Greater(t, superseded.Load(), int64(n/20), "the lock timing is compared on histories that have some")
	require.Greater(t, noticed.Load(), int64(n/40), "the lock timing is compared on histories that have some")
	require.Greater(t, neverStruck.Load(), int64(n/20), "histories whose faults never struck are compared")
	require.Greater(t, acquireErrors.Load(), int64(n/20), "the first acquire error is compared on histories that have one")
}

func mustResult(rep *Report, p Property) Result {
	r, _ := rep.Result(p)
	return r
}

// addEvidenceGaps gives some failed acquires an error text (the evidence quotes the
// first), and some histories the faults their run asked for, struck or not (a history
// whose faults never struck is inconclusive).
func addEvidenceGaps(h *history.History, r *rand.Rand) {
	for i := range h.Ops {
		if o := &h.Ops[i]; o.Kind == history.Acquire && o.Status != history.OK && r.IntN(2) == 0 {
			o.Error = fmt.Sprintf("acquire %d failed: \x1b[31mrefused\x1b[0m", o.ID)
		}
	}
	switch r.IntN(4) {
	case 0:
		h.Run.Faults = []string{"pause"}
	case 1:
		h.Run.Faults, h.Faults = []string{"pause"}, nil // asked for, never struck
	}
}

// addLost gives about half of h's grants a lost record (a few two), at any time from
// the acquire's call to the end of the history, for the lock-timing evidence.
func addLost(h *history.History, r *rand.Rand) {
	end := h.LastTime()
	for _, o := range h.Ops {
		if o.Kind != history.Acquire || o.Status != history.OK || r.IntN(2) == 0 {
			continue
		}
		for range 1 + r.IntN(4)/3 {
			h.Lost = append(h.Lost, history.Lost{Client: o.Client, AcquireID: o.ID, Token: o.Token, At: o.Call + r.Int64N(end-o.Call+1)})
		}
	}
}
