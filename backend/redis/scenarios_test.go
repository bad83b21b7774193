package redis_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/backend/redis"
	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/harness/proc"
	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/harnesstest"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/spec"
	"github.com/fencecheck/fencecheck/trial"
)

// newReg is fencecheck's registry with the redis backends: what their scenarios run in.
func newReg(t testing.TB) *registry.Registry { return harnesstest.Registry(t, redis.Descriptors()...) }

func TestSpecErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    spec.Spec
		want string
	}{
		{"tokenless fenced", spec.Spec{Backend: "redis-notoken", Resource: "fenced"}, "cannot be made safe by fencing"},
		{"tokenless toctou", spec.Spec{Backend: "redis-notoken", Resource: "toctou"}, "cannot be made safe by fencing"},
		{"no leader", spec.Spec{Backend: "redis", Faults: []string{"leader-isolation"}}, "needs a lock-service cluster"},
		{"no clock", spec.Spec{Backend: "redis", Faults: []string{"clock-jump"}}, "server clock cannot be stepped back: its server and clients read the machine's real time"},
		{"external node fault", spec.Spec{Backend: "redis", Options: map[string]string{redis.OptionAddrs: "127.0.0.1:1"}, Faults: []string{"crash"}}, "takes client-side faults only"},
		{"two redis addrs", spec.Spec{Backend: "redis", Options: map[string]string{redis.OptionAddrs: "127.0.0.1:1,127.0.0.1:2"}}, "one server address, got 2"},
		{"redis members", spec.Spec{Backend: "redis", Members: 3}, "runs one member only here: --members must be 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := spec.Normalize(newReg(t), tc.s)
			require.ErrorIs(t, err, spec.ErrSpec)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// The descriptors' Shapes give what the started backends have, fencecheck's own servers
// and existing ones alike.
func TestShapes(t *testing.T) {
	reg := newReg(t)
	for _, tc := range []struct {
		backend  string
		existing bool
	}{{"redis", false}, {"redis-volatile", false}, {"redis-notoken", false}, {"redis", true}, {"redis-notoken", true}} {
		name := tc.backend
		if tc.existing {
			name += "-external"
		}
		t.Run(name, func(t *testing.T) {
			harnesstest.SkipUnavailable(t, reg, spec.Spec{Backend: tc.backend})
			d, _ := reg.Backend(tc.backend)
			s := registry.Settings{TTL: 500 * time.Millisecond, Members: 1}
			if tc.existing {
				srv, err := redis.StartServer(context.Background(), redis.ServerConfig{Dir: t.TempDir()})
				require.NoError(t, err)
				t.Cleanup(func() { _ = srv.Close() })
				s.Options = map[string]string{redis.OptionAddrs: srv.Addr()}
			}
			b := harnesstest.Start(t, d, s)
			c := d.RunCaps(s, b)
			require.Equal(t, tc.existing, c.External != "")
			require.Equal(t, !tc.existing, c.ProcessNodes && c.SingleProcess() && c.Crasher)
			require.Equal(t, tc.backend == "redis-notoken", c.NoToken != "")
		})
	}
}

// An existing server (--redis-addrs): the same workload and client-side faults through
// local proxies; fencecheck starts no server of its own and leaves no key behind.
func TestExistingServer(t *testing.T) {
	ctx := context.Background()
	reg := newReg(t)
	harnesstest.SkipUnavailable(t, reg, spec.Spec{Backend: "redis"})
	s, err := redis.StartServer(ctx, redis.ServerConfig{Dir: t.TempDir()})
	require.NoError(t, err)
	defer s.Close()
	o, err := trial.Run(ctx, reg, spec.Spec{Backend: "redis", Options: map[string]string{redis.OptionAddrs: s.Addr()}, Resource: "fenced", Faults: []string{"pause"}}, trial.Options{})
	require.NoError(t, err)
	require.Equal(t, models.Held, o.Report.Verdicts[models.Register])
	require.Positive(t, o.Report.Evidence.StaleRejected)
	require.Equal(t, []int{s.PID()}, proc.Descendants(os.Getpid()), "only the test's own server runs")
	cli := redis.NewClient(s.Addr(), time.Second)
	defer cli.Close()
	keys, err := cli.Do(ctx, "KEYS", "*")
	require.NoError(t, err)
	require.Empty(t, keys, "the run left keys behind")
}

// Cells outside the catalogue: a counter without persistence starts over after a
// crash (tokens violated by the derived expectation), with the AOF it does not.
func TestExpectations(t *testing.T) {
	reg, cat := newReg(t), catalogue.Catalogue(redis.Scenarios())
	e, _ := cat.Expect(reg, spec.Spec{Backend: "redis-volatile", Resource: "fenced", Faults: []string{"crash"}, TTL: 400 * time.Millisecond})
	require.Equal(t, models.Violated, e.Verdicts[models.Tokens])
	require.Equal(t, models.Held, e.Verdicts[models.Register])
	e, _ = cat.Expect(reg, spec.Spec{Backend: "redis", Resource: "fenced", Faults: []string{"crash"}, TTL: 400 * time.Millisecond})
	require.Equal(t, models.Held, e.Verdicts[models.Tokens])
	e, _ = cat.Expect(reg, spec.Spec{Backend: "redis-notoken", Resource: "unfenced", Faults: []string{"delay"}})
	require.Equal(t, models.Violated, e.Verdicts[models.Tokens], "no token: violated by declaration")
}
