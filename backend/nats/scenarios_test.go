package nats_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/backend/nats"
	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/harness/proc"
	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/harnesstest"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/spec"
	"github.com/fencecheck/fencecheck/trial"
)

func newReg(t testing.TB) *registry.Registry { return harnesstest.Registry(t, nats.Descriptor()) }

func TestSpecErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    spec.Spec
		want string
	}{
		{"external node fault", spec.Spec{Backend: "nats", Options: map[string]string{nats.OptionURL: "nats://127.0.0.1:1"}, Faults: []string{"node-pause"}}, "takes client-side faults only"},
		{"bad url", spec.Spec{Backend: "nats", Options: map[string]string{nats.OptionURL: "127.0.0.1:1"}}, "is not one nats://host:port"},
		{"skew", spec.Spec{Backend: "nats", Faults: []string{"skew"}}, "server clock cannot be skewed: its server and clients read the machine's real time"},
		{"short ttl", spec.Spec{Backend: "nats", TTL: 60 * time.Millisecond}, "at least 100ms (the bucket's MaxAge)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := spec.Normalize(newReg(t), tc.s)
			require.ErrorIs(t, err, spec.ErrSpec)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// The Shape gives what the started backend has, on fencecheck's server and on an
// existing one.
func TestShapes(t *testing.T) {
	reg := newReg(t)
	harnesstest.SkipUnavailable(t, reg, spec.Spec{Backend: "nats"})
	d, _ := reg.Backend("nats")
	for _, existing := range []bool{false, true} {
		s := registry.Settings{TTL: 500 * time.Millisecond, Members: 1}
		if existing {
			srv, err := nats.StartServer(context.Background(), nats.ServerConfig{Dir: t.TempDir()})
			require.NoError(t, err)
			t.Cleanup(func() { _ = srv.Close() })
			s.Options = map[string]string{nats.OptionURL: srv.URL()}
		}
		c := d.RunCaps(s, harnesstest.Start(t, d, s))
		require.Equal(t, existing, c.External != "")
		require.Equal(t, !existing, c.ProcessNodes && c.SingleProcess() && c.Crasher)
	}
}

// An existing server (--nats-url): the same workload and client-side faults through
// local proxies; fencecheck starts no server of its own. Its runs are never the
// catalogue's scenarios, and say so in their label.
func TestExistingServer(t *testing.T) {
	ctx := context.Background()
	reg := newReg(t)
	harnesstest.SkipUnavailable(t, reg, spec.Spec{Backend: "nats"})
	s, err := nats.StartServer(ctx, nats.ServerConfig{Dir: t.TempDir()})
	require.NoError(t, err)
	defer s.Close()
	sp := spec.Spec{Backend: "nats", Options: map[string]string{nats.OptionURL: s.URL()}, Resource: "unfenced", Faults: []string{"pause"}}
	o, err := trial.Run(ctx, reg, sp, trial.Options{})
	require.NoError(t, err)
	require.Equal(t, models.Violated, o.Report.Verdicts[models.Register])
	require.Equal(t, []int{s.PID()}, proc.Descendants(os.Getpid()), "only the test's own server runs")
	cat := catalogue.Catalogue(nats.Scenarios())
	_, fromCat := cat.Expect(reg, sp)
	require.False(t, fromCat)
	require.Equal(t, "nats-external-unfenced-pause", cat.Label(reg, sp))
}
