package trial_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/harness/builtin"
	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/harness/proc/proctest"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/nemesis/nemesistest"
	"github.com/fencecheck/fencecheck/spec"
	"github.com/fencecheck/fencecheck/trial"
)

// TestMain keeps go test's one test per CPU: TestFaultDetailsAgreeWithHistory's check
// that its 1.5 s random runs struck often enough failed under -race with four per CPU
// (48 clauses over 20 seeds, where it asks for 60).
func TestMain(m *testing.M) { os.Exit(proctest.VerifyNoLeaks(m)) }

// A random schedule runs to the end with every fault healed, its faults come from the
// schedule the seed drew, and the same seed draws the same schedule.
func TestRandomSchedule(t *testing.T) {
	reg := builtin.Registry()
	s := spec.Spec{Backend: "naive", Resource: "fenced", RandomFaults: []string{"pause", "partition", "delay", "skew", "crash"},
		Duration: 3 * time.Second, TTL: 200 * time.Millisecond, Seed: 7}
	r, err := spec.Resolve(reg, s)
	require.NoError(t, err)
	require.Empty(t, r.Spec.Skipped)
	a, ok := r.Schedule()
	require.True(t, ok)
	again, err := spec.Resolve(reg, s)
	require.NoError(t, err)
	b, _ := again.Schedule()
	require.Equal(t, a, b)
	require.NotEmpty(t, a.Items)

	o, err := trial.Execute(context.Background(), r, trial.Options{})
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
	r, err = spec.Resolve(reg, spec.Spec{Backend: "etcd", RandomFaults: []string{"pause", "skew"}, Duration: 20 * time.Second})
	require.NoError(t, err)
	require.Len(t, r.Spec.Skipped, 1)
	require.Contains(t, r.Spec.Skipped[0], `fault "skew": backend etcd's server clock cannot be skewed`)
	_, err = spec.Resolve(reg, spec.Spec{Backend: "etcd", RandomFaults: []string{"skew"}, Duration: 20 * time.Second})
	require.ErrorIs(t, err, spec.ErrSpec)
}

// An ad-hoc run records the default seed, the one evaluate uses.
func TestDefaultSeed(t *testing.T) {
	o, err := trial.Run(context.Background(), builtin.Registry(), spec.Spec{Backend: "naive", Duration: 300 * time.Millisecond}, trial.Options{})
	require.NoError(t, err)
	require.Equal(t, spec.DefaultSeed, o.History.Run.Seed)
	_, err = trial.Run(context.Background(), nil, spec.Spec{}, trial.Options{})
	require.ErrorIs(t, err, spec.ErrSpec)
}

// A multi-key run records the key of every op, reads every key at the end, and the
// checker (partitioned by key) finds the stale write the pause lets through.
func TestKeyedRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a scenario")
	}
	t.Parallel() // the faults heal on events, not timers
	s := spec.Spec{Name: "naive-unfenced-pause-keys", Backend: "naive", Resource: "unfenced", Faults: []string{"pause"}, Keys: 2, Clients: 4}
	o, err := trial.Run(context.Background(), builtin.Registry(), s, trial.Options{Dir: t.TempDir()})
	require.NoError(t, err)
	keys := models.Keys(o.History)
	require.Equal(t, []string{"k0", "k1"}, keys)
	require.Equal(t, 2, o.History.Run.Extra["keys"])
	for _, op := range o.History.Ops {
		require.NotEmpty(t, op.Key, "op %d", op.ID)
	}
	// The final reads: every client reads every key, after the workload.
	finals := map[string]int{}
	for _, op := range o.History.Ops[len(o.History.Ops)-s.Clients*s.Keys:] {
		require.Equal(t, history.Read, op.Kind)
		finals[op.Key]++
	}
	require.Equal(t, map[string]int{"k0": 4, "k1": 4}, finals)
	require.True(t, o.Report.Agree)
	require.Equal(t, models.Violated, o.Report.Verdicts[models.Register], "a stale write got through on the paused client's key")
	require.Positive(t, o.Report.Evidence.StaleAccepted)
}

// Every fault of a random schedule says in its detail what happened, and the ops of the
// same history agree: the writes it says other clients had accepted during it (or that
// none were), the write it names with its time, where it struck the client and that a
// stopped client called nothing. It asserts agreement, never timing, so a loaded machine
// changes what the details say but not whether they are true.
func TestFaultDetailsAgreeWithHistory(t *testing.T) {
	reg := builtin.Registry()
	var all []string
	for _, f := range reg.Faults() {
		all = append(all, f.Name())
	}
	const seeds = 20
	for _, backend := range []string{"naive", "raft"} {
		t.Run(backend, func(t *testing.T) {
			var mu sync.Mutex
			total, none, some := 0, 0, 0
			kinds := map[string]int{}
			t.Cleanup(func() {
				if !t.Failed() {
					// Not vacuous: the runs struck clients, every clause was checked, and
					// both outcomes occurred (holds shorter than the TTL keep the others
					// out; longer ones let them take the lock over).
					require.GreaterOrEqual(t, total, 3*seeds, "clauses checked over %d seeds", seeds)
					require.Positive(t, none, "faults during which no other client's write was accepted")
					require.Positive(t, some, "faults during which other clients' writes were accepted")
					t.Logf("%s: %d clauses checked; %d faults without and %d with other clients' writes accepted; faults by kind %v", backend, total, none, some, kinds)
				}
			})
			for seed := int64(1); seed <= seeds; seed++ {
				t.Run(fmt.Sprint(seed), func(t *testing.T) {
					t.Parallel()
					s := spec.Spec{Backend: backend, Resource: "fenced", RandomFaults: all, Seed: seed,
						Duration: 1500 * time.Millisecond, TTL: 100 * time.Millisecond}
					o, err := trial.Run(context.Background(), reg, s, trial.Options{})
					require.NoError(t, err)
					clauses, problems := nemesistest.Check(o.History)
					require.Empty(t, problems, "faults: %s", faultLines(o))
					mu.Lock()
					defer mu.Unlock()
					total += clauses
					for _, f := range o.History.Faults {
						kinds[f.Kind]++
						switch {
						case strings.Contains(f.Detail, "no other client's write was accepted during it"):
							none++
						case strings.Contains(f.Detail, "accepted during it"):
							some++
						}
					}
				})
			}
		})
	}
}

func faultLines(o *trial.Outcome) string {
	var b strings.Builder
	for _, f := range o.History.Faults {
		fmt.Fprintf(&b, "\n  %s on %s: %s", f.Kind, f.Target, f.Detail)
	}
	return b.String()
}
