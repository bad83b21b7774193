package campaign

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	redis "github.com/fencecheck/fencecheck/backend/redis"
	"github.com/fencecheck/fencecheck/builtin"
	"github.com/fencecheck/fencecheck/harness/proc/proctest"
	"github.com/fencecheck/fencecheck/judge"
	"github.com/fencecheck/fencecheck/spec"
)

// The plan of a comparison, before anything runs: which rows, which runs, which
// backends are skipped and why.
func TestPlanCompare(t *testing.T) {
	reg := builtin.Registry()
	ctx := context.Background()
	rowNames := func(p *ComparePlan) []string {
		var out []string
		for _, s := range p.Comparison.Services {
			out = append(out, s.Name)
		}
		return out
	}

	t.Run("default: one recommended variant per service", func(t *testing.T) {
		p, err := PlanCompare(ctx, reg, nil, CompareConfig{})
		require.NoError(t, err)
		services := map[string]bool{}
		for _, s := range p.Comparison.Services {
			require.True(t, s.Recommended, s.Name)
			require.False(t, services[s.Service], "service %s twice", s.Service)
			services[s.Service] = true
		}
		// The exec backend needs the user's client: skipped with why, not run.
		require.Contains(t, p.Comparison.Skipped, judge.SkippedEntry{Backend: "exec", Reason: "backend exec needs --client-cmd 'COMMAND' (your lock client; see docs/exec-protocol.md)"})
		for _, j := range p.Jobs {
			require.Equal(t, DefaultCompareTTL, j.Spec.TTL, j.Spec.Name)
		}
	})

	t.Run("runs of one service: a baseline, each fault without and with fencing", func(t *testing.T) {
		proctest.Skip(t, redis.ServerNeed) // redlock's servers
		p, err := PlanCompare(ctx, reg, nil, CompareConfig{Backends: []string{"naive", "redlock"}})
		require.NoError(t, err)
		require.Equal(t, []string{"naive", "redlock"}, rowNames(p))
		count := map[int]int{}
		for _, j := range p.Jobs {
			count[j.Row]++
		}
		require.Equal(t, 7, count[0], "naive: baseline + 3 faults × 2 resources")
		require.Equal(t, 4, count[1], "redlock has no token: baseline + 3 faults unfenced")
		require.NotEmpty(t, p.Comparison.Services[1].Facts.NoToken)
		// Interleaved: the first two runs are of different services.
		require.NotEqual(t, p.Jobs[0].Row, p.Jobs[1].Row)
		require.Equal(t, 1, p.Comparison.Runs)
		require.Equal(t, []int64{spec.DefaultSeed}, p.Comparison.Seeds)
	})

	t.Run("every cell runs --runs times, the k-th at seed + k, the runs without a fault alone", func(t *testing.T) {
		p, err := PlanCompare(ctx, reg, nil, CompareConfig{Backends: []string{"naive", "raft"}, Runs: 3, Seed: 40, Parallel: 2})
		require.NoError(t, err)
		c := p.Comparison
		require.Equal(t, 3, c.Runs)
		require.Equal(t, []int64{40, 41, 42}, c.Seeds)
		require.Equal(t, 2, c.Parallel)
		require.Len(t, p.Jobs, 2*3*7, "2 services × 3 runs × (baseline + 3 faults × 2 resources)")
		names := map[string]bool{}
		perCell := map[string][]int64{}
		for i, j := range p.Jobs {
			require.False(t, names[j.Spec.Name], "each run has a name of its own: %s", j.Spec.Name)
			names[j.Spec.Name] = true
			require.Equal(t, c.Seeds[j.Run], j.Spec.Seed, j.Spec.Name)
			require.Equal(t, j.Fault == "", p.Alone(i), j.Spec.Name)
			key := fmt.Sprintf("%d/%s/%s", j.Row, j.Fault, j.Resource)
			perCell[key] = append(perCell[key], j.Spec.Seed)
		}
		require.Len(t, perCell, 2*7)
		for k, seeds := range perCell {
			require.ElementsMatch(t, []int64{40, 41, 42}, seeds, k)
		}
		for _, s := range c.Services {
			require.Len(t, s.Baseline, 3)
			for _, f := range s.Faults {
				require.Len(t, f.Unfenced, 3)
				require.Len(t, f.Fenced, 3)
				require.Equal(t, int64(42), f.Fenced[2].Seed)
			}
		}
	})

	t.Run("an external option adds a row", func(t *testing.T) {
		p, err := PlanCompare(ctx, reg, nil, CompareConfig{Backends: []string{"naive", "etcd"}, Options: map[string]string{"etcd-endpoints": "127.0.0.1:1"}})
		// The external etcd does not answer: its TTL cannot be settled, so it is skipped.
		require.NoError(t, err)
		require.Equal(t, []string{"naive", "etcd"}, rowNames(p))
		require.Len(t, p.Comparison.Skipped, 1)
		require.Equal(t, "etcd-external", p.Comparison.Skipped[0].Backend)
	})

	t.Run("extra rows: two clients of one backend", func(t *testing.T) {
		client := func(name string) CompareRow {
			return CompareRow{Name: name, Backend: "exec", Options: map[string]string{"client-cmd": "sh client.sh", "lock-service": "naive-persisted"}}
		}
		p, err := PlanCompare(ctx, reg, nil, CompareConfig{Backends: []string{"naive"}, Extra: []CompareRow{client("exec-a"), client("exec-b")}})
		require.NoError(t, err)
		require.Equal(t, []string{"naive", "exec-a", "exec-b"}, rowNames(p))
		for _, j := range p.Jobs {
			if j.Row > 0 {
				require.Equal(t, "sh client.sh", j.Spec.Options["client-cmd"], j.Spec.Name)
			}
		}
	})

	t.Run("bad input", func(t *testing.T) {
		for _, tc := range []struct {
			cfg  CompareConfig
			want string
		}{
			{CompareConfig{Backends: []string{"naive"}, Extra: []CompareRow{{Name: "naive", Backend: "naive"}}}, `an extra row needs a name of its own, not "naive"`},
			{CompareConfig{Backends: []string{"naive"}, Extra: []CompareRow{{Name: "x", Backend: "nope"}}}, `row x: unknown backend "nope"`},
			{CompareConfig{Backends: []string{"naive"}, Extra: []CompareRow{{Name: "x", Backend: "naive", Options: map[string]string{"client-cmd": "y"}}}}, "row x: backend naive has no option --client-cmd"},
			{CompareConfig{Backends: []string{"nope"}}, `unknown backend "nope"`},
			{CompareConfig{Faults: []string{"meteor"}}, `unknown fault "meteor"`},
			{CompareConfig{Backends: []string{"naive"}, Faults: []string{"leader-isolation"}}, `fault "leader-isolation" does not apply to naive`},
			{CompareConfig{Backends: []string{"naive"}, Options: map[string]string{"redis-addrs": "127.0.0.1:1"}}, "--redis-addrs is for the redis"},
			{CompareConfig{Backends: []string{"etcd"}, TTL: 1500e6}, "no backend to compare can run here (etcd: etcd leases are whole seconds"},
			{CompareConfig{Backends: []string{"naive"}, Runs: -1}, "--runs must be 1 to 50, got -1"},
			{CompareConfig{Backends: []string{"naive"}, Runs: MaxCompareRuns + 1}, "--runs must be 1 to 50, got 51"},
		} {
			_, err := PlanCompare(ctx, reg, nil, tc.cfg)
			require.ErrorContains(t, err, tc.want)
		}
	})
}

func TestRedactComparison(t *testing.T) {
	c := &judge.Comparison{
		Services: []judge.ServiceRow{{Options: map[string]string{"postgres-lock-dsn": "postgres://app:hunter2@127.0.0.1:5432/db"},
			Setup: "an existing PostgreSQL at postgres://app:hunter2@127.0.0.1:5432/db", Faults: []judge.CompareFault{{Fenced: []judge.CompareRun{{Error: "dial postgres://app:hunter2@127.0.0.1:1/db"}, {Error: "client (pid 4242) exited: /tmp/fc-1/x.sock"}}}}}},
		Skipped: []judge.SkippedEntry{{Backend: "x", Reason: "password=hunter2 refused"}},
	}
	RedactComparison(nil, c)
	b, err := json.Marshal(c)
	require.NoError(t, err)
	require.NotContains(t, string(b), "hunter2")
	require.NotContains(t, string(b), "/tmp/")
	require.NotContains(t, string(b), "4242")
	require.Contains(t, string(b), "127.0.0.1:5432")
}

// A comparison's plan record: the same identity for every shard, each run with its
// service row and fault, the comparison as planned without results — and judging the
// plan afterwards leaves the record as it was.
func TestCompareRecord(t *testing.T) {
	reg := builtin.Registry()
	p, err := PlanCompare(context.Background(), reg, nil, CompareConfig{Backends: []string{"naive", "naive-persisted"}, Faults: []string{"pause"}})
	require.NoError(t, err)
	whole, err := p.Record(reg, nil, Shard{}, nil)
	require.NoError(t, err)
	two, err := p.Record(reg, nil, Shard{I: 2, N: 2}, nil)
	require.NoError(t, err)
	require.Equal(t, KindCompare, whole.Kind)
	require.Equal(t, whole.ID, two.ID, "the shards of one plan")
	require.Equal(t, Shard{I: 2, N: 2}, two.Shard)
	require.Len(t, whole.Runs, len(p.Jobs))
	for i, j := range p.Jobs {
		require.Equal(t, j.Row, whole.Runs[i].Row)
		require.Equal(t, j.Fault, whole.Runs[i].Fault)
		require.Equal(t, j.Resource, whole.Runs[i].Resource)
		require.Equal(t, j.Run, whole.Runs[i].Repeat)
	}
	other, err := PlanCompare(context.Background(), reg, nil, CompareConfig{Backends: []string{"naive", "naive-persisted"}, Faults: []string{"pause"}, TTL: 3 * DefaultCompareTTL})
	require.NoError(t, err)
	o, err := other.Record(reg, nil, Shard{}, nil)
	require.NoError(t, err)
	require.NotEqual(t, whole.ID, o.ID, "another TTL is another plan")

	results := make([]RunResult, len(p.Jobs))
	for i := range results {
		results[i] = RunResult{Err: ErrNotInShard}
	}
	results[0] = RunResult{Label: "x", Err: errors.New("boom")}
	cmp := p.Judge(results, t.TempDir(), time.Now())
	require.Equal(t, judge.RunOutcome("error"), cmp.Services[p.Jobs[0].Row].Baseline[0].Outcome)
	require.Equal(t, judge.OutcomeNotRun, cmp.Services[p.Jobs[1].Row].Baseline[0].Outcome, "another shard's run stays not run")
	for _, s := range whole.Compare.Services {
		require.Equal(t, judge.OutcomeNotRun, s.Baseline[0].Outcome, "the record holds no result")
		require.Empty(t, s.Verdict)
	}

	dir := t.TempDir()
	require.NoError(t, WritePlan(dir, two))
	back, err := ReadPlan(filepath.Join(dir, PlanFile))
	require.NoError(t, err)
	require.Equal(t, two.ID, back.ID)
	require.Len(t, back.Compare.Services, 2)
}
