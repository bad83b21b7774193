package scenarios

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// Ctrl-C in the middle of a campaign: the run that finished is kept in the store, the
// ones not started are marked interrupted, and none starts after the end.
func TestCampaignInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store := t.TempDir()
	var started atomic.Int32
	specs := []Spec{
		{Backend: "naive", Resource: "fenced"},
		{Backend: "naive", Resource: "unfenced"},
		{Backend: "naive", Resource: "toctou"},
	}
	results, interrupted := Campaign{
		Store:    store,
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
	specs := []Spec{
		{Backend: "naive", Resource: "fenced", Seed: 1},
		{Backend: "naive", Resource: "fenced", Seed: 2},
		{Backend: "naive", Resource: "unfenced", Seed: 3},
	}
	var running, most atomic.Int32
	results, interrupted := Campaign{
		Store: t.TempDir(), Parallel: 2,
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
	noStore := Campaign{}.runOne(context.Background(), specs[0], "x")
	require.ErrorContains(t, noStore.Err, "no results store")
	require.Empty(t, noStore.Dir)
}
