package trial_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/builtin"
	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/harness/nemesis/nemesistest"
	"github.com/fencecheck/fencecheck/harness/proc/proctest"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/spec"
	"github.com/fencecheck/fencecheck/trial"
)

// TestMain keeps go test's one test per CPU (TestFaultDetailsAgreeWithHistory runs its
// seeds 20 at a time until its random runs have struck often enough).
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

// An ad-hoc run records the default seed, the one evaluate uses. The run is bounded by a
// grant (a run without one is a setup error, ErrNoGrant), not by a time in which a
// loaded machine may make none.
func TestDefaultSeed(t *testing.T) {
	o, err := trial.Run(context.Background(), builtin.Registry(), spec.Spec{Backend: "naive", Duration: time.Millisecond, MinGrants: 1}, trial.Options{})
	require.NoError(t, err)
	require.Equal(t, spec.DefaultSeed, o.History.Run.Seed)
	_, err = trial.Run(context.Background(), nil, spec.Spec{}, trial.Options{})
	require.ErrorIs(t, err, spec.ErrSpec)
}

// A spec's MinGrants reaches the runner: the run goes on past a Duration far too short
// until that many acquires were granted, and its history says it was asked for.
func TestMinGrants(t *testing.T) {
	o, err := trial.Run(context.Background(), builtin.Registry(), spec.Spec{Backend: "naive", Duration: time.Millisecond, MinGrants: 15}, trial.Options{})
	require.NoError(t, err)
	grants := 0
	for _, op := range o.History.Ops {
		if op.Kind == history.Acquire && op.Status == history.OK {
			grants++
		}
	}
	require.GreaterOrEqual(t, grants, 15)
	require.Equal(t, 15, o.History.Run.Extra["min_grants"])
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
// changes what the details say but not whether they are true. A random run's faults
// strike only if their client reaches a pause point within the hold, which a loaded
// machine decides: the test runs seeds, 20 at a time, until the clauses and both
// outcomes it needs were seen, not for a fixed number of seeds.
func TestFaultDetailsAgreeWithHistory(t *testing.T) {
	reg := builtin.Registry()
	var all []string
	for _, f := range reg.Faults() {
		all = append(all, f.Name())
	}
	const (
		batch    = 20
		clauses  = 3 * batch // the least that shows the runs struck clients
		maxSeeds = 10 * batch
	)
	for _, backend := range []string{"naive", "raft"} {
		t.Run(backend, func(t *testing.T) {
			var mu sync.Mutex
			total, none, some := 0, 0, 0
			kinds := map[string]int{}
			enough := func() bool {
				mu.Lock()
				defer mu.Unlock()
				return total >= clauses && none > 0 && some > 0
			}
			seeds := int64(0)
			for seeds < maxSeeds && !enough() && !t.Failed() {
				first := seeds + 1
				seeds += batch
				t.Run(fmt.Sprintf("seeds %d-%d", first, seeds), func(t *testing.T) {
					for seed := first; seed <= seeds; seed++ {
						t.Run(fmt.Sprint(seed), func(t *testing.T) {
							t.Parallel()
							s := spec.Spec{Backend: backend, Resource: "fenced", RandomFaults: all, Seed: seed,
								Duration: 1500 * time.Millisecond, TTL: 100 * time.Millisecond}
							o, err := trial.Run(context.Background(), reg, s, trial.Options{})
							require.NoError(t, err)
							n, problems := nemesistest.Check(o.History)
							require.Empty(t, problems, "faults: %s", faultLines(o))
							mu.Lock()
							defer mu.Unlock()
							total += n
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
			if t.Failed() {
				return
			}
			// Not vacuous: the runs struck clients, every clause was checked, and both
			// outcomes occurred (holds shorter than the TTL keep the others out; longer
			// ones let them take the lock over).
			require.GreaterOrEqual(t, total, clauses, "clauses checked over %d seeds", seeds)
			require.Positive(t, none, "faults during which no other client's write was accepted")
			require.Positive(t, some, "faults during which other clients' writes were accepted")
			t.Logf("%s: %d clauses checked over %d seeds; %d faults without and %d with other clients' writes accepted; faults by kind %v", backend, total, seeds, none, some, kinds)
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

// A run in which every acquire failed tested nothing: it is a setup error (a spec error,
// exit 2 on the command line) naming how many acquires failed and the first one's
// error, and its history and verdict are kept; checked again, the history is
// inconclusive for want of a grant.
func TestNoGrantIsASetupError(t *testing.T) {
	script, err := filepath.Abs(filepath.Join("..", "backend", "execlock", "testdata", "refuse.sh"))
	require.NoError(t, err)
	dir := t.TempDir()
	s := spec.Spec{Backend: "exec", Resource: "fenced", Faults: []string{"pause"}, Duration: 300 * time.Millisecond,
		Options: map[string]string{"client-cmd": "sh " + script}}
	o, err := trial.Run(context.Background(), builtin.Registry(), s, trial.Options{Dir: dir})
	require.Nil(t, o)
	require.ErrorIs(t, err, spec.ErrSpec)
	require.ErrorIs(t, err, trial.ErrNoGrant)
	require.Regexp(t, `^setup error: no lock was granted in the run: all \d+ acquire\(s\) failed, the first with "[^"]*connection refused" \(the history: .*history.json\)$`, err.Error())

	res, err := models.CheckFile(context.Background(), filepath.Join(dir, "history.json"), models.Options{})
	require.NoError(t, err)
	require.Zero(t, res.Report.Evidence.Grants)
	for _, p := range models.Properties {
		r, _ := res.Report.Result(p)
		require.Equal(t, models.Inconclusive, r.Verdict, p)
		require.Equal(t, models.ReasonNoGrant, r.Reason, p)
	}
	require.FileExists(t, filepath.Join(dir, "verdict.json"))
	require.Equal(t, []string{"pause"}, res.History.Run.Faults, "the run records the faults it asked for")
}

// A spec's Check asks for an opt-in property: heed is checked on the run of a spec that
// names it (its history has lost records for it to judge), and not on the same run
// without it.
func TestSpecCheck(t *testing.T) {
	s := spec.Spec{Backend: "naive", Resource: "unfenced", Faults: []string{"pause"}}
	o, err := trial.Run(context.Background(), builtin.Registry(), s, trial.Options{})
	require.NoError(t, err)
	_, checked := o.Report.Verdicts[models.Heed]
	require.False(t, checked, "heed is opt-in")

	// Asked for, heed is judged whenever the history has lost records. The resumed
	// holder is told its lease was lost once it tries to renew, which a loaded machine
	// may not get to before the workload ends: up to five seeds, for one that shows it.
	s.Check = []models.Property{models.Heed}
	judged := false
	for seed := int64(1); seed <= 5 && !judged; seed++ {
		s.Seed = seed
		o, err = trial.Run(context.Background(), builtin.Registry(), s, trial.Options{})
		require.NoError(t, err)
		_, checked = o.Report.Verdicts[models.Heed]
		require.Equal(t, len(o.History.Lost) > 0, checked, "seed %d: heed is judged iff the history has lost records", seed)
		judged = checked
	}
	require.True(t, judged, "no run's holder was told its lease was lost")

	s.Check = []models.Property{"heeed"}
	_, err = trial.Run(context.Background(), builtin.Registry(), s, trial.Options{})
	require.ErrorIs(t, err, spec.ErrSpec)
	require.ErrorContains(t, err, `unknown property "heeed" to check`)
}
