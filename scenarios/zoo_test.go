package scenarios

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/builtin"
	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/spec"
	"github.com/fencecheck/fencecheck/trial"
)

// TestZoo runs every entry of the bug zoo whose software is here, once (seed 1): its
// bug must violate the entry's property for the reason the tracker describes (the
// counterexample names the operations that show it, Bug.Shown), and its control must
// hold that property. `go test ./scenarios/... -run Zoo`; the figures over 20 seeds are
// `fencecheck zoo --runs 20` (docs/zoo.md).
func TestZoo(t *testing.T) {
	reg := builtin.Registry()
	zoo, _ := builtin.Zoo()
	require.NoError(t, zoo.Check(func(s spec.Spec) error {
		_, err := spec.Resolve(reg, s)
		return err
	}), "the zoo's entries")
	units := newBudget(budgetUnits())
	for _, b := range zoo {
		bug, control := b.Scenarios()
		for _, sc := range []catalogue.Scenario{bug, control} {
			t.Run(sc.Name, func(t *testing.T) {
				skipUnavailable(t, sc.Spec)
				t.Parallel()
				defer units.take(weight(reg, sc))()
				o, err := trial.Run(context.Background(), reg, sc.Spec, trial.Options{Dir: t.TempDir(), Host: selfHost(t)})
				require.NoError(t, err)
				require.Empty(t, sc.Expect.Diff(o.Report), "%s: %s\nfaults: %+v", sc.Name, sc.About, o.History.Faults)
				if sc.Name == b.BugScenario() {
					require.NoError(t, b.Shown(o.History, o.Report), "why the bug run failed")
				}
				res, _ := o.Report.Result(b.Property)
				t.Logf("%s: %s %s, counterexample %v; workload %v, %d ops", sc.Name, b.Property, res.Verdict, res.Counterexample, o.Workload, len(o.History.Ops))
			})
		}
	}
}
