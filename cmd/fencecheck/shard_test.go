package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/campaign"
	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/judge"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/reports"
)

func TestShardBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"zero", []string{"soak", "--scenario", "naive-fenced-pause", "--shard", "0/3"}, `--shard "0/3": I must be between 1 and 3`},
		{"beyond N", []string{"matrix", "--backend", "naive", "--shard", "3/2"}, `--shard "3/2": I must be between 1 and 2`},
		{"not I/N", []string{"evaluate", "--backend", "naive", "--shard", "banana"}, `--shard "banana": want I/N`},
		{"no store", []string{"soak", "--scenario", "naive-fenced-pause", "--shard", "1/2", "--out", ""}, "--shard 1/2 needs a results store"},
		{"merge nothing", []string{"merge"}, "name the shards' results stores"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := run(t, tc.args...)
			require.Equal(t, exitUsage, code, "stdout:\n%s", stdout)
			require.Contains(t, strings.SplitN(stderr, "\n", 2)[0], tc.want)
		})
	}
}

// soakCounts is what a soak must give the same whether it ran on one machine or on
// shards merged: per scenario, its runs and seeds, the verdict counts per property, the
// runs that differ or failed, the rates, and how many runs had a stale write accepted.
type soakCounts struct {
	Runs, Mismatches, Errors, StaleAccepted int
	Seeds                                   []int64
	Verdicts                                map[string]int
	Detection, FalseAlarm                   *float64
	Inconclusive                            float64
}

func countsOf(t *testing.T, doc *reports.SoakDoc) map[string]soakCounts {
	t.Helper()
	out := map[string]soakCounts{}
	for _, s := range doc.Scenarios {
		c := soakCounts{Runs: s.Runs, Mismatches: s.Mismatches, Errors: s.Errors, Verdicts: map[string]int{},
			Detection: s.DetectionRate, FalseAlarm: s.FalseAlarmRate, Inconclusive: s.InconclusiveRate}
		for _, r := range s.Detail {
			c.Seeds = append(c.Seeds, r.Seed)
			for p, v := range r.Verdicts {
				c.Verdicts[string(p)+"="+string(v)]++
			}
			if r.FirstViolationNanos != nil {
				c.StaleAccepted++
			}
		}
		out[s.Scenario] = c
	}
	return out
}

// The acceptance of sharding: a soak split in two and merged gives the same per-scenario
// counts as the soak run whole with the same seeds, and the merged page is made from the
// runs' own verdicts. The three soaks are real runs; a targeted scenario's verdicts do
// not vary between runs of a seed (docs/soak.md), so the counts are compared exactly.
func TestShardedSoakMerged(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 12 scenarios")
	}
	t.Parallel() // naive runs only, no check of the process tree
	root := t.TempDir()
	whole, one, two, merged := filepath.Join(root, "whole"), filepath.Join(root, "one"), filepath.Join(root, "two"), filepath.Join(root, "merged")
	soak := []string{"soak", "--scenario", "naive-unfenced-pause,naive-fenced-pause", "--runs", "3"}
	for _, c := range []struct {
		out   string
		shard []string
	}{{whole, nil}, {one, []string{"--shard", "1/2"}}, {two, []string{"--shard", "2/2"}}} {
		code, stdout, stderr := run(t, append(append(slices.Clone(soak), "--out", c.out), c.shard...)...)
		require.Equal(t, exitSafe, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
		if c.shard != nil {
			require.Contains(t, stdout, "(shard "+c.shard[1]+" of plan ")
		}
	}
	plan := func(store string) *campaign.Plan {
		p, err := campaign.ReadPlan(filepath.Join(store, "soak", reports.LatestLink, campaign.PlanFile))
		require.NoError(t, err)
		return p
	}
	require.Equal(t, plan(whole).ID, plan(one).ID, "the same plan on every machine")
	require.Equal(t, plan(whole).ID, plan(two).ID)
	require.Equal(t, campaign.Shard{I: 2, N: 2}, plan(two).Shard)
	// Shard 1 of 2 of 6 runs: indices 0, 2, 4 (unfenced seeds 1 and 3, fenced seed 2).
	shardDoc, err := reports.ReadSoak(filepath.Join(one, "soak", reports.LatestLink, reports.SoakJSON))
	require.NoError(t, err)
	require.Equal(t, "1/2", shardDoc.Sharding.Shard)
	require.Equal(t, []int64{1, 3}, countsOf(t, shardDoc)["naive-unfenced-pause"].Seeds)
	require.Equal(t, []int64{2}, countsOf(t, shardDoc)["naive-fenced-pause"].Seeds)

	code, stdout, stderr := run(t, "merge", "--store", merged, two, one)
	require.Equal(t, exitSafe, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	require.Contains(t, stdout, "merge: soak plan "+plan(whole).ShortID()+": 2 of 2 shard(s)")
	wholeDoc, err := reports.ReadSoak(filepath.Join(whole, "soak", reports.LatestLink, reports.SoakJSON))
	require.NoError(t, err)
	mergedDoc, err := reports.ReadSoak(filepath.Join(merged, "soak", reports.LatestLink, reports.SoakJSON))
	require.NoError(t, err)
	want := countsOf(t, wholeDoc)
	require.Len(t, want, 2)
	require.Equal(t, []int64{1, 2, 3}, want["naive-fenced-pause"].Seeds)
	require.Equal(t, 3, want["naive-unfenced-pause"].StaleAccepted, "the unfenced scenario lets a stale write through in every run")
	require.Equal(t, want, countsOf(t, mergedDoc))
	require.Equal(t, 2, mergedDoc.Sharding.Merged)
	require.Empty(t, mergedDoc.Sharding.Missing)

	// Every merged run is a copy of a shard's run, and its verdicts are its own
	// verdict.json's.
	for _, s := range mergedDoc.Scenarios {
		for _, r := range s.Detail {
			rep, err := reports.ReadVerdict(filepath.Join(merged, r.Evidence, reports.VerdictJSON))
			require.NoError(t, err)
			require.Equal(t, rep.Verdicts, r.Verdicts)
			require.FileExists(t, filepath.Join(merged, r.Evidence, reports.HistoryFile))
			require.FileExists(t, filepath.Join(merged, r.Evidence, reports.ReportFile))
		}
	}
	entries, err := reports.ScanStore(merged)
	require.NoError(t, err)
	var kinds []string
	for _, e := range entries {
		kinds = append(kinds, e.Kind+":"+e.Name)
		if e.Kind == "run" {
			require.Equal(t, 3, e.Runs, e.Name)
		}
	}
	require.Equal(t, []string{"soak:soak", "run:naive-fenced-pause", "run:naive-unfenced-pause"}, kinds)

	// Refusals: one line naming the stores, exit 2, nothing merged.
	for _, tc := range []struct {
		name   string
		stores []string
		want   []string
	}{
		{"a missing shard", []string{one}, []string{"shard 2/2 of the soak plan", "missing", "--partial"}},
		{"a shard twice", []string{one, one}, []string{one, "the same store"}},
		{"shards of different splits", []string{one, whole}, []string{one, whole, "different splits"}},
	} {
		t.Run(tc.name, func(t *testing.T) { requireMergeRefused(t, tc.stores, tc.want...) })
	}
	t.Run("partial", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "m")
		code, _, stderr := run(t, "merge", "--partial", "--store", out, two)
		require.Equal(t, exitSafe, code, stderr)
		require.Contains(t, stderr, "PARTIAL soak: shard(s) 1/2 missing; their 3 run(s) are not in the pages")
		doc, err := reports.ReadSoak(filepath.Join(out, "soak", reports.LatestLink, reports.SoakJSON))
		require.NoError(t, err)
		require.Equal(t, []int{1}, doc.Sharding.Missing)
		require.Equal(t, []int64{2}, countsOf(t, doc)["naive-unfenced-pause"].Seeds)

		code, stdout, stderr := run(t, "merge", "--partial", "--json", "--store", filepath.Join(t.TempDir(), "j"), two)
		require.Equal(t, exitSafe, code, stderr)
		md := mergeDoc(t, stdout)
		require.Equal(t, judge.RunOutcome("incomplete"), md.Outcome, "a shard is missing")
		require.Len(t, md.Campaigns, 1)
		require.Equal(t, "soak", md.Campaigns[0].Kind)
		require.Equal(t, []string{"1/2"}, md.Campaigns[0].Missing)
		require.Equal(t, "as-expected", md.Campaigns[0].Result.(map[string]any)["outcome"])
	})
}

// requireMergeRefused runs merge on stores and requires a refusal: exit 2, one line that
// says each of want, and nothing written.
func requireMergeRefused(t *testing.T, stores []string, want ...string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "m")
	code, _, stderr := run(t, append([]string{"merge", "--store", out}, stores...)...)
	require.Equal(t, exitUsage, code, stderr)
	require.Equal(t, 1, strings.Count(strings.TrimSpace(stderr), "\n")+1, stderr)
	for _, w := range want {
		require.Contains(t, stderr, w)
	}
	require.NoDirExists(t, out)
}

// mergeDoc parses merge --json's stdout, which must hold the document and nothing else.
func mergeDoc(t *testing.T, stdout string) mergeJSON {
	t.Helper()
	var doc mergeJSON
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&doc), stdout)
	require.False(t, dec.More(), "stdout holds only the JSON document:\n%s", stdout)
	return doc
}

// An evaluation and a matrix split in two and merged give the scorecard and the cells of
// the campaign run whole (what is deterministic in them: verdicts, outcomes, stale
// writes, the judgement), each taken from its run's own verdict.json.
func TestShardedEvaluateAndMatrixMerged(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 8 scenarios")
	}
	t.Parallel() // naive runs only, no check of the process tree
	for _, tc := range []struct {
		name string
		args []string
		page string
	}{
		{"evaluate", []string{"evaluate", "--backend", "naive", "--fault", "pause"}, "evaluate-naive"},
		// etcd-txn cannot run on naive: an n/a cell, in every shard's plan.
		{"matrix", []string{"matrix", "--backend", "naive", "--resource", "unfenced,fenced,etcd-txn", "--fault", "pause"}, "matrix"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			whole, one, two, merged := filepath.Join(root, "whole"), filepath.Join(root, "one"), filepath.Join(root, "two"), filepath.Join(root, "merged")
			for _, c := range []struct {
				out   string
				shard []string
			}{{whole, nil}, {one, []string{"--shard", "1/2"}}, {two, []string{"--shard", "2/2"}}} {
				code, stdout, stderr := run(t, append(append(slices.Clone(tc.args), "--out", c.out), c.shard...)...)
				require.Equal(t, exitSafe, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			}
			code, stdout, stderr := run(t, "merge", "--json", "--store", merged, one, two)
			require.Equal(t, exitSafe, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			doc := mergeDoc(t, stdout)
			require.Equal(t, judge.RunOutcome("as-expected"), doc.Outcome)
			require.Len(t, doc.Campaigns, 1)
			mc := doc.Campaigns[0]
			require.Equal(t, []mergedShard{{one, "1/2"}, {two, "2/2"}}, mc.Shards)
			require.Empty(t, mc.Missing)
			require.Equal(t, map[string]string{"evaluate": "safe", "matrix": "as-expected"}[tc.name], mc.Result.(map[string]any)["outcome"], "the campaign's own --json document")
			latest := func(store, file string) string { return filepath.Join(store, tc.page, reports.LatestLink, file) }
			if tc.name == "evaluate" {
				w, err := reports.ReadScorecard(latest(whole, reports.ScorecardJSON))
				require.NoError(t, err)
				m, err := reports.ReadScorecard(latest(merged, reports.ScorecardJSON))
				require.NoError(t, err)
				require.True(t, w.Safe)
				require.Equal(t, scoreFacts(t, "", w), scoreFacts(t, "", m))
				require.Equal(t, scoreFacts(t, merged, m), scoreFacts(t, "", m), "the merged scorecard's runs are its runs' verdicts")
				require.Equal(t, 2, m.Sharding.Merged)
				schema := loadSchema(t, "../../docs/scorecard.schema.json")
				require.Empty(t, schema.validate(readJSON(t, latest(merged, reports.ScorecardJSON))))
				require.Empty(t, schema.validate(readJSON(t, latest(one, reports.ScorecardJSON))), "a shard's scorecard, with its sharding")
				return
			}
			w, err := reports.ReadMatrix(latest(whole, reports.MatrixJSON))
			require.NoError(t, err)
			m, err := reports.ReadMatrix(latest(merged, reports.MatrixJSON))
			require.NoError(t, err)
			require.Len(t, w.Cells, 3)
			require.Equal(t, cellFacts(t, "", w), cellFacts(t, "", m))
			require.Equal(t, cellFacts(t, merged, m), cellFacts(t, "", m), "the merged cells are their runs' verdicts")
			shard, err := reports.ReadMatrix(latest(one, reports.MatrixJSON))
			require.NoError(t, err)
			require.Len(t, shard.Cells, 2, "shard 1/2: its one cell and the n/a one")
		})
	}
}

// scoreFacts lists a scorecard's deterministic facts; with store set, each run's
// verdicts and stale writes are read from its verdict.json there instead.
func scoreFacts(t *testing.T, store string, sc *judge.Scorecard) []string {
	t.Helper()
	out := []string{strings.Join([]string{sc.Backend, boolWord(sc.Safe), boolWord(sc.Complete)}, " ")}
	for _, r := range sc.Rows {
		out = append(out, strings.Join([]string{r.Fault, string(r.Unfenced), string(r.Fenced), string(r.Tokens), boolWord(r.Safe)}, " "))
		for _, run := range r.Runs {
			v, acc, rej := run.Verdicts, run.StaleAccepted, run.StaleRejected
			if store != "" {
				rep, err := reports.ReadVerdict(filepath.Join(store, run.Dir, reports.VerdictJSON))
				require.NoError(t, err)
				v, acc, rej = rep.Verdicts, rep.Evidence.StaleAccepted, rep.Evidence.StaleRejected
			}
			out = append(out, factLine(run.Resource+" "+run.Scenario+" "+string(run.Outcome), v, acc, rej))
		}
	}
	return out
}

// cellFacts lists a matrix's cells' deterministic facts (see scoreFacts).
func cellFacts(t *testing.T, store string, m *reports.Matrix) []string {
	t.Helper()
	var out []string
	for _, c := range m.Cells {
		v, acc, rej := c.Verdicts, c.StaleAccepted, c.StaleRejected
		if store != "" && c.Dir != "" {
			rep, err := reports.ReadVerdict(filepath.Join(store, c.Dir, reports.VerdictJSON))
			require.NoError(t, err)
			v, acc, rej = rep.Verdicts, rep.Evidence.StaleAccepted, rep.Evidence.StaleRejected
		}
		out = append(out, factLine(strings.Join([]string{c.Backend, c.Resource, c.Fault, c.Scenario, string(c.Outcome), boolWord(c.Match), c.Error}, " "), v, acc, rej))
	}
	return out
}

func factLine(head string, v map[models.Property]models.Verdict, acc, rej int) string {
	var vs []string
	for _, p := range models.Properties {
		vs = append(vs, string(p)+"="+string(v[p]))
	}
	return head + " " + strings.Join(vs, ",") + " stale " + strconv.Itoa(acc) + "/" + strconv.Itoa(rej)
}

func boolWord(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// A comparison split in two and merged: the merged comparison is rebuilt from its runs'
// own files — every figure of a run is models.Check's on that run's history.json in the
// merged store — and its verdicts are those of the comparison run whole (what is
// deterministic in them: the faults heal on events, so the words, outcomes and stale
// writes do not vary between runs; timings do, and are checked against each run's own
// history instead).
func TestShardedCompareMerged(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 18 runs of three lock services")
	}
	t.Parallel()
	root := t.TempDir()
	whole, one, two, merged := filepath.Join(root, "whole"), filepath.Join(root, "one"), filepath.Join(root, "two"), filepath.Join(root, "merged")
	// Three services: the round robin gives each shard runs of every service.
	args := []string{"compare", "--backend", "naive,naive-persisted,raft", "--fault", "pause", "--ttl", "1s", "--runs", "1"}
	for _, c := range []struct {
		out   string
		shard []string
	}{{whole, nil}, {one, []string{"--shard", "1/2"}}, {two, []string{"--shard", "2/2"}}} {
		code, stdout, stderr := run(t, append(append(slices.Clone(args), "--out", c.out), c.shard...)...)
		require.Equal(t, exitSafe, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
		if c.shard != nil {
			require.Contains(t, stdout, "compare: shard "+c.shard[1]+" of plan ")
		}
	}
	latest := func(store, file string) string {
		return filepath.Join(store, campaign.CompareName, reports.LatestLink, file)
	}
	plan := func(store string) *campaign.Plan {
		p, err := campaign.ReadPlan(latest(store, campaign.PlanFile))
		require.NoError(t, err)
		return p
	}
	require.Equal(t, campaign.KindCompare, plan(whole).Kind)
	require.Equal(t, plan(whole).ID, plan(one).ID, "the same plan on every machine")
	require.Equal(t, plan(whole).ID, plan(two).ID)
	schema := loadSchema(t, "../../docs/compare.schema.json")
	shardDoc, err := reports.ReadComparison(latest(one, reports.CompareJSON))
	require.NoError(t, err)
	require.Equal(t, "1/2", shardDoc.Sharding.Shard)
	require.False(t, shardDoc.Complete, "a shard holds half the runs")
	require.Empty(t, schema.validate(readJSON(t, latest(one, reports.CompareJSON))), "a shard's compare.json, with its sharding")
	page, err := os.ReadFile(latest(one, reports.ComparePage))
	require.NoError(t, err)
	require.Contains(t, string(page), `id="sharding"`)
	require.Contains(t, string(page), "shard 1/2 of plan "+plan(one).ShortID())

	code, stdout, stderr := run(t, "merge", "--store", merged, two, one)
	require.Equal(t, exitSafe, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	require.Contains(t, stdout, "merge: compare plan "+plan(whole).ShortID()+": 2 of 2 shard(s)")
	w, err := reports.ReadComparison(latest(whole, reports.CompareJSON))
	require.NoError(t, err)
	m, err := reports.ReadComparison(latest(merged, reports.CompareJSON))
	require.NoError(t, err)
	require.True(t, m.Complete)
	require.Equal(t, 2, m.Sharding.Merged)
	require.Empty(t, schema.validate(readJSON(t, latest(merged, reports.CompareJSON))))
	require.Equal(t, compareFacts(w), compareFacts(m))
	for _, s := range w.Services {
		require.Equal(t, judge.VerdictSafe, s.Verdict, s.Name)
	}

	// Every figure of the merged comparison is what the checker gives on its runs'
	// histories in the merged store.
	for _, s := range m.Services {
		var gaps, takeovers []int64
		for k, r := range []judge.CompareRun{s.Baseline[0], s.Faults[0].Unfenced[0], s.Faults[0].Fenced[0]} {
			require.NotEmpty(t, r.Dir, "%s %s", s.Name, r.Scenario)
			h, err := history.ReadFile(filepath.Join(merged, r.Dir, reports.HistoryFile))
			require.NoError(t, err)
			rep, err := models.Check(context.Background(), h, models.Options{PorcupineBudget: models.NoPorcupine})
			require.NoError(t, err)
			ev := rep.Evidence
			require.Equal(t, time.Second.Nanoseconds(), r.TTLNanos, "%s %s", s.Name, r.Scenario)
			require.Equal(t, judge.Outcome(rep), r.Outcome, "%s %s", s.Name, r.Scenario)
			require.Equal(t, rep.Verdicts, r.Verdicts, "%s %s", s.Name, r.Scenario)
			require.Equal(t, []int{ev.StaleAttempted, ev.StaleRejected, ev.StaleAccepted}, []int{r.StaleAttempted, r.StaleRejected, r.StaleAccepted}, "%s %s", s.Name, r.Scenario)
			require.Equal(t, ev.ValidityGapNanos, r.ValidityGapNanos, "%s %s", s.Name, r.Scenario)
			require.Equal(t, ev.NoticeDelayNanos, r.NoticeDelayNanos, "%s %s", s.Name, r.Scenario)
			require.Equal(t, ev.NeverNoticed, r.NeverNoticed, "%s %s", s.Name, r.Scenario)
			require.Equal(t, ev.TakeoverNanos, r.TakeoverNanos, "%s %s", s.Name, r.Scenario)
			require.Equal(t, ev.LongestNoAcceptedWriteNanos, r.LongestNoAcceptedWriteNanos, "%s %s", s.Name, r.Scenario)
			require.Equal(t, ev.AcquireP50Nanos, r.AcquireP50Nanos, "%s %s", s.Name, r.Scenario)
			if k > 0 { // the fault's runs, without and with fencing
				gaps, takeovers = append(gaps, ev.ValidityGapNanos), append(takeovers, ev.TakeoverNanos)
			}
		}
		require.Positive(t, judge.SpreadOf(gaps).Min, s.Name)
		require.Equal(t, judge.SpreadOf(gaps), s.ValidityGap.Spread, "%s: the service's gap is its fault's runs'", s.Name)
		require.Equal(t, judge.SpreadOf(takeovers), s.Takeover.Spread, "%s: the service's takeover is its fault's runs'", s.Name)
	}

	// Refusals: one line, exit 2, nothing written.
	evalShard := filepath.Join(root, "evaluate")
	code, stdout, stderr = run(t, "evaluate", "--backend", "naive", "--fault", "pause", "--shard", "1/2", "--out", evalShard)
	require.Equal(t, exitSafe, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	for _, tc := range []struct {
		name   string
		stores []string
		want   []string
	}{
		{"a compare shard with an evaluate shard", []string{one, evalShard}, []string{"shard 2/2 of the", "missing", "--partial"}},
		{"shards of different splits", []string{one, whole}, []string{one, whole, "different splits"}},
	} {
		t.Run(tc.name, func(t *testing.T) { requireMergeRefused(t, tc.stores, tc.want...) })
	}
}

// compareFacts lists a comparison's deterministic facts: per service its verdict, and
// per run its outcome, verdicts and stale writes.
func compareFacts(c *reports.Comparison) []string {
	var out []string
	for _, s := range c.Services {
		out = append(out, strings.Join([]string{s.Name, s.Backend, s.Verdict.String(), boolWord(s.Safe)}, " "))
		for _, b := range s.Baseline {
			out = append(out, factLine("baseline "+b.Resource+" "+b.Scenario+" "+string(b.Outcome), b.Verdicts, b.StaleAccepted, b.StaleRejected))
		}
		for _, f := range s.Faults {
			out = append(out, f.Fault+" "+f.UnfencedWord+" | "+f.FencedWord)
			for _, r := range slices.Concat(f.Unfenced, f.Fenced) {
				out = append(out, factLine(r.Resource+" "+r.Scenario+" "+string(r.Outcome), r.Verdicts, r.StaleAccepted, r.StaleRejected)+" attempted "+strconv.Itoa(r.StaleAttempted))
			}
		}
	}
	return out
}
