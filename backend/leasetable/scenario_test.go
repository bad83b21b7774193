package leasetable_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/backend/leasetable"
	"github.com/fencecheck/fencecheck/harnesstest"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/spec"
	"github.com/fencecheck/fencecheck/trial"
)

// Every catalogue scenario of the package, run here on fencecheck's registry with the
// two backends only (the catalogue's test runs them too, on the built-in one): each
// gives the verdicts it declares.
func TestScenarios(t *testing.T) {
	if testing.Short() {
		t.Skip("whole runs: not in -short")
	}
	reg := harnesstest.Registry(t, leasetable.Descriptors()...)
	for _, sc := range leasetable.Scenarios() {
		t.Run(sc.Name, func(t *testing.T) {
			harnesstest.SkipUnavailable(t, reg, sc.Spec)
			t.Parallel() // each run starts its own store; its faults heal on events
			o := execute(t, sc.Spec)
			ev := o.Report.Evidence
			t.Logf("register %s, updates %s, tokens %s; stale writes accepted %d, rejected %d",
				o.Report.Verdicts[models.Register], o.Report.Verdicts[models.Updates], o.Report.Verdicts[models.Tokens], ev.StaleAccepted, ev.StaleRejected)
			for _, f := range o.History.Faults {
				t.Logf("fault %s on %s: %s", f.Kind, f.Target, f.Detail)
			}
			if d := sc.Expect.Diff(o.Report); len(d) > 0 {
				t.Errorf("%s", strings.Join(d, "; "))
			}
		})
	}
}

// The database's clock of PostgreSQL is its server's: skew is refused for the
// database-time variant there, before anything starts.
func TestPostgresDatabaseTimeRefusesSkew(t *testing.T) {
	reg := harnesstest.Registry(t, leasetable.Descriptors()...)
	_, err := trial.Run(context.Background(), reg, spec.Spec{Backend: leasetable.Name, Resource: "fenced", Faults: []string{"skew"},
		Options: map[string]string{leasetable.OptionStore: leasetable.StorePostgres}}, trial.Options{})
	if !errors.Is(err, spec.ErrSpec) || !strings.Contains(err.Error(), "skew") {
		t.Fatalf("got %v, want the skew fault refused as a spec error", err)
	}
}

func execute(t *testing.T, s spec.Spec) *trial.Outcome {
	t.Helper()
	reg := harnesstest.Registry(t, leasetable.Descriptors()...)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	o, err := trial.Run(ctx, reg, s, trial.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return o
}
