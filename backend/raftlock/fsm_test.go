package raftlock

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"
	"time"

	hraft "github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"
)

const ms = int64(time.Millisecond)

type fsmHarness struct {
	t      *testing.T
	fsm    *fsm
	index  uint64
	events []event
}

func newFSMHarness(t *testing.T) *fsmHarness {
	h := &fsmHarness{t: t}
	h.fsm = newFSM(func(ev event) { h.events = append(h.events, ev) })
	return h
}

func (h *fsmHarness) apply(c command) result {
	h.index += 2 // gaps, like no-ops and barriers
	data, err := json.Marshal(c)
	require.NoError(h.t, err)
	res, ok := h.fsm.Apply(&hraft.Log{Index: h.index, Type: hraft.LogCommand, Data: data}).(result)
	require.True(h.t, ok)
	return res
}

func TestFSMRules(t *testing.T) {
	h := newFSMHarness(t)
	ttl := 100 * ms

	// Free: granted, token = index, expiry = now + ttl.
	r := h.apply(command{Op: OpAcquire, Owner: "a", TTL: ttl, Now: 1000 * ms})
	require.Equal(t, OutcomeGranted, r.Outcome)
	require.Equal(t, r.Index, r.Token)
	require.Equal(t, 1100*ms, r.Expiry)
	tokA := r.Token

	// Busy before expiry, for others and for the holder itself.
	require.Equal(t, OutcomeBusy, h.apply(command{Op: OpAcquire, Owner: "b", TTL: ttl, Now: 1050 * ms}).Outcome)
	require.Equal(t, OutcomeBusy, h.apply(command{Op: OpAcquire, Owner: "a", TTL: ttl, Now: 1060 * ms}).Outcome)

	// Renew: wrong token and wrong owner refused; right one extends from now.
	require.Equal(t, OutcomeRefused, h.apply(command{Op: OpRenew, Owner: "a", Token: tokA + 1, Now: 1070 * ms}).Outcome)
	require.Equal(t, OutcomeRefused, h.apply(command{Op: OpRenew, Owner: "b", Token: tokA, Now: 1070 * ms}).Outcome)
	r = h.apply(command{Op: OpRenew, Owner: "a", Token: tokA, Now: 1080 * ms})
	require.Equal(t, OutcomeRenewed, r.Outcome)
	require.Equal(t, 1180*ms, r.Expiry)

	// A stale stamp (an older leader clock) does not move FSM time back: still busy.
	r = h.apply(command{Op: OpAcquire, Owner: "b", TTL: ttl, Now: 10 * ms})
	require.Equal(t, OutcomeBusy, r.Outcome)
	require.Equal(t, 1080*ms, r.Now)

	// At expiry: renew refused, acquire granted with a larger token.
	require.Equal(t, OutcomeRefused, h.apply(command{Op: OpRenew, Owner: "a", Token: tokA, Now: 1180 * ms}).Outcome)
	r = h.apply(command{Op: OpAcquire, Owner: "b", TTL: ttl, Now: 1180 * ms})
	require.Equal(t, OutcomeGranted, r.Outcome)
	tokB := r.Token
	require.Greater(t, tokB, tokA)

	// The old holder cannot release; the new one can, then the lock is free at once.
	require.Equal(t, OutcomeNotHolder, h.apply(command{Op: OpRelease, Owner: "a", Token: tokA, Now: 1190 * ms}).Outcome)
	require.Equal(t, OutcomeReleased, h.apply(command{Op: OpRelease, Owner: "b", Token: tokB, Now: 1190 * ms}).Outcome)
	require.Equal(t, OutcomeRefused, h.apply(command{Op: OpRenew, Owner: "b", Token: tokB, Now: 1191 * ms}).Outcome)
	r = h.apply(command{Op: OpAcquire, Owner: "c", TTL: ttl, Now: 1191 * ms})
	require.Equal(t, OutcomeGranted, r.Outcome)
	require.Greater(t, r.Token, tokB)

	// Malformed entries change nothing and are not observed.
	n := len(h.events)
	require.Equal(t, OutcomeInvalid, h.apply(command{Op: "steal", Owner: "x", Now: 5000 * ms}).Outcome)
	require.Equal(t, OutcomeInvalid, h.apply(command{Op: OpAcquire, Owner: "x", Now: 5000 * ms}).Outcome)
	res, ok := h.fsm.Apply(&hraft.Log{Index: 999, Data: []byte("{")}).(result)
	require.True(t, ok)
	require.Equal(t, OutcomeInvalid, res.Outcome)
	require.Len(t, h.events, n)
	require.Equal(t, "c", h.fsm.State().Holder)
	require.Equal(t, 1191*ms, h.fsm.State().LastNow)

	require.NoError(t, checkEvents(h.events))
}

func TestFSMSnapshotRestore(t *testing.T) {
	h := newFSMHarness(t)
	h.apply(command{Op: OpAcquire, Owner: "a", TTL: 100 * ms, Now: 1000 * ms})
	h.apply(command{Op: OpRenew, Owner: "a", Token: 2, Now: 1050 * ms})
	want := h.fsm.State()
	require.Equal(t, state{Holder: "a", Token: 2, Expiry: 1150 * ms, TTL: 100 * ms, LastNow: 1050 * ms}, want)

	snap, err := h.fsm.Snapshot()
	require.NoError(t, err)
	// The snapshot is a copy: later commands do not change it.
	h.apply(command{Op: OpRelease, Owner: "a", Token: 2, Now: 1060 * ms})
	sink := &memSink{}
	require.NoError(t, snap.Persist(sink))
	snap.Release()
	require.True(t, sink.closed)

	restored := newFSM(nil)
	restored.st = state{Holder: "junk", Token: 77} // Restore discards previous state
	require.NoError(t, restored.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))))
	require.Equal(t, want, restored.State())

	// The restored FSM keeps enforcing the lease and FSM-time monotonicity.
	h2 := &fsmHarness{t: t, fsm: restored, index: 10}
	require.Equal(t, OutcomeBusy, h2.apply(command{Op: OpAcquire, Owner: "b", TTL: 100 * ms, Now: 900 * ms}).Outcome)
	require.Equal(t, OutcomeRenewed, h2.apply(command{Op: OpRenew, Owner: "a", Token: 2, Now: 1100 * ms}).Outcome)
	r := h2.apply(command{Op: OpAcquire, Owner: "b", TTL: 100 * ms, Now: 1200 * ms})
	require.Equal(t, OutcomeGranted, r.Outcome)
	require.Equal(t, uint64(16), r.Token)

	// A corrupt snapshot is an error.
	require.Error(t, newFSM(nil).Restore(io.NopCloser(bytes.NewReader([]byte(`{"holder":1}`)))))
}

type memSink struct {
	bytes.Buffer
	closed, cancelled bool
}

func (s *memSink) ID() string                  { return "mem" }
func (s *memSink) Cancel() error               { s.cancelled = true; return nil }
func (s *memSink) Close() error                { s.closed = true; return nil }
func (s *memSink) Write(p []byte) (int, error) { return s.Buffer.Write(p) }

func TestCheckEventsFindsViolations(t *testing.T) {
	ok := []event{
		{Index: 3, Op: OpAcquire, Owner: "a", Token: 3, Now: 100, Outcome: OutcomeGranted, Expiry: 200},
		{Index: 4, Op: OpAcquire, Owner: "b", Now: 150, Outcome: OutcomeBusy, Expiry: 200},
		{Index: 5, Op: OpRenew, Owner: "a", Token: 3, Now: 190, Outcome: OutcomeRenewed, Expiry: 290},
		{Index: 7, Op: OpRelease, Owner: "a", Token: 3, Now: 200, Outcome: OutcomeReleased, Expiry: 290},
		{Index: 8, Op: OpAcquire, Owner: "b", Token: 8, Now: 200, Outcome: OutcomeGranted, Expiry: 300},
		{Index: 9, Op: OpAcquire, Owner: "c", Token: 9, Now: 300, Outcome: OutcomeGranted, Expiry: 400},
	}
	require.NoError(t, checkEvents(ok))

	overlap := []event{
		{Index: 3, Op: OpAcquire, Owner: "a", Token: 3, Now: 100, Outcome: OutcomeGranted, Expiry: 200},
		{Index: 5, Op: OpRenew, Owner: "a", Token: 3, Now: 190, Outcome: OutcomeRenewed, Expiry: 290},
		{Index: 6, Op: OpAcquire, Owner: "b", Token: 6, Now: 250, Outcome: OutcomeGranted, Expiry: 350},
	}
	require.ErrorContains(t, checkEvents(overlap), "held until 290")

	back := []event{
		{Index: 3, Op: OpAcquire, Owner: "a", Token: 3, Now: 100, Outcome: OutcomeGranted, Expiry: 200},
		{Index: 4, Op: OpAcquire, Owner: "b", Now: 90, Outcome: OutcomeBusy, Expiry: 200},
	}
	require.ErrorContains(t, checkEvents(back), "FSM time went back")

	badToken := []event{{Index: 3, Op: OpAcquire, Owner: "a", Token: 2, Now: 100, Outcome: OutcomeGranted, Expiry: 200}}
	require.ErrorContains(t, checkEvents(badToken), "not the entry's index")

	lateRenew := []event{
		{Index: 3, Op: OpAcquire, Owner: "a", Token: 3, Now: 100, Outcome: OutcomeGranted, Expiry: 200},
		{Index: 4, Op: OpRenew, Owner: "a", Token: 3, Now: 200, Outcome: OutcomeRenewed, Expiry: 300},
	}
	require.ErrorContains(t, checkEvents(lateRenew), "not the live grant")
}
