package scenarios

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/harness/lease/etcd/etcdtest"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/nemesis/nemesistest"
)

// TestMain checks that no goroutine outlives the tests. Embedded etcd members leave an
// idle peer connection behind for up to 5 s after Close, so it waits for them to drain.
func TestMain(m *testing.M) { os.Exit(etcdtest.VerifyNoLeaks(m)) }

// TestCatalogue runs every scenario and compares all four verdicts and the evidence with
// the catalogue. The faults are targeted and heal on events, so the verdicts are the
// same on every run and every seed.
func TestCatalogue(t *testing.T) {
	for _, sc := range Catalogue() {
		t.Run(sc.Name, func(t *testing.T) {
			skipUnavailable(t, sc.Spec)
			skipWithoutPython(t, sc.Spec) // exec_test.go
			t.Parallel()
			dir := t.TempDir()
			o, err := Execute(context.Background(), sc.Spec, Options{OutDir: dir})
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
			checkZookeeperRun(t, sc, o.History) // zookeeper_test.go
			checkServiceRun(t, sc, o.History)   // catalogue_services_test.go
			checkKubeRun(t, sc, o.History)      // catalogue_kube_test.go

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
func skipUnavailable(t *testing.T, s Spec) {
	t.Helper()
	if why := Unavailable(s); why != "" {
		t.Skip(why)
	}
}

func TestSpecErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec Spec
		want string
	}{
		{"unknown backend", Spec{Backend: "chubby"}, `unknown backend "chubby"`},
		{"unknown resource", Spec{Resource: "s3"}, `unknown resource "s3"`},
		{"unknown fault", Spec{Faults: []string{"meteor"}}, `unknown fault "meteor"`},
		{"negative ttl", Spec{TTL: -1}, "ttl must be positive"},
		{"one client", Spec{Clients: 1}, "clients must be between 2 and 64"},
		{"bad fence", Spec{Fence: "loose"}, `unknown fence "loose"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Execute(context.Background(), tc.spec, Options{})
			require.ErrorIs(t, err, ErrSpec)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// A random schedule runs to the end with every fault healed, its faults come from the
// schedule the seed drew, and the same seed draws the same schedule.
func TestRandomSchedule(t *testing.T) {
	spec := Spec{Backend: "naive", Resource: "fenced", RandomFaults: []string{"pause", "partition", "delay", "skew", "crash"},
		Duration: 3 * time.Second, TTL: 200 * time.Millisecond, Seed: 7}
	a, skipped, ok, err := Schedule(spec)
	require.NoError(t, err)
	require.True(t, ok)
	require.Empty(t, skipped)
	b, _, _, _ := Schedule(spec)
	require.Equal(t, a, b)
	require.NotEmpty(t, a.Items)

	o, err := Execute(context.Background(), spec, Options{})
	require.NoError(t, err)
	kinds := map[string]bool{}
	for _, it := range a.Items {
		kinds[it.Kind] = true
	}
	for _, f := range o.History.Faults {
		require.NotNil(t, f.End, "fault %s never healed", f.Kind)
		require.True(t, kinds[f.Kind], "fault %s is not in the schedule", f.Kind)
	}
	require.Equal(t, int64(7), o.History.Run.Seed)
	require.NotEqual(t, models.Violated, o.Report.Verdicts[models.Register], "a fenced register never lets a stale write through")

	// Kinds that cannot apply to a backend are left out of its schedule, with the reason.
	_, skipped, _, err = Schedule(Spec{Backend: "etcd", RandomFaults: []string{"pause", "skew"}, Duration: 20 * time.Second})
	require.NoError(t, err)
	require.Len(t, skipped, 1)
	require.Contains(t, skipped[0], "needs a service clock fencecheck owns")
	_, _, _, err = Schedule(Spec{Backend: "etcd", RandomFaults: []string{"skew"}, Duration: 20 * time.Second})
	require.ErrorIs(t, err, ErrSpec)
}
