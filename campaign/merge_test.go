package campaign

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/builtin"
	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/reports"
	"github.com/fencecheck/fencecheck/spec"
)

// soakShardStore writes a store holding only the plan record of shard sh of a soak
// plan of one scenario, runs seeds (none of which ran: merge's checks need no run).
func soakShardStore(t *testing.T, scenario string, runs int, sh Shard) string {
	t.Helper()
	store := t.TempDir()
	var specs []spec.Spec
	for seed := 1; seed <= runs; seed++ {
		specs = append(specs, spec.Spec{Name: scenario, Backend: "naive", Resource: "fenced", Faults: []string{"pause"}, Seed: int64(seed)})
	}
	sp := &SoakPlan{Runs: runs, Scenarios: []SoakPlanScenario{{Name: scenario, Expect: catalogue.Safe()}}}
	p, err := newPlan(builtin.Registry(), nil, KindSoak, KindSoak, specs, sh, sp)
	require.NoError(t, err)
	p.Soak = sp
	dir, err := reports.NewRunDir(store, KindSoak, time.Now())
	require.NoError(t, err)
	require.NoError(t, WritePlan(dir, p))
	require.NoError(t, reports.MarkLatest(dir))
	return store
}

func TestMergeRefuses(t *testing.T) {
	s1 := soakShardStore(t, "naive-fenced-pause", 4, Shard{1, 3})
	s2 := soakShardStore(t, "naive-fenced-pause", 4, Shard{2, 3})
	s3 := soakShardStore(t, "naive-fenced-pause", 4, Shard{3, 3})
	s2again := soakShardStore(t, "naive-fenced-pause", 4, Shard{2, 3})
	other := soakShardStore(t, "naive-fenced-pause", 5, Shard{3, 3}) // another plan: 5 seeds
	split2 := soakShardStore(t, "naive-fenced-pause", 4, Shard{2, 2})
	empty := t.TempDir()
	for _, tc := range []struct {
		name   string
		stores []string
		out    string
		want   []string
	}{
		{"different plans", []string{s1, s2, other}, "", []string{s1, other, "different plans"}},
		{"different splits", []string{s1, split2}, "", []string{s1, split2, "shard 1/3", "shard 2/2"}},
		{"a shard twice", []string{s1, s2, s2again, s3}, "", []string{s2, s2again, "both hold shard 2/3"}},
		{"a missing shard", []string{s1, s3}, "", []string{"shard 2/3", "missing", "--partial"}},
		{"the same store twice", []string{s1, s1}, "", []string{s1, "the same store"}},
		{"a store without a plan", []string{s1, empty}, "", []string{empty, "holds no plan"}},
		{"the output among the stores", []string{s1, s2, s3}, s2, []string{s2, "both a store to merge and the output"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := tc.out
			if out == "" {
				out = filepath.Join(t.TempDir(), "merged")
			}
			_, err := Merge(MergeConfig{Stores: tc.stores, Out: out})
			require.ErrorIs(t, err, ErrMerge)
			require.NotContains(t, err.Error(), "\n")
			for _, w := range tc.want {
				require.Contains(t, err.Error(), w)
			}
			if tc.out == "" {
				require.NoDirExists(t, out, "a refused merge writes nothing")
			}
		})
	}
}

// A partial merge says which shards are missing, in its plan record and on its page.
func TestMergePartial(t *testing.T) {
	s1 := soakShardStore(t, "naive-fenced-pause", 4, Shard{1, 3})
	s3 := soakShardStore(t, "naive-fenced-pause", 4, Shard{3, 3})
	out := filepath.Join(t.TempDir(), "merged")
	merged, err := Merge(MergeConfig{Stores: []string{s3, s1}, Out: out, Partial: true})
	require.NoError(t, err)
	require.Len(t, merged, 1)
	m := merged[0]
	require.Equal(t, []int{2}, m.Plan.Missing)
	require.Equal(t, []MergedShard{{Shard{1, 3}, s1}, {Shard{3, 3}, s3}}, m.Plan.Merged)
	require.Equal(t, 4, m.NotRun, "no run of these synthetic shards ran")
	back, err := ReadPlan(filepath.Join(out, KindSoak, reports.LatestLink, PlanFile))
	require.NoError(t, err)
	require.Equal(t, []int{2}, back.Missing)
	doc, err := reports.ReadSoak(filepath.Join(out, KindSoak, reports.LatestLink, reports.SoakJSON))
	require.NoError(t, err)
	require.Equal(t, []int{2}, doc.Sharding.Missing)
	page, err := os.ReadFile(m.Page)
	require.NoError(t, err)
	require.Contains(t, string(page), "PARTIAL: shard(s) [2] missing")
}

// The plan's identity covers its runs' settings but not a secret option's credentials,
// and plan.json holds none of them.
func TestPlanIdentity(t *testing.T) {
	reg := builtin.Registry()
	mk := func(seed int64, dsn string) *Plan {
		s := spec.Spec{Backend: "naive", Resource: "postgres", Faults: []string{"pause"}, Seed: seed, Options: map[string]string{"postgres-dsn": dsn}}
		p, err := newPlan(reg, nil, KindMatrix, KindMatrix, []spec.Spec{s}, Shard{}, nil)
		require.NoError(t, err)
		return p
	}
	a := mk(1, "postgres://app:hunter2@127.0.0.1:5432/db")
	require.Equal(t, a.ID, mk(1, "postgres://app:swordfish@127.0.0.1:5432/db").ID, "a password is no part of the plan")
	require.NotEqual(t, a.ID, mk(2, "postgres://app:hunter2@127.0.0.1:5432/db").ID, "a seed is")
	require.NotEqual(t, a.ID, mk(1, "postgres://app:hunter2@127.0.0.1:5433/db").ID, "the server is")
	require.Equal(t, Shard{1, 1}, a.Shard)
	dir := t.TempDir()
	require.NoError(t, WritePlan(dir, a))
	b, err := os.ReadFile(filepath.Join(dir, PlanFile))
	require.NoError(t, err)
	require.False(t, strings.Contains(string(b), "hunter2"))
}

// Two shards' runs of one label in the same millisecond (two machines' clocks agree)
// both land in the merged store; latest points at the newest run with a history.
func TestCopyRunsRenamesATakenFolder(t *testing.T) {
	mk := func(ts string, files ...string) string {
		store := t.TempDir()
		dir := filepath.Join(store, "naive-fenced-pause", ts)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		for _, f := range files {
			require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte(ts+"\n"), 0o644))
		}
		return store
	}
	a := mk("20261201-101010.100", reports.HistoryFile)
	b := mk("20261201-101010.100", reports.HistoryFile, reports.FailedFile)
	c := mk("20261201-090000.000", reports.RunLog) // older, and no history
	out := t.TempDir()
	var moved []map[string]string
	for _, st := range []string{a, b, c} {
		m, err := copyRuns(st, out)
		require.NoError(t, err)
		moved = append(moved, m)
	}
	require.Equal(t, "naive-fenced-pause/20261201-101010.100", moved[0]["naive-fenced-pause/20261201-101010.100"])
	require.Equal(t, "naive-fenced-pause/20261201-101010.100-2", moved[1]["naive-fenced-pause/20261201-101010.100"])
	require.FileExists(t, filepath.Join(out, "naive-fenced-pause", "20261201-101010.100-2", reports.FailedFile))
	require.NoError(t, markLatestRuns(out))
	target, err := os.Readlink(filepath.Join(out, "naive-fenced-pause", reports.LatestLink))
	require.NoError(t, err)
	require.Equal(t, "20261201-101010.100-2", target)
}

// exploreStore writes a store holding one exploration's record (and a finding when
// found), as Explore leaves them.
func exploreStore(t *testing.T, shard string, found bool) string {
	t.Helper()
	store := t.TempDir()
	dir := filepath.Join(store, "explore", "20261205-120000.000")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	res := ExploreResult{Dir: dir, Backend: "naive", Resource: "unfenced", Shard: shard, Seed: 1, Tries: 8}
	if found {
		f := Finding{N: 1, Property: "register", Dir: filepath.Join(dir, "finding-1"), ShrunkFaults: 1, Hits: 10, Replays: 10}
		require.NoError(t, os.MkdirAll(f.Dir, 0o755))
		require.NoError(t, writeJSONFile(filepath.Join(f.Dir, reports.FindingJSON), f))
		res.Findings = []Finding{f}
	}
	require.NoError(t, writeJSONFile(filepath.Join(dir, reports.ExploreJSON), res))
	return store
}

// The shards of an exploration merge into one store whose index lists each, with or
// without findings; the same shard from two stores is refused.
func TestMergeExplorations(t *testing.T) {
	one, two := exploreStore(t, "1/2", true), exploreStore(t, "2/2", false)
	out := filepath.Join(t.TempDir(), "merged")
	_, err := Merge(MergeConfig{Stores: []string{one, two}, Out: out})
	require.NoError(t, err)
	entries, err := reports.ScanStore(out)
	require.NoError(t, err)
	var summaries []string
	for _, e := range entries {
		require.Equal(t, "explore", e.Kind)
		summaries = append(summaries, e.Summary)
	}
	require.ElementsMatch(t, []string{"1 finding(s): finding-1: register, 1 fault(s), 10/10 replays; shard 1/2", "nothing found in 8 tries; shard 2/2"}, summaries)

	_, err = Merge(MergeConfig{Stores: []string{one, exploreStore(t, "1/2", false)}, Out: filepath.Join(t.TempDir(), "again")})
	require.ErrorIs(t, err, ErrMerge)
	require.ErrorContains(t, err, "are the same exploration (naive/unfenced seed 1 shard 1/2)")
}
