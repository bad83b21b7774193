package ownlock

import (
	"context"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck"
	"github.com/fencecheck/fencecheck/harness/harnesstest"
	"github.com/fencecheck/fencecheck/models"
)

// The backend meets fencecheck's contract: increasing tokens, ctx honoured, only the
// given addresses dialled, Lost closed when the lease is gone, Close safe twice, and
// the started values agree with the descriptor's Shape.
func TestContract(t *testing.T) {
	harnesstest.Descriptor(t, Descriptor())
}

// A second Release has no effect, and says so.
func TestReleaseTwice(t *testing.T) {
	s, err := Start(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l, err := s.NewLocker(context.Background(), 0, s.Endpoints())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	le, err := l.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	harnesstest.ReleaseOnce(t, le)
}

// One scenario against the tiny lock, started from its descriptor: the holder pauses
// past its TTL, and the fenced register refuses its late write.
func TestFencedPause(t *testing.T) {
	res, err := fencecheck.Run(context.Background(), fencecheck.Config{
		Backend: Descriptor(), Resource: "fenced", Faults: []string{"pause"}, Store: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Report.Verdicts[models.Register]; got != models.Held {
		t.Errorf("register: %s, want held (evidence in %s)", got, res.Dir)
	}
	if res.Report.Evidence.StaleRejected == 0 {
		t.Errorf("no stale write was rejected: the pause did not test the fence (evidence in %s)", res.Dir)
	}
}

// The same pause against a server the test started itself, on the unfenced register:
// the late write gets through. fencecheck uses the server as it is and leaves closing
// it to the test.
func TestStartedUnfencedPause(t *testing.T) {
	s, err := Start(500 * time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := fencecheck.Run(context.Background(), fencecheck.Config{
		Started: s, Resource: "unfenced", Store: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Report.Verdicts[models.Register]; got != models.Violated {
		t.Errorf("register: %s, want violated: a paused holder's late write goes through an unfenced register (evidence in %s)", got, res.Dir)
	}
	if got := res.Spec.TTL; got != 500*time.Millisecond {
		t.Errorf("the run's TTL is %v, not the started server's 500ms", got)
	}
}

// The evaluate scorecard: may we adopt the tiny lock with a fenced resource? The test
// fails with the scorecard's plain-language reason when not.
func TestScorecard(t *testing.T) {
	ev, err := fencecheck.Evaluate(context.Background(), fencecheck.Config{Backend: Descriptor(), Store: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if ev.Interrupted || !ev.Safe {
		t.Fatalf("tinylock is not shown safe with fencing: %s (scorecard: %s)", ev.Verdict, ev.Dir)
	}
	t.Logf("%s", ev.Verdict)
}
