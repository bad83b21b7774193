package execlock_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	execlock "github.com/fencecheck/fencecheck/backend/execlock"
	"github.com/fencecheck/fencecheck/backend/execlock/exectest"
	"github.com/fencecheck/fencecheck/backend/naive"
	"github.com/fencecheck/fencecheck/builtin"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/proc/proctest"
	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/harnesstest"
)

// env is what a run gives the descriptor's Start.
func env(t *testing.T, opts map[string]string) (registry.Env, registry.Backend) {
	t.Helper()
	d, ok := builtin.Registry().Backend(execlock.Name)
	require.True(t, ok)
	return registry.Env{
		Settings:    registry.Settings{TTL: registry.DefaultTTL, Members: 1, Clients: 2, Options: opts}.WithOptions(d.Options),
		RunID:       "run-test",
		ClientClock: func(int) func() time.Time { return time.Now },
		TempDir:     func() (string, error) { return t.TempDir(), nil },
		LogFile:     func(string) (io.Writer, string, error) { return io.Discard, "", nil },
	}, d
}

func requirePython(t *testing.T) {
	t.Helper()
	proctest.Skip(t, exectest.Python)
}

// The contract every backend meets, with the Python template client (found through
// $FENCECHECK_EXAMPLES, as the catalogue finds it) against the naive server.
func TestDescriptorContract(t *testing.T) {
	requirePython(t)
	opts := map[string]string{execlock.OptionClientCmd: `python3 "$` + execlock.ExamplesEnv + `/naive_http.py"`}
	// The lock service is the naive server, whose in-memory counter a crash loses (its
	// descriptor declares it): the crash rule checks that it really does.
	harnesstest.Backend(t, harnesstest.Config{TTL: registry.DefaultTTL, TokensResetOnCrash: naive.Descriptors()[0].TokensResetOnCrash, Start: func(ctx context.Context, t *testing.T) (harness.Backend, error) {
		e, d := env(t, opts)
		if err := d.CheckSettings(e.Settings); err != nil {
			return nil, err
		}
		return d.Start(ctx, e)
	}})
	requireNoProcesses(t)
}

// The capabilities the descriptor's Shape gives are the started backend's: the lock
// service's (node faults act on it) and the clients' own (processes).
func TestDescriptorCaps(t *testing.T) {
	requirePython(t)
	srv, err := naive.New(naive.Config{TTL: registry.DefaultTTL})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	cmd := template(t)
	tests := []struct {
		name string
		opts map[string]string
		want registry.Caps
	}{
		{"naive, the default", map[string]string{execlock.OptionClientCmd: cmd},
			registry.Caps{Crasher: true, ServiceClock: true, WallClock: true, ClientProcesses: true}},
		{"naive-persisted", map[string]string{execlock.OptionClientCmd: cmd, execlock.OptionLockService: "naive-persisted"},
			registry.Caps{Crasher: true, ServiceClock: true, WallClock: true, ClientProcesses: true}},
		{"an existing service", map[string]string{execlock.OptionClientCmd: cmd, execlock.OptionLockEndpoints: srv.Endpoints()[0]},
			registry.Caps{External: "servers given by --lock-endpoints", ClientProcesses: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, d := env(t, tt.opts)
			require.Equal(t, tt.want, d.PlanCaps(e.Settings))
			b := harnesstest.Start(t, d, e.Settings)
			_, isFailing := b.(harness.Failing)
			require.True(t, isFailing, "a broken client ends the run")
			require.NoError(t, b.Close())
			require.NoError(t, b.Close())
		})
	}
	requireNoProcesses(t)
}

// An existing service that does not answer is the user's input.
func TestDescriptorUnreachable(t *testing.T) {
	addr := proctest.DeadAddr(t)
	e, d := env(t, map[string]string{execlock.OptionClientCmd: "x", execlock.OptionLockEndpoints: addr})
	_, err := d.Start(context.Background(), e)
	require.ErrorIs(t, err, registry.ErrInput)
	require.ErrorContains(t, err, "does not answer")
}

// Over the real-server lock services too: what exec's Shape gives is what its started
// value has, whatever the service's own capabilities are.
func TestDescriptorCapsOverServices(t *testing.T) {
	requirePython(t)
	cmd := template(t)
	reg := builtin.Registry()
	for _, name := range []string{"zookeeper", "redis", "nats", "naive-wallclock"} {
		t.Run(name, func(t *testing.T) {
			svc, ok := reg.Backend(name)
			require.True(t, ok)
			e, d := env(t, map[string]string{execlock.OptionClientCmd: cmd, execlock.OptionLockService: name})
			if why := d.Unavailability(e.Settings); why != "" {
				t.Skip(why)
			}
			require.Equal(t, append(execlock.ExampleNeeds(cmd), svc.NeedsOf(registry.Settings{})...), d.NeedsOf(e.Settings), "exec needs python3 for the template and what its lock service needs")
			b := harnesstest.Start(t, d, e.Settings)
			require.True(t, d.RunCaps(e.Settings, b).ClientProcesses)
			require.Equal(t, svc.PlanCaps(e.Settings).Crasher, registry.CapsOf(b).Crasher, "node faults act on the service")
		})
	}
	requireNoProcesses(t)
}
