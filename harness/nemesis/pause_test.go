package nemesis

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/harness/nemesis/nemesistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// patience is the ceiling of every wait for an event in these tests: generous, because
// a loaded 2-core machine can be many times slower than an idle one, and never spent on
// the passing path, which ends at the event.
const patience = 30 * time.Second

type fakeLink struct {
	mu      sync.Mutex
	stalled bool
	events  []string
}

func (l *fakeLink) Stall() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stalled = true
	l.events = append(l.events, "stall")
}
func (l *fakeLink) Pass() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stalled = false
	l.events = append(l.events, "pass")
}
func (l *fakeLink) Blackhole() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stalled = true
	l.events = append(l.events, "blackhole")
}
func (l *fakeLink) isStalled() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stalled
}

func pauseFault() ClientFault {
	return ClientFault{Kind: "pause", Point: harness.PauseAfterRead, StopWorker: true, MinHold: 20 * time.Millisecond, MaxHold: 10 * time.Second}
}

// The first client at the point is paused, its links stall, and it resumes only after
// another client's write is accepted; the fault fires once and is recorded.
func TestPauseHealsOnAnotherClientsWrite(t *testing.T) {
	rec := history.NewRecorder()
	n, err := New(rec, pauseFault())
	require.NoError(t, err)
	l0, l1 := &fakeLink{}, &fakeLink{}
	n.AddLinks(0, true, l0)
	n.AddLinks(1, true, l1)
	ctx := context.Background()

	n.Gate(0).Pause(ctx, harness.PauseAfterAcquire) // not the armed point: returns at once
	resumed := make(chan struct{})
	go func() {
		n.Gate(0).Pause(ctx, harness.PauseAfterRead)
		close(resumed)
	}()
	require.Eventually(t, func() bool { return n.Active() && l0.isStalled() }, patience, time.Millisecond)
	require.False(t, l1.isStalled(), "only the paused client's links stall")

	// The paused client's own write does not end the pause; client 1's does. The sleep
	// is a window in which the pause must not end (load only lengthens it).
	time.Sleep(50 * time.Millisecond)
	select {
	case <-resumed:
		t.Fatal("resumed before another client's write was accepted")
	default:
	}
	rec.Begin(1, history.Write, 2, "c1-1", nil).Done(history.OK, 2, "c1-1", "")
	<-resumed
	require.False(t, l0.isStalled())
	require.False(t, n.Pending())

	n.Gate(1).Pause(ctx, harness.PauseAfterRead) // fired once only: returns at once
	h := rec.History(history.Run{})
	require.Len(t, h.Faults, 1)
	f := h.Faults[0]
	require.Equal(t, "client-0", f.Target)
	require.NotNil(t, f.End)
	// Healed by the write (or, on a slow machine, at the end of the minimum hold
	// already past it); either way the write is named.
	require.Contains(t, f.Detail, "1 write by another client was accepted during it: client 1's write #1 at")
	n.Heal()
}

// A delay fault stalls the links but lets the worker go on, and heals in the background.
func TestDelayDoesNotStopWorker(t *testing.T) {
	rec := history.NewRecorder()
	f := pauseFault()
	f.Kind, f.Point, f.StopWorker, f.MaxHold = "delay", harness.PauseInWrite, false, 50*time.Millisecond
	n, err := New(rec, f)
	require.NoError(t, err)
	l := &fakeLink{}
	n.AddLinks(2, false, l)
	n.Gate(2).Pause(context.Background(), harness.PauseInWrite)
	require.True(t, l.isStalled(), "returns at once with the links stalled")
	require.Eventually(t, func() bool { return !n.Active() }, patience, time.Millisecond)
	h := rec.History(history.Run{})
	require.Contains(t, h.Faults[0].Detail, "healed at its 0.05 s limit; no other client's write was accepted during it")
	n.Heal()
}

// Heal ends an active pause early and disarms the rest.
func TestHealEndsPause(t *testing.T) {
	rec := history.NewRecorder()
	n, err := New(rec, pauseFault())
	require.NoError(t, err)
	l := &fakeLink{}
	n.AddLinks(0, false, l)
	done := make(chan struct{})
	go func() {
		n.Gate(0).Pause(context.Background(), harness.PauseAfterRead)
		close(done)
	}()
	require.Eventually(t, n.Active, patience, time.Millisecond)
	n.Heal()
	<-done
	require.False(t, l.isStalled())
	require.Equal(t, []string{"stall", "pass"}, l.events)
}

func TestValidate(t *testing.T) {
	for _, f := range []ClientFault{
		{Point: harness.PauseAfterRead, MinHold: 1, MaxHold: 2},
		{Kind: "pause", MinHold: 1, MaxHold: 2},
		{Kind: "pause", Point: harness.PauseAfterRead, MinHold: 3, MaxHold: 2},
	} {
		_, err := New(history.NewRecorder(), f)
		require.Error(t, err)
	}
}

// An Exclusive fault holds the other clients' links after it heals until the struck
// client's next write returns.
func TestExclusiveHoldsOthersUntilOwnWrite(t *testing.T) {
	f := pauseFault()
	f.Exclusive = true
	rec, n, l0, l1, resumed := strikeClient0(t, f)
	// After MinHold (20ms), the next write by another client ends the fault.
	waitMinPassed(t, n)
	rec.Begin(1, history.Write, 2, "c1-1", nil).Done(history.OK, 2, "c1-1", "")
	<-resumed
	require.False(t, l0.isStalled())
	require.True(t, l1.isStalled(), "the other client is held until client 0 writes")
	rec.Begin(0, history.Write, 1, "c0-1", nil).Done(history.Rejected, 1, "c0-1", "")
	require.Eventually(t, func() bool { return !l1.isStalled() }, patience, time.Millisecond)
	n.Heal()
}

// strikeClient0 starts a nemesis of fault f over one link of client 0 and one of client
// 1, and pauses client 0 at PauseAfterRead in a goroutine, returning once the fault is
// active; resumed closes when the pause ends.
func strikeClient0(t *testing.T, f ClientFault) (rec *history.Recorder, n *Nemesis, l0, l1 *fakeLink, resumed chan struct{}) {
	t.Helper()
	rec = history.NewRecorder()
	n, err := New(rec, f)
	require.NoError(t, err)
	l0, l1 = &fakeLink{}, &fakeLink{}
	n.AddLinks(0, true, l0)
	n.AddLinks(1, true, l1)
	resumed = make(chan struct{})
	go func() {
		n.Gate(0).Pause(context.Background(), harness.PauseAfterRead)
		close(resumed)
	}()
	require.Eventually(t, n.Active, patience, time.Millisecond)
	return rec, n, l0, l1, resumed
}

// waitMinPassed waits until the active strike's MinHold has passed (the nemesis saw its
// timer fire): a write after it may end the fault. Waiting for it, not for a while,
// keeps a loaded machine from ending the fault at MaxHold instead.
func waitMinPassed(t *testing.T, n *Nemesis) {
	t.Helper()
	require.Eventually(t, func() bool {
		n.mu.Lock()
		defer n.mu.Unlock()
		for s := range n.strikes {
			return s.minPassed
		}
		return false
	}, patience, time.Millisecond)
}

// With Writes 2, a refusal counts once another client's write was accepted: the fault
// ends at the refused write that follows the accepted one (a reissued token the fence
// caught), and the other clients are held from that moment.
func TestWritesEndOnRefusalAfterAcceptance(t *testing.T) {
	f := pauseFault()
	f.Exclusive, f.Writes, f.MinHold = true, 2, time.Millisecond
	rec, n, _, l1, resumed := strikeClient0(t, f)
	// The writes below must come after MinHold has passed.
	waitMinPassed(t, n)
	rec.Begin(1, history.Write, 2, "c1-1", nil).Done(history.Rejected, 2, "c1-1", "") // before any acceptance: does not count
	rec.Begin(1, history.Write, 2, "c1-2", nil).Done(history.OK, 2, "c1-2", "")
	time.Sleep(50 * time.Millisecond) // a window in which the fault must not end
	select {
	case <-resumed:
		t.Fatal("resumed at the first accepted write; Writes is 2")
	default:
	}
	require.False(t, l1.isStalled())
	rec.Begin(1, history.Write, 2, "c1-3", nil).Done(history.Rejected, 2, "c1-3", "")
	<-resumed
	require.True(t, l1.isStalled(), "the other client is held from the refused write on")
	rec.Begin(0, history.Write, 1, "c0-1", nil).Done(history.OK, 1, "c0-1", "")
	require.Eventually(t, func() bool { return !l1.isStalled() }, patience, time.Millisecond)
	n.Heal()
	h := rec.History(history.Run{})
	require.Len(t, h.Faults, 1)
	require.Contains(t, h.Faults[0].Detail, "healed when client 1's write #3 was refused at")
	require.Contains(t, h.Faults[0].Detail, "after client 1's write #2 was accepted at")
}

// A fault with a fixed hold (a random schedule's, MinHold == MaxHold) used to say "no
// other client's write was accepted" about half the time even when one was: two timers
// fired together and select picked one at random. Its detail must agree with the ops
// every time, whichever way the timing falls on a loaded machine.
func TestFixedHoldDetailAgreesWithHistory(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write bool // another client writes during the hold
	}{
		{"another client writes", true},
		{"nobody writes", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := history.NewRecorder()
			var faults []ClientFault
			for i := range 10 {
				faults = append(faults, ClientFault{Kind: "pause", AnyPoint: true, StopWorker: true, Client: 0, Targeted: true,
					MinHold: 100 * time.Millisecond, MaxHold: 100 * time.Millisecond, Deadline: time.Hour, ArmAfter: time.Duration(i)})
			}
			n, err := New(rec, faults...)
			require.NoError(t, err)
			n.AddLinks(0, true, &fakeLink{})
			n.AddLinks(1, true, &fakeLink{})
			for i := range faults {
				rec.Begin(0, history.Acquire, 0, "", nil).Done(history.OK, int64(2*i+1), "", "")
				resumed := make(chan struct{})
				go func() {
					defer close(resumed)
					n.Gate(0).Pause(context.Background(), harness.PauseAfterAcquire)
				}()
				require.Eventually(t, n.Active, patience, time.Millisecond)
				if tc.write {
					v := fmt.Sprintf("c1-%d", i)
					rec.Begin(1, history.Write, int64(2*i+2), v, nil).Done(history.OK, int64(2*i+2), v, "")
				}
				<-resumed
			}
			n.Heal()
			h := rec.History(history.Run{})
			require.Len(t, h.Faults, len(faults))
			clauses, problems := nemesistest.Check(h)
			require.Empty(t, problems)
			// Start, heal, accepted, and that only the worker was stopped (no process).
			require.Equal(t, 4*len(faults), clauses)
			for _, f := range h.Faults {
				require.Contains(t, f.Detail, "healed after its 0.10 s hold; ")
				require.Contains(t, f.Detail, "only its worker goroutine is blocked")
			}
		})
	}
}
