package campaign

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/fencecheck/fencecheck/backend/etcd/etcdtest"
	"github.com/fencecheck/fencecheck/builtin"
	"github.com/fencecheck/fencecheck/judge"
	"github.com/fencecheck/fencecheck/spec"
	"github.com/stretchr/testify/require"
)

// Ctrl-C in the middle of a campaign: the run that finished is kept in the store, the
// ones not started are marked interrupted, and none starts after the end.
func TestMain(m *testing.M) { os.Exit(etcdtest.VerifyNoLeaks(m)) }

func TestCampaignInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store := t.TempDir()
	var started atomic.Int32
	specs := []spec.Spec{
		{Backend: "naive", Resource: "fenced"},
		{Backend: "naive", Resource: "unfenced"},
		{Backend: "naive", Resource: "toctou"},
	}
	results, interrupted := Campaign{
		Registry: builtin.Registry(), Store: store,
		Started:  func(int, string) { started.Add(1) },
		Finished: func(int, RunResult) { cancel() },
	}.Run(ctx, specs)
	require.True(t, interrupted)
	require.Equal(t, int32(1), started.Load(), "no run starts after the campaign was interrupted")
	require.NoError(t, results[0].Err)
	require.NotNil(t, results[0].Outcome)
	require.FileExists(t, filepath.Join(results[0].Dir, "history.json"))
	require.Equal(t, "naive-fenced-nofault", results[0].Label)
	for _, r := range results[1:] {
		require.ErrorIs(t, r.Err, ErrInterrupted)
		require.Empty(t, r.Dir)
	}
}

// Runs go Parallel at a time and come back in the plan's order.
func TestCampaignParallel(t *testing.T) {
	specs := []spec.Spec{
		{Backend: "naive", Resource: "fenced", Seed: 1},
		{Backend: "naive", Resource: "fenced", Seed: 2},
		{Backend: "naive", Resource: "unfenced", Seed: 3},
	}
	var running, most atomic.Int32
	results, interrupted := Campaign{
		Registry: builtin.Registry(), Store: t.TempDir(), Parallel: 2,
		Started: func(int, string) {
			n := running.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
		},
		Finished: func(int, RunResult) { running.Add(-1) },
	}.Run(context.Background(), specs)
	require.False(t, interrupted)
	for i, r := range results {
		require.NoError(t, r.Err)
		require.Equal(t, specs[i].Seed, r.Outcome.Spec.Seed, "results in plan order")
	}
	require.LessOrEqual(t, most.Load(), int32(2), "never more than Parallel at a time")
	noStore := Campaign{Registry: builtin.Registry()}.runOne(context.Background(), specs[0], "x")
	require.ErrorContains(t, noStore.Err, "no results store")
	require.ErrorIs(t, noStore.Err, spec.ErrSpec)
	require.Empty(t, noStore.Dir)
	noReg := Campaign{Store: t.TempDir()}.runOne(context.Background(), specs[0], "x")
	require.ErrorContains(t, noReg.Err, "no registry given", "no silent fallback to a registry the caller did not give")
}

func TestApplicableFaults(t *testing.T) {
	reg := builtin.Registry()
	naive := ApplicableFaults(reg, "naive", "fenced", nil)
	require.Contains(t, naive, "pause")
	require.Contains(t, naive, "crash")
	require.NotContains(t, naive, "leader-isolation")
	etcd := ApplicableFaults(reg, "etcd", "fenced", nil)
	require.Contains(t, etcd, "leader-isolation")
	require.Contains(t, etcd, "node-pause")
	external := ApplicableFaults(reg, "etcd", "fenced", map[string]string{"etcd-endpoints": "127.0.0.1:2379"})
	require.Contains(t, external, "pause")
	require.NotContains(t, external, "leader-isolation")
	require.NotContains(t, external, "crash")
}

// evaluate of a backend without tokens plans its unfenced runs only, and its scorecard
// says it cannot be made safe by fencing.
func TestEvaluateTokenlessPlan(t *testing.T) {
	reg := builtin.Registry()
	cfg, _, err := ResolveEvaluateTTL(context.Background(), reg, EvaluateConfig{Backend: "redlock"})
	require.NoError(t, err)
	plan, err := PlanEvaluate(reg, builtin.Catalogue(), cfg)
	require.NoError(t, err)
	require.NotEmpty(t, plan.Scorecard.NoToken)
	require.Len(t, plan.Jobs, 8, "pause, pause-before-read, stall, delay, partition, silent-partition, node-pause, crash")
	for _, j := range plan.Jobs {
		require.Equal(t, "unfenced", j.Resource)
		require.Equal(t, spec.DefaultSeed, j.Spec.Seed)
	}
	sc := plan.Judge(make([]RunResult, len(plan.Jobs)), t.TempDir(), plan.Scorecard.Started)
	require.False(t, sc.Safe)
	require.Contains(t, sc.Verdict, "cannot be made safe by fencing")
	require.Equal(t, judge.Cell("no fencing token"), sc.Rows[0].Fenced)
	_, err = PlanEvaluate(nil, nil, cfg)
	require.ErrorIs(t, err, spec.ErrSpec, "no registry is refused, not replaced")
}

// With several runs at a time, the runs whose faults act on the service (the longest)
// are handed out first, the rest in the plan's order; one at a time, the plan's order.
func TestCampaignOrder(t *testing.T) {
	specs := []spec.Spec{
		{Backend: "naive", Resource: "fenced", Faults: []string{"pause"}},
		{Backend: "naive", Resource: "fenced", Faults: []string{"crash"}},
		{Backend: "naive", Resource: "unfenced", Faults: []string{"pause-before-read"}},
		{Backend: "raft", Resource: "fenced", Members: 3, Faults: []string{"leader-isolation"}},
	}
	c := Campaign{Registry: builtin.Registry()}
	require.Equal(t, []int{0, 1, 2, 3}, c.order(specs, 1))
	require.Equal(t, []int{1, 3, 0, 2}, c.order(specs, 2))
	require.GreaterOrEqual(t, DefaultParallel(), 2)
	require.LessOrEqual(t, DefaultParallel(), 8)
}

// The runs that go alone (a comparison's runs without a fault) run one at a time with
// nothing else running, before the others; the rest go Parallel at a time.
func TestCampaignAlone(t *testing.T) {
	specs := []spec.Spec{
		{Backend: "naive", Resource: "unfenced", Seed: 1},
		{Backend: "naive", Resource: "unfenced", Seed: 2},
		{Backend: "naive", Resource: "unfenced", Seed: 3},
		{Backend: "naive", Resource: "unfenced", Seed: 4},
	}
	alone := func(i int) bool { return i == 1 || i == 3 }
	var mu sync.Mutex
	running, aloneRunning := 0, false
	var order []int
	var problems []string
	results, interrupted := Campaign{
		Registry: builtin.Registry(), Store: t.TempDir(), Parallel: 3, Alone: alone,
		Started: func(i int, _ string) {
			mu.Lock()
			defer mu.Unlock()
			if aloneRunning || (alone(i) && running > 0) {
				problems = append(problems, fmt.Sprintf("run %d started beside %d other(s)", i, running))
			}
			running++
			aloneRunning = aloneRunning || alone(i)
			order = append(order, i)
		},
		Finished: func(i int, _ RunResult) {
			mu.Lock()
			defer mu.Unlock()
			running--
			if alone(i) {
				aloneRunning = false
			}
		},
	}.Run(context.Background(), specs)
	require.False(t, interrupted)
	for _, r := range results {
		require.NoError(t, r.Err)
	}
	require.Empty(t, problems)
	require.Equal(t, []int{1, 3}, order[:2], "the runs that go alone come first")
}
