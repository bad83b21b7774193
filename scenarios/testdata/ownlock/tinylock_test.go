package ownlock

import (
	"context"
	"testing"

	"github.com/fencecheck/fencecheck/harness/builtin"
	"github.com/fencecheck/fencecheck/harness/harnesstest"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/scenarios"
)

// The backend meets fencecheck's contract: increasing tokens, ctx honoured, only the
// given addresses dialled, Lost closed when the lease is gone, Close safe twice.
func TestContract(t *testing.T) {
	harnesstest.Descriptor(t, Descriptor())
}

// One scenario against the tiny lock: the holder pauses past its TTL, and the fenced
// register refuses its late write.
func TestFencedPause(t *testing.T) {
	reg := builtin.Registry()
	if err := reg.AddBackend(Descriptor()); err != nil {
		t.Fatal(err)
	}
	o, err := scenarios.Execute(context.Background(), scenarios.Spec{Backend: "tinylock", Resource: "fenced", Faults: []string{"pause"}},
		scenarios.Options{Registry: reg, OutDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if got := o.Report.Verdicts[models.Register]; got != models.Held {
		t.Errorf("register: %s, want held", got)
	}
	if o.Report.Evidence.StaleRejected == 0 {
		t.Errorf("no stale write was rejected: the pause did not test the fence")
	}
}

// The evaluate scorecard: may we adopt the tiny lock with a fenced resource? The test
// fails with the scorecard's plain-language reason when not.
func TestScorecard(t *testing.T) {
	reg := builtin.Registry()
	if err := reg.AddBackend(Descriptor()); err != nil {
		t.Fatal(err)
	}
	sc, dir, interrupted, err := scenarios.Evaluate(context.Background(),
		scenarios.EvaluateConfig{Registry: reg, Backend: "tinylock"},
		scenarios.Campaign{Store: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if interrupted || !sc.Safe {
		t.Fatalf("tinylock is not shown safe with fencing: %s (scorecard: %s)", sc.Verdict, dir)
	}
	t.Logf("%s", sc.Verdict)
}
