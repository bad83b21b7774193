package scenarios

import (
	"context"
	"os"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/campaign"
	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/harness/builtin"
	"github.com/fencecheck/fencecheck/harness/harnesstest"
	"github.com/fencecheck/fencecheck/harness/history"
	natslock "github.com/fencecheck/fencecheck/harness/lease/nats"
	redislock "github.com/fencecheck/fencecheck/harness/lease/redis"
	"github.com/fencecheck/fencecheck/harness/lease/redlock"
	"github.com/fencecheck/fencecheck/harness/proc"
	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/spec"
	"github.com/fencecheck/fencecheck/trial"
)

// serviceBackends are the real-server backends whose node faults are real signals.
var serviceBackends = []string{redislock.Name, redislock.NameVolatile, redislock.NameNoToken, redlock.Name, natslock.Name}

// serviceDetail is what a node fault on a real server must name: the signal and the PID.
var serviceDetail = regexp.MustCompile(`SIG(STOP|KILL).*\(pid [1-9][0-9]*\)|\(pid [1-9][0-9]*\).*SIG(STOP|KILL)`)

// checkServiceRun checks what a service catalogue run left: its node fault names the
// signal and the PID.
func checkServiceRun(t *testing.T, sc catalogue.Scenario, h *history.History) {
	t.Helper()
	if !slices.Contains(serviceBackends, sc.Backend) {
		return
	}
	for _, f := range h.Faults {
		if f.Kind == "node-pause" || f.Kind == "crash" {
			require.Regexp(t, serviceDetail, f.Detail)
		}
	}
}

func TestServiceSpecErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    spec.Spec
		want string
	}{
		{"tokenless fenced", spec.Spec{Backend: "redis-notoken", Resource: "fenced"}, "cannot be made safe by fencing"},
		{"redlock fenced", spec.Spec{Backend: "redlock", Resource: "fenced"}, "no fencing token: cannot be made safe by fencing"},
		{"redlock 4 members", spec.Spec{Backend: "redlock", Resource: "unfenced", Members: 4}, "--members must be 3 or 5"},
		{"redlock addrs members", spec.Spec{Backend: "redlock", Resource: "unfenced", Options: map[string]string{redislock.OptionAddrs: "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3,127.0.0.1:4"}}, "--members 3 does not match the 4 --redis-addrs"},
		{"nats external node fault", spec.Spec{Backend: "nats", Options: map[string]string{natslock.OptionURL: "nats://127.0.0.1:1"}, Faults: []string{"node-pause"}}, "takes client-side faults only"},
		{"nats url on redis", spec.Spec{Backend: "redis", Options: map[string]string{natslock.OptionURL: "nats://127.0.0.1:1"}}, "--nats-url is for the nats backend"},
		{"nats bad url", spec.Spec{Backend: "nats", Options: map[string]string{natslock.OptionURL: "127.0.0.1:1"}}, "is not one nats://host:port"},
		{"nats skew", spec.Spec{Backend: "nats", Faults: []string{"skew"}}, "needs a service clock fencecheck owns"},
		{"nats short ttl", spec.Spec{Backend: "nats", TTL: 60 * time.Millisecond}, "at least 100ms (the bucket's MaxAge)"},
		{"tokenless toctou", spec.Spec{Backend: "redis-notoken", Resource: "toctou"}, "cannot be made safe by fencing"},
		{"no leader", spec.Spec{Backend: "redis", Faults: []string{"leader-isolation"}}, "needs a lock-service cluster"},
		{"no cluster crash", spec.Spec{Backend: "redlock", Resource: "unfenced", Faults: []string{"cluster-crash"}}, "crashes every node at once"},
		{"no clock", spec.Spec{Backend: "redis", Faults: []string{"clock-jump"}}, "needs a service clock fencecheck owns"},
		{"external node fault", spec.Spec{Backend: "redis", Options: map[string]string{redislock.OptionAddrs: "127.0.0.1:1"}, Faults: []string{"crash"}}, "takes client-side faults only"},
		{"two redis addrs", spec.Spec{Backend: "redis", Options: map[string]string{redislock.OptionAddrs: "127.0.0.1:1,127.0.0.1:2"}}, "one server address, got 2"},
		{"addrs on another backend", spec.Spec{Backend: "naive", Options: map[string]string{redislock.OptionAddrs: "127.0.0.1:1"}}, "--redis-addrs is for the redis or redis-volatile or redis-notoken or redlock backend"},
		{"redis members", spec.Spec{Backend: "redis", Members: 3}, "single redis-server: --members must be 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := spec.Normalize(builtin.Registry(), tc.s)
			require.ErrorIs(t, err, spec.ErrSpec)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// The descriptors' Shapes give what the started backends have, fencecheck's own servers
// and existing ones alike.
func TestServiceDeclaredCaps(t *testing.T) {
	ctx := context.Background()
	reg := builtin.Registry()
	redisSrv := func(t *testing.T) string {
		s, err := redislock.StartServer(ctx, redislock.ServerConfig{Dir: t.TempDir()})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s.Addr()
	}
	for _, tc := range []struct {
		backend string
		members int
		opts    func(t *testing.T) map[string]string
	}{
		{backend: "redis"}, {backend: "redis-volatile"}, {backend: "redis-notoken"}, {backend: "redlock", members: 3}, {backend: "nats"},
		{backend: "redis", opts: func(t *testing.T) map[string]string {
			return map[string]string{redislock.OptionAddrs: redisSrv(t)}
		}},
		{backend: "redis-notoken", opts: func(t *testing.T) map[string]string {
			return map[string]string{redislock.OptionAddrs: redisSrv(t)}
		}},
		{backend: "redlock", members: 3, opts: func(t *testing.T) map[string]string {
			return map[string]string{redislock.OptionAddrs: redisSrv(t) + "," + redisSrv(t) + "," + redisSrv(t)}
		}},
		{backend: "nats", opts: func(t *testing.T) map[string]string {
			s, err := natslock.StartServer(ctx, natslock.ServerConfig{Dir: t.TempDir()})
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close() })
			return map[string]string{natslock.OptionURL: s.URL()}
		}},
	} {
		name := tc.backend
		if tc.opts != nil {
			name += "-external"
		}
		t.Run(name, func(t *testing.T) {
			skipUnavailable(t, spec.Spec{Backend: tc.backend})
			d, ok := reg.Backend(tc.backend)
			require.True(t, ok)
			s := registry.Settings{TTL: 500 * time.Millisecond, Members: max(tc.members, 1)}
			if tc.opts != nil {
				s.Options = tc.opts(t)
			}
			b := harnesstest.Start(t, d, s)
			c := d.RunCaps(s, b)
			require.Equal(t, tc.opts != nil, c.External != "")
			require.Equal(t, tc.opts == nil, c.ProcessNodes && c.SingleProcess() && c.Crasher)
			require.Equal(t, tc.backend == "redis-notoken" || tc.backend == "redlock", c.NoToken != "")
		})
	}
}

// Existing servers (--redis-addrs, --nats-url): the same workload and client-side faults
// through local proxies; fencecheck starts no server of its own.
func TestExternalServices(t *testing.T) {
	ctx := context.Background()
	t.Run("redis", func(t *testing.T) {
		skipUnavailable(t, spec.Spec{Backend: "redis"})
		s, err := redislock.StartServer(ctx, redislock.ServerConfig{Dir: t.TempDir()})
		require.NoError(t, err)
		defer s.Close()
		o, err := trial.Run(ctx, builtin.Registry(), spec.Spec{Backend: "redis", Options: map[string]string{redislock.OptionAddrs: s.Addr()}, Resource: "fenced", Faults: []string{"pause"}}, trial.Options{})
		require.NoError(t, err)
		require.Equal(t, models.Held, o.Report.Verdicts[models.Register])
		require.Positive(t, o.Report.Evidence.StaleRejected)
		require.Equal(t, []int{s.PID()}, proc.Descendants(os.Getpid()), "only the test's own server runs")
		// The run's keys are gone from the server it does not own.
		cli := redislock.NewClient(s.Addr(), time.Second)
		defer cli.Close()
		keys, err := cli.Keys(ctx, "*").Result()
		require.NoError(t, err)
		require.Empty(t, keys, "the run left keys behind")
	})
	t.Run("nats", func(t *testing.T) {
		skipUnavailable(t, spec.Spec{Backend: "nats"})
		s, err := natslock.StartServer(ctx, natslock.ServerConfig{Dir: t.TempDir()})
		require.NoError(t, err)
		defer s.Close()
		o, err := trial.Run(ctx, builtin.Registry(), spec.Spec{Backend: "nats", Options: map[string]string{natslock.OptionURL: s.URL()}, Resource: "unfenced", Faults: []string{"pause"}}, trial.Options{})
		require.NoError(t, err)
		require.Equal(t, models.Violated, o.Report.Verdicts[models.Register])
		require.Equal(t, []int{s.PID()}, proc.Descendants(os.Getpid()), "only the test's own server runs")
	})
}

func TestServiceExpectations(t *testing.T) {
	// No token: the tokens property is catalogue.Violated by declaration, whatever the fault.
	e, cat := builtin.Catalogue().Expect(builtin.Registry(), campaign.CellSpec(builtin.Registry(), builtin.Catalogue(), "redlock", "unfenced", []string{"delay"}, nil))
	require.False(t, cat)
	require.Equal(t, models.Violated, e.Verdicts[models.Tokens])
	require.Equal(t, models.Violated, e.Verdicts[models.Register])
	// A counter without persistence starts over after a crash.
	e, _ = builtin.Catalogue().Expect(builtin.Registry(), spec.Spec{Backend: "redis-volatile", Resource: "fenced", Faults: []string{"crash"}, TTL: 400 * time.Millisecond})
	require.Equal(t, models.Violated, e.Verdicts[models.Tokens])
	require.Equal(t, models.Held, e.Verdicts[models.Register])
	// With the AOF it does not.
	e, _ = builtin.Catalogue().Expect(builtin.Registry(), spec.Spec{Backend: "redis", Resource: "fenced", Faults: []string{"crash"}, TTL: 400 * time.Millisecond})
	require.Equal(t, models.Held, e.Verdicts[models.Tokens])
	// External servers are never the catalogue's scenario, and say so in their label.
	s := spec.Spec{Backend: "nats", Options: map[string]string{natslock.OptionURL: "nats://127.0.0.1:4222"}, Resource: "fenced", Faults: []string{"pause"}}
	_, cat = builtin.Catalogue().Expect(builtin.Registry(), s)
	require.False(t, cat)
	require.Equal(t, "nats-external-fenced-pause", builtin.Catalogue().Label(builtin.Registry(), s))
}

// evaluate of a backend without tokens plans its unfenced runs only (it used to stop at
// the TTL probe, which tried the default fenced register).
func TestEvaluateTokenlessPlan(t *testing.T) {
	cfg, _, err := campaign.ResolveEvaluateTTL(context.Background(), builtin.Registry(), campaign.EvaluateConfig{Backend: "redlock"})
	require.NoError(t, err)
	plan, err := campaign.PlanEvaluate(builtin.Registry(), builtin.Catalogue(), cfg)
	require.NoError(t, err)
	require.NotEmpty(t, plan.Scorecard.NoToken)
	require.Len(t, plan.Jobs, 6, "pause, pause-before-read, delay, partition, node-pause, crash")
	for _, j := range plan.Jobs {
		require.Equal(t, "unfenced", j.Resource)
	}
}
