package registry

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/harness"
)

// plain is a backend with no optional capability.
type plain struct{}

func (plain) Name() string        { return "plain" }
func (plain) Endpoints() []string { return []string{"127.0.0.1:1"} }
func (plain) Close() error        { return nil }
func (plain) NewLocker(context.Context, int, []string) (harness.Locker, error) {
	return nil, errors.New("not in this test")
}

type external struct{ plain }

func (external) External() string { return "servers named by --x" }

type tokenless struct{ plain }

func (tokenless) NoFencingToken() string { return "no order" }

// crasher is a single server fencecheck can crash.
type crasher struct{ plain }

func (crasher) Crash(context.Context, int) error         { return nil }
func (crasher) Restart(context.Context, int, bool) error { return nil }

// wrapper runs its clients against a service: the service's capabilities are its
// service's, the clients' its own.
type wrapper struct {
	plain
	service harness.Backend
}

func (w wrapper) Unwrap() harness.Backend { return w.service }

// cluster is a cluster of crashable nodes.
type cluster struct{ crasher }

func (cluster) Nodes() int                           { return 3 }
func (cluster) Leader(context.Context) (int, error)  { return 0, nil }
func (cluster) Isolate(context.Context, int) error   { return nil }
func (cluster) StallNode(context.Context, int) error { return nil }
func (cluster) Heal(context.Context) error           { return nil }

// processLocker is a locker that is a process of its own; expiring a lease that knows
// its end.
type processLocker struct{ harness.Locker }

func (processLocker) CrashProcess(context.Context) (int, int, error) { return 0, 0, nil }

type expiring struct{ harness.Lease }

func (expiring) ValidUntil() time.Time { return time.Time{} }

func TestCapsOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    harness.Backend
		want Caps
	}{
		{"plain", plain{}, Caps{}},
		{"external", external{}, Caps{External: "servers named by --x"}},
		{"tokenless", tokenless{}, Caps{NoToken: "no order"}},
		{"wrapper of a crasher", wrapper{service: crasher{}}, Caps{Crasher: true}},
		{"wrapper of a tokenless service", wrapper{service: tokenless{}}, Caps{}},
		{"wrapper of nothing", wrapper{}, Caps{}},
		{"cluster", cluster{}, Caps{Cluster: true, Nodes: 3, Crasher: true}},
	} {
		t.Run(tc.name, func(t *testing.T) { require.Equal(t, tc.want, CapsOf(tc.b)) })
	}
}

// Before anything starts, capabilities come from the Shape's types (a cluster's size
// from the settings), the descriptor's facts and its words.
func TestPlanCaps(t *testing.T) {
	d := Backend{
		Name:    "svc",
		Token:   "no order",
		Options: []Option{{Name: "eps", External: true}},
		Facts: Facts{
			DurableLeases: true,
		},
		Lifecycle: Lifecycle{
			Shape: func(s Settings) Shape {
				if s.Option("eps") != "" {
					return Shape{Backend: external{}}
				}
				return Shape{Backend: cluster{}, Locker: processLocker{}, Lease: expiring{}}
			},
		},
	}
	require.Equal(t, Caps{Cluster: true, Nodes: 5, Crasher: true, DurableLeases: true, ClientProcesses: true, ClientExpiry: true},
		d.PlanCaps(Settings{Members: 5}))
	require.Equal(t, Caps{External: "servers given by --eps", DurableLeases: true}, d.PlanCaps(Settings{Members: 1, Options: map[string]string{"eps": "x"}}))
	d.Shape = func(Settings) Shape { return Shape{Backend: tokenless{}} }
	require.Equal(t, "no order", d.PlanCaps(Settings{}).NoToken)
	require.Equal(t, Caps{}, Backend{Name: "none"}.PlanCaps(Settings{}), "no Shape: no capability")
	// A wrapper's Shape holds its service's shape.
	d.Shape = func(Settings) Shape { return Shape{Backend: wrapper{service: (*crasher)(nil)}} }
	require.True(t, d.PlanCaps(Settings{}).Crasher)
}

// A Shape that disagrees with the started values says so in one line, naming only the
// fields that differ.
func TestShapeDiff(t *testing.T) {
	require.Empty(t, ShapeDiff(Shape{Backend: cluster{}}, 3, cluster{}, nil, nil))
	require.Equal(t, "Nodes: Shape 5, started 3", ShapeDiff(Shape{Backend: cluster{}}, 5, cluster{}, nil, nil))
	require.Equal(t, "Crasher: Shape false, started true; Expiring: Shape false, started true",
		ShapeDiff(Shape{Backend: plain{}, Locker: processLocker{}}, 1, crasher{}, processLocker{}, expiring{}))
	require.Equal(t, "CrashableProcess: Shape false, started true", ShapeDiff(Shape{Backend: plain{}}, 1, plain{}, processLocker{}, nil))
}

func TestSettingsOption(t *testing.T) {
	t.Setenv("REGISTRY_TEST_DSN", "from-env")
	opts := []Option{{Name: "dsn", Env: "REGISTRY_TEST_DSN"}, {Name: "eps"}}
	s := Settings{Options: map[string]string{"eps": "a:1, b:2,"}}.WithOptions(opts)
	require.Equal(t, "from-env", s.Option("dsn"), "an unset option reads its environment variable")
	require.Equal(t, []string{"a:1", "b:2"}, s.List("eps"))
	s.Options["dsn"] = "given"
	require.Equal(t, "given", s.Option("dsn"))
}

func TestInput(t *testing.T) {
	err := fmt.Errorf("start: %w", Input(errors.New("bad ttl")))
	require.ErrorIs(t, err, ErrInput)
	require.Equal(t, "start: bad ttl", err.Error(), "the message is the cause's")
	require.NoError(t, Input(nil))
	require.NotErrorIs(t, errors.New("x"), ErrInput)
}

func TestCheckSettingsSingleServer(t *testing.T) {
	b := Backend{Name: "one"}
	require.NoError(t, b.CheckSettings(Settings{Members: 1}))
	require.ErrorContains(t, b.CheckSettings(Settings{Members: 3}), "runs one member only here: --members must be 1")
	require.True(t, Backend{Options: []Option{{Name: "eps", External: true}}}.IsExternal(Settings{Options: map[string]string{"eps": "x"}}))
	require.False(t, Backend{Options: []Option{{Name: "eps"}}}.IsExternal(Settings{Options: map[string]string{"eps": "x"}}))
}

func TestCheckServices(t *testing.T) {
	start := func(context.Context, Env) (harness.Backend, error) { return nil, nil }
	for _, tc := range []struct {
		name     string
		backends []Backend
		want     string
	}{
		{"one each", []Backend{{
			Name: "a",
			Listing: Listing{
				Recommended: true,
			},
		}, {
			Name: "a-x",
			Listing: Listing{
				Service: "a",
			},
		}, {
			Name: "b",
			Listing: Listing{
				Recommended: true,
			},
		}}, ""},
		{"none", []Backend{{Name: "a"}, {
			Name: "a-x",
			Listing: Listing{
				Service: "a",
			},
		}}, `service "a" has no recommended variant`},
		{"a service of one backend needs no mark", []Backend{{
			Name: "a",
			Listing: Listing{
				Recommended: true,
			},
		}, {
			Name: "a-x",
			Listing: Listing{
				Service: "a",
			},
		}, {Name: "mine"}}, ""},
		{"two", []Backend{{
			Name: "a",
			Listing: Listing{
				Recommended: true,
			},
		}, {
			Name: "a-x",
			Listing: Listing{
				Service:     "a",
				Recommended: true,
			},
		}}, `service "a" has 2 recommended variants (a, a-x)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := New()
			for _, b := range tc.backends {
				b.Start = start
				require.NoError(t, reg.AddBackend(b))
			}
			err := reg.CheckServices()
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.want)
		})
	}
	reg := New()
	require.NoError(t, reg.AddBackend(Backend{
		Name: "a",
		Lifecycle: Lifecycle{
			Start: start,
		},
		Listing: Listing{
			Recommended: true,
		},
	}, Backend{
		Name: "a-x",
		Lifecycle: Lifecycle{
			Start: start,
		},
		Listing: Listing{
			Service: "a",
		},
	}))
	require.NoError(t, reg.AddBackend(Backend{
		Name: "mine",
		Lifecycle: Lifecycle{
			Start: start,
		},
	}))
	require.Equal(t, []string{"a", "mine"}, []string{reg.Recommended()[0].Name, reg.Recommended()[1].Name})
	require.Len(t, reg.Variants("a"), 2)
	require.True(t, reg.IsRecommended("mine"))
	require.False(t, reg.IsRecommended("a-x"))
}
