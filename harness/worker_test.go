package harness

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/harness/history"
)

// Fakes for one critical section of the worker: a lease whose Lost channel the test
// sets, a locker that grants it, a register that counts writes, a gate that never
// pauses.
type fakeLease struct{ lost chan struct{} }

func (l *fakeLease) Token() int64                           { return 7 }
func (l *fakeLease) TTL() time.Duration                     { return time.Second }
func (l *fakeLease) Lost() <-chan struct{}                  { return l.lost }
func (l *fakeLease) Release(context.Context) error          { return nil }
func (fakeLocker) Close() error                             { return nil }
func (f fakeLocker) Acquire(context.Context) (Lease, error) { return f.lease, nil }

type fakeLocker struct{ lease *fakeLease }

type countingRegister struct{ writes int }

func (r *countingRegister) Read(context.Context) (string, int64, error) { return "", 0, nil }
func (r *countingRegister) Write(context.Context, Lease, string) (bool, error) {
	r.writes++
	return true, nil
}
func (r *countingRegister) Close() error { return nil }

type openGate struct{}

func (openGate) Pause(context.Context, PausePoint) {}

// A heeding client writes while its lease has not been lost, skips the write once its
// Lost channel is closed, and writes under a lease that never signals a loss; a
// trusting one writes whatever the signal says.
func TestHeedingSkipsWriteAfterLoss(t *testing.T) {
	closed := make(chan struct{})
	close(closed)
	for _, tc := range []struct {
		name    string
		lost    chan struct{}
		heeding bool
		writes  int
	}{
		{"heeding, not lost", make(chan struct{}), true, 1},
		{"heeding, lost", closed, true, 0},
		{"heeding, never signals", nil, true, 1},
		{"trusting, lost", closed, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := &countingRegister{}
			w := &Worker{
				Locker: fakeLocker{lease: &fakeLease{lost: tc.lost}}, Resource: reg, Gate: openGate{},
				Rec: history.NewRecorder(), OpTimeout: time.Second, AcquireTimeout: time.Second, Heeding: tc.heeding,
			}
			w.criticalSection(context.Background(), context.Background())
			require.Equal(t, tc.writes, reg.writes)
		})
	}
}
