package ownlock

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck"
	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/harnesstest"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/reports"
)

// The backend meets fencecheck's contract: increasing tokens, ctx honoured, only the
// given addresses dialled, Lost closed when the lease is gone, Close safe twice, and
// the started values agree with the descriptor's Shape.
func TestContract(t *testing.T) { harnesstest.Descriptor(t, Descriptor()) }

// The contract with settings of its own: a TTL other than the descriptor's (with
// options, Settings.Options would give them by name).
func TestContractWithSettings(t *testing.T) {
	harnesstest.DescriptorWith(t, Descriptor(), registry.Settings{TTL: time.Second})
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
// past its TTL, and the fenced register refuses its late write. The run's summary goes
// to the test's log.
func TestFencedPause(t *testing.T) {
	ctx := context.Background()
	res, err := fencecheck.Run(ctx, fencecheck.Config{
		Backend:  Descriptor(),
		Resource: "fenced",
		Faults:   []string{"pause"},
		Store:    t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Report.Verdicts[models.Register] != models.Held {
		t.Errorf("a stale write got through (evidence in %s)", res.Dir)
	}
	reports.Summary(t.Output(), res.History, res.Report)
	t.Logf("run %s: %s", res.Label, res.Dir)

	if res.Report.Evidence.StaleRejected == 0 {
		t.Errorf("no stale write was rejected: the pause did not test the fence (evidence in %s)", res.Dir)
	}
	if res.Label != "tinylock-fenced-pause" {
		t.Errorf("the run is labelled %q, not tinylock-fenced-pause", res.Label)
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
// fails with the scorecard's plain-language reason when not, and prints the scorecard
// to its log.
func TestScorecard(t *testing.T) {
	ctx := context.Background()
	ev, err := fencecheck.Evaluate(ctx, fencecheck.Config{Backend: Descriptor(), Store: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if ev.Interrupted || !ev.Safe {
		t.Fatalf("not shown safe with fencing: %s (scorecard: %s)", ev.Verdict, ev.Dir)
	}
	reports.PrintScorecard(t.Output(), ev.Scorecard)
}

// The plan of an evaluation: the faults that apply and the runs, without a store, as
// nothing runs.
func TestPlan(t *testing.T) {
	ctx := context.Background()
	p, err := fencecheck.Plan(ctx, fencecheck.Config{Backend: Descriptor()})
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range p.Scorecard.Rows {
		t.Logf("%s: %s", row.Fault, row.Meaning)
	}
	for _, job := range p.Jobs {
		t.Logf("%s against %s", job.Fault, job.Resource)
	}

	var faults []string
	for _, row := range p.Scorecard.Rows {
		faults = append(faults, row.Fault)
	}
	// pause applies to every backend; crash needs a harness.Crasher, which the tiny
	// server is not.
	if !slices.Contains(faults, "pause") || slices.Contains(faults, "crash") {
		t.Errorf("the faults that apply: %v, want pause and not crash", faults)
	}
}
