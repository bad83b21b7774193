package leasetable_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/harness/harnesstest"
	"github.com/fencecheck/fencecheck/harness/lease/leasetable"
	"github.com/fencecheck/fencecheck/harness/lease/pgadvisory"
	"github.com/fencecheck/fencecheck/harness/proc/proctest"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/spec"
	"github.com/fencecheck/fencecheck/trial"
)

var (
	unfencedWant = catalogue.Expect{Verdicts: map[models.Property]models.Verdict{models.Register: models.Violated, models.Tokens: models.Held}, MinStaleAccepted: 1}
	fencedWant   = catalogue.Expect{Verdicts: map[models.Property]models.Verdict{models.Register: models.Held, models.Updates: models.Held, models.Tokens: models.Held}, MinStaleRejected: 1, NoStaleAccepted: true}
)

// Whole runs through trial (fencecheck's registry with these two backends):
// the verdicts the catalogue rows for the lease table will expect.
func TestScenarios(t *testing.T) {
	if testing.Short() {
		t.Skip("whole runs: not in -short")
	}
	pg := map[string]string{leasetable.OptionStore: leasetable.StorePostgres}
	for _, tc := range []struct {
		name string
		s    spec.Spec
		want catalogue.Expect
	}{
		{"sqlite-unfenced-pause", spec.Spec{Backend: leasetable.Name, Resource: "unfenced", Faults: []string{"pause"}}, unfencedWant},
		{"sqlite-fenced-pause", spec.Spec{Backend: leasetable.Name, Resource: "fenced", Faults: []string{"pause"}}, fencedWant},
		{"sqlite-fenced-crash", spec.Spec{Backend: leasetable.Name, Resource: "fenced", Faults: []string{"crash"}}, fencedWant},
		{"sqlite-unfenced-careful-skew", spec.Spec{Backend: leasetable.Name, Resource: "unfenced", Policy: "careful", TTL: time.Second, Faults: []string{"skew"}}, unfencedWant},
		{"sqlite-fenced-careful-skew", spec.Spec{Backend: leasetable.Name, Resource: "fenced", Policy: "careful", TTL: time.Second, Faults: []string{"skew"}}, fencedWant},
		{"sqlite-clienttime-unfenced-pause", spec.Spec{Backend: leasetable.NameClientTime, Resource: "unfenced", Faults: []string{"pause"}}, unfencedWant},
		{"sqlite-clienttime-unfenced-careful-skew", spec.Spec{Backend: leasetable.NameClientTime, Resource: "unfenced", Policy: "careful", TTL: time.Second, Faults: []string{"skew"}}, unfencedWant},
		{"sqlite-clienttime-fenced-careful-skew", spec.Spec{Backend: leasetable.NameClientTime, Resource: "fenced", Policy: "careful", TTL: time.Second, Faults: []string{"skew"}}, fencedWant},
		{"postgres-unfenced-pause", spec.Spec{Backend: leasetable.Name, Resource: "unfenced", Faults: []string{"pause"}, Options: pg}, unfencedWant},
		{"postgres-fenced-pause", spec.Spec{Backend: leasetable.Name, Resource: "fenced", Faults: []string{"pause"}, Options: pg}, fencedWant},
		{"postgres-fenced-crash", spec.Spec{Backend: leasetable.Name, Resource: "fenced", Faults: []string{"crash"}, Options: pg}, fencedWant},
		{"postgres-clienttime-unfenced-careful-skew", spec.Spec{Backend: leasetable.NameClientTime, Resource: "unfenced", Policy: "careful", TTL: time.Second, Faults: []string{"skew"}, Options: pg}, unfencedWant},
		{"postgres-clienttime-fenced-careful-skew", spec.Spec{Backend: leasetable.NameClientTime, Resource: "fenced", Policy: "careful", TTL: time.Second, Faults: []string{"skew"}, Options: pg}, fencedWant},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.s.Options[leasetable.OptionStore] == leasetable.StorePostgres {
				proctest.Skip(t, pgadvisory.ServerNeed)
			}
			o := execute(t, tc.s)
			ev := o.Report.Evidence
			t.Logf("register %s, updates %s, tokens %s; stale writes accepted %d, rejected %d",
				o.Report.Verdicts[models.Register], o.Report.Verdicts[models.Updates], o.Report.Verdicts[models.Tokens], ev.StaleAccepted, ev.StaleRejected)
			for _, f := range o.History.Faults {
				t.Logf("fault %s on %s: %s", f.Kind, f.Target, f.Detail)
			}
			if d := tc.want.Diff(o.Report); len(d) > 0 {
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
