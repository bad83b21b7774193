package redlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/backend/redis"
	"github.com/fencecheck/fencecheck/backend/redlock"
	"github.com/fencecheck/fencecheck/campaign"
	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/harnesstest"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/spec"
)

func newReg(t testing.TB) *registry.Registry { return harnesstest.Registry(t, redlock.Descriptor()) }

func TestSpecErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    spec.Spec
		want string
	}{
		{"fenced", spec.Spec{Backend: "redlock", Resource: "fenced"}, "no fencing token: cannot be made safe by fencing"},
		{"4 members", spec.Spec{Backend: "redlock", Resource: "unfenced", Members: 4}, "--members must be 3 or 5"},
		{"addrs members", spec.Spec{Backend: "redlock", Resource: "unfenced", Options: map[string]string{redis.OptionAddrs: "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3,127.0.0.1:4"}}, "--members 3 does not match the 4 --redis-addrs"},
		{"no cluster crash", spec.Spec{Backend: "redlock", Resource: "unfenced", Faults: []string{"cluster-crash"}}, "crashes every node at once"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := spec.Normalize(newReg(t), tc.s)
			require.ErrorIs(t, err, spec.ErrSpec)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// The Shape gives what the started backend has, on fencecheck's servers and on
// existing ones.
func TestShapes(t *testing.T) {
	reg := newReg(t)
	harnesstest.SkipUnavailable(t, reg, spec.Spec{Backend: "redlock", Resource: "unfenced"})
	d, _ := reg.Backend("redlock")
	for _, existing := range []bool{false, true} {
		s := registry.Settings{TTL: 500 * time.Millisecond, Members: 3}
		if existing {
			var addrs []string
			for range 3 {
				srv, err := redis.StartServer(context.Background(), redis.ServerConfig{Dir: t.TempDir()})
				require.NoError(t, err)
				t.Cleanup(func() { _ = srv.Close() })
				addrs = append(addrs, srv.Addr())
			}
			s.Options = map[string]string{redis.OptionAddrs: addrs[0] + "," + addrs[1] + "," + addrs[2]}
		}
		c := d.RunCaps(s, harnesstest.Start(t, d, s))
		require.Equal(t, existing, c.External != "")
		require.Equal(t, !existing, c.ProcessNodes && c.SingleProcess() && c.Crasher)
		require.NotEmpty(t, c.NoToken)
	}
}

// evaluate of a backend without tokens plans its unfenced runs only, and the tokens
// property of any cell is violated by declaration.
func TestEvaluatePlan(t *testing.T) {
	reg := newReg(t)
	cat := catalogue.Catalogue(redlock.Scenarios())
	cfg, _, err := campaign.ResolveEvaluateTTL(context.Background(), reg, campaign.EvaluateConfig{Backend: "redlock"})
	require.NoError(t, err)
	plan, err := campaign.PlanEvaluate(reg, cat, cfg)
	require.NoError(t, err)
	require.NotEmpty(t, plan.Scorecard.NoToken)
	require.Len(t, plan.Jobs, 8, "pause, pause-before-read, stall, delay, partition, silent-partition, node-pause, crash")
	for _, j := range plan.Jobs {
		require.Equal(t, "unfenced", j.Resource)
	}
	e, fromCat := cat.Expect(reg, campaign.CellSpec(reg, cat, "redlock", "unfenced", []string{"delay"}, nil))
	require.False(t, fromCat)
	require.Equal(t, models.Violated, e.Verdicts[models.Tokens])
	require.Equal(t, models.Violated, e.Verdicts[models.Register])
}
