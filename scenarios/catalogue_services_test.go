package scenarios

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	natslock "github.com/fencecheck/fencecheck/harness/lease/nats"
	redislock "github.com/fencecheck/fencecheck/harness/lease/redis"
	"github.com/fencecheck/fencecheck/harness/proc"
	"github.com/fencecheck/fencecheck/models"
)

// skipWithoutService skips a scenario whose lock service is not installed, naming the
// Debian package.
func skipWithoutService(t *testing.T, s Spec) {
	t.Helper()
	prog, pkg := serviceProgram(s.Backend)
	if prog == "" {
		return
	}
	if _, err := exec.LookPath(prog); err != nil {
		t.Skipf("backend %s needs %s (Debian package %s)", s.Backend, prog, pkg)
	}
}

func TestServiceSpecErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec Spec
		want string
	}{
		{"tokenless fenced", Spec{Backend: "redis-notoken", Resource: "fenced"}, "cannot be made safe by fencing"},
		{"redlock fenced", Spec{Backend: "redlock", Resource: "fenced"}, "no fencing token: cannot be made safe by fencing"},
		{"redlock 4 members", Spec{Backend: "redlock", Resource: "unfenced", Members: 4}, "--members must be 3 or 5"},
		{"nats external node fault", Spec{Backend: "nats", NatsURL: "nats://127.0.0.1:1", Faults: []string{"node-pause"}}, "only takes client-side faults"},
		{"nats url on redis", Spec{Backend: "redis", NatsURL: "nats://127.0.0.1:1"}, "--nats-url is for the nats backend"},
		{"nats skew", Spec{Backend: "nats", Faults: []string{"skew"}}, "cannot reach a Go binary"},
		{"nats short ttl", Spec{Backend: "nats", TTL: 60 * time.Millisecond}, "JetStream refuses a bucket MaxAge that short"},
		{"tokenless toctou", Spec{Backend: "redis-notoken", Resource: "toctou"}, "cannot be made safe by fencing"},
		{"no leader", Spec{Backend: "redis", Faults: []string{"leader-isolation"}}, "needs a lock service with a leader"},
		{"no clock", Spec{Backend: "redis", Faults: []string{"skew"}}, "clock cannot be moved"},
		{"external node fault", Spec{Backend: "redis", RedisAddrs: []string{"127.0.0.1:1"}, Faults: []string{"crash"}}, "only takes client-side faults"},
		{"addrs on another backend", Spec{Backend: "naive", RedisAddrs: []string{"127.0.0.1:1"}}, "--redis-addrs is for the redis and redlock backends"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Normalize(tc.spec)
			require.ErrorIs(t, err, ErrSpec)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// Existing servers (--redis-addrs, --nats-url): the same workload and client-side faults
// through local proxies; fencecheck starts no server of its own.
func TestExternalServices(t *testing.T) {
	ctx := context.Background()
	t.Run("redis", func(t *testing.T) {
		skipWithoutService(t, Spec{Backend: "redis"})
		s, err := redislock.StartServer(ctx, redislock.ServerConfig{Dir: t.TempDir()})
		require.NoError(t, err)
		defer s.Close()
		o, err := Execute(ctx, Spec{Backend: "redis", RedisAddrs: []string{s.Addr()}, Resource: "fenced", Faults: []string{"pause"}}, Options{})
		require.NoError(t, err)
		require.Equal(t, models.Held, o.Report.Verdicts[models.Register])
		require.Positive(t, o.Report.Evidence.StaleRejected)
		require.Equal(t, []int{s.PID()}, proc.Descendants(os.Getpid()), "only the test's own server runs")
	})
	t.Run("nats", func(t *testing.T) {
		skipWithoutService(t, Spec{Backend: "nats"})
		s, err := natslock.StartServer(ctx, natslock.ServerConfig{Dir: t.TempDir()})
		require.NoError(t, err)
		defer s.Close()
		o, err := Execute(ctx, Spec{Backend: "nats", NatsURL: s.URL(), Resource: "unfenced", Faults: []string{"pause"}}, Options{})
		require.NoError(t, err)
		require.Equal(t, models.Violated, o.Report.Verdicts[models.Register])
		require.Equal(t, []int{s.PID()}, proc.Descendants(os.Getpid()), "only the test's own server runs")
	})
}

func TestServiceExpectations(t *testing.T) {
	// No token: the tokens property is violated by declaration, whatever the fault.
	e, cat := ExpectFor(CellSpec("redlock", "unfenced", []string{"delay"}, nil))
	require.False(t, cat)
	require.Equal(t, models.Violated, e.Verdicts[models.Tokens])
	require.Equal(t, models.Violated, e.Verdicts[models.Register])
	// A counter without persistence starts over after a crash.
	e, _ = ExpectFor(Spec{Backend: "redis-volatile", Resource: "fenced", Faults: []string{"crash"}, TTL: 400 * time.Millisecond})
	require.Equal(t, models.Violated, e.Verdicts[models.Tokens])
	require.Equal(t, models.Held, e.Verdicts[models.Register])
	// With the AOF it does not.
	e, _ = ExpectFor(Spec{Backend: "redis", Resource: "fenced", Faults: []string{"crash"}, TTL: 400 * time.Millisecond})
	require.Equal(t, models.Held, e.Verdicts[models.Tokens])
	// External servers are never the catalogue's scenario, and say so in their label.
	s := Spec{Backend: "nats", NatsURL: "nats://127.0.0.1:4222", Resource: "fenced", Faults: []string{"pause"}}
	_, cat = ExpectFor(s)
	require.False(t, cat)
	require.Equal(t, "nats-external-fenced-pause", Label(s))
}
