package scenarios

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/harness/builtin"
	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/harness/lease/etcd/etcdtest"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/nemesis/nemesistest"
	"github.com/fencecheck/fencecheck/spec"
	"github.com/fencecheck/fencecheck/trial"
)

// TestMain checks that no goroutine outlives the tests. Embedded etcd members leave an
// idle peer connection behind for up to 5 s after Close, so it waits for them to drain.
func TestMain(m *testing.M) { os.Exit(etcdtest.VerifyNoLeaks(m)) }

// TestCatalogue runs every scenario the built-in packages declare and compares all four
// verdicts and the evidence with the scenario's, and runs its history check. The faults are targeted and heal on events, so the verdicts are the
// same on every run and every seed.
func TestCatalogue(t *testing.T) {
	reg := builtin.Registry()
	for _, sc := range builtin.Catalogue() {
		t.Run(sc.Name, func(t *testing.T) {
			skipUnavailable(t, sc.Spec)
			t.Parallel()
			dir := t.TempDir()
			o, err := trial.Run(context.Background(), reg, sc.Spec, trial.Options{Dir: dir})
			require.NoError(t, err)
			if diffs := sc.Expect.Diff(o.Report); len(diffs) > 0 {
				t.Errorf("verdicts differ from the catalogue: %v\nfaults: %+v\nstale writes: %+v", diffs, o.History.Faults, o.Report.StaleWrites)
			}
			// The fault must have fired and healed: a verdict from a run where it did
			// not would prove nothing. (A scenario without faults, like the 32-bit
			// counter, carries its hazard in the backend itself.)
			if len(sc.Faults) > 0 {
				require.NotEmpty(t, o.History.Faults, "the fault never fired")
			}
			for _, f := range o.History.Faults {
				require.NotNil(t, f.End, "fault %s never healed", f.Kind)
			}
			_, problems := nemesistest.Check(o.History)
			require.Empty(t, problems, "the faults' details disagree with the history")
			require.True(t, o.Report.Agree, "porcupine and the direct analysis disagree")
			if sc.Check != nil {
				require.NoError(t, sc.Check(o.History), "what the scenario's history must show")
			}

			// The saved evidence re-checks to the same verdicts offline.
			h, err := history.ReadFile(dir + "/history.json")
			require.NoError(t, err)
			again, err := models.Check(context.Background(), h, models.Options{})
			require.NoError(t, err)
			require.Equal(t, o.Report.Verdicts, again.Verdicts)
			for _, p := range models.Properties {
				require.FileExists(t, dir+"/porcupine-"+string(p)+".html")
			}
			require.FileExists(t, dir+"/verdict.json")
			t.Logf("%s: workload %v, check %v, %d ops", sc.Name, o.Workload, o.Check, len(o.History.Ops))
		})
	}
}

// skipUnavailable skips a scenario that cannot run here (a program not installed, no
// server configured), in one line that says why and how to get it.
func skipUnavailable(t *testing.T, s spec.Spec) {
	t.Helper()
	if why := spec.Unavailable(builtin.Registry(), s); why != "" {
		t.Skip(why)
	}
}
