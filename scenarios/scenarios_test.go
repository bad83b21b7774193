package scenarios

import (
	"cmp"
	"context"
	"os"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/backend/clienthost"
	"github.com/fencecheck/fencecheck/backend/etcd/etcdtest"
	"github.com/fencecheck/fencecheck/builtin"
	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/harness/nemesis/nemesistest"
	"github.com/fencecheck/fencecheck/harness/proc/proctest"
	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/spec"
	"github.com/fencecheck/fencecheck/trial"
)

// TestMain checks that no goroutine outlives the tests. Embedded etcd members leave an
// idle peer connection behind for up to 5 s after Close, so it waits for them to drain.
//
// Unless -parallel is given, it lets as many tests run at once as TestCatalogue's
// budget has units: a scenario's run mostly waits on its faults and its TTLs, and the
// budget, not the test runner's one-per-CPU default, bounds what the runs cost the
// machine together.
func TestMain(m *testing.M) {
	// The runs with a process pause host their lock clients in this test binary.
	clienthost.ServeIfHost(builtin.HostLockers)
	proctest.Parallel(budgetUnits())
	os.Exit(etcdtest.VerifyNoLeaks(m))
}

// budgetUnits is how many units of run cost (weight) the catalogue spends at a time:
// six per CPU Go may use (the whole catalogue uses about half a CPU on average).
func budgetUnits() int { return 6 * runtime.GOMAXPROCS(0) }

// budget is a counting semaphore of cost units.
type budget struct {
	mu   sync.Mutex
	cond *sync.Cond
	free int
}

func newBudget(units int) *budget {
	b := &budget{free: units}
	b.cond = sync.NewCond(&b.mu)
	return b
}

// take waits until n units are free and takes them (at most all of them).
func (b *budget) take(n int) (release func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.free < n {
		b.cond.Wait()
	}
	b.free -= n
	return func() {
		b.mu.Lock()
		b.free += n
		b.mu.Unlock()
		b.cond.Broadcast()
	}
}

// weight is what a scenario's run costs the machine, in units of a run of a service in
// this process (naive, raft, embedded etcd, SQLite): a service or resource of programs
// of its own (what its descriptor Needs: a JVM, a database server, a kube-apiserver)
// costs two, a cluster one more.
func weight(reg *registry.Registry, sc catalogue.Scenario) int {
	r, err := spec.Resolve(reg, sc.Spec)
	if err != nil {
		return 1
	}
	w := 1
	if len(r.Backend.NeedsOf(r.Settings)) > 0 || len(r.Resource.NeedsOf(r.ResourceSettings)) > 0 {
		w = 2
	}
	if r.Spec.Members > 1 {
		w++
	}
	return min(w, budgetUnits())
}

// TestCatalogue runs every scenario the built-in packages declare and compares all four
// verdicts and the evidence with the scenario's, and runs its history check. The faults are targeted and heal on events, so the verdicts are the
// same on every run and every seed.
//
// The runs go several at a time, within a budget of cost units (weight), the costliest
// first, so that they neither crowd the CPUs nor leave the longest for last.
func TestCatalogue(t *testing.T) {
	reg := builtin.Registry()
	scs := builtin.Catalogue()
	weights := make(map[string]int, len(scs))
	for _, sc := range scs {
		weights[sc.Name] = weight(reg, sc)
	}
	// The costliest first, and among equals the longest TTL (its holds are longest).
	slices.SortStableFunc(scs, func(a, b catalogue.Scenario) int {
		return cmp.Or(cmp.Compare(weights[b.Name], weights[a.Name]), cmp.Compare(b.TTL, a.TTL))
	})
	units := newBudget(budgetUnits())
	for _, sc := range scs {
		t.Run(sc.Name, func(t *testing.T) {
			skipUnavailable(t, sc.Spec)
			t.Parallel()
			defer units.take(weights[sc.Name])()
			dir := t.TempDir()
			o, err := trial.Run(context.Background(), reg, sc.Spec, trial.Options{Dir: dir, Host: selfHost(t)})
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

// selfHost is this test binary as a client host (TestMain serves it).
func selfHost(t *testing.T) *clienthost.Host {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	return &clienthost.Host{Exe: exe}
}
