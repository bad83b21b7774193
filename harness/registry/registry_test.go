package registry

import (
	"context"
	"errors"
	"fmt"
	"testing"

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

// wrapper runs process clients against a service: the service's capabilities are its
// service's, the clients' its own.
type wrapper struct {
	plain
	service harness.Backend
}

func (w wrapper) Unwrap() harness.Backend { return w.service }
func (wrapper) ClientsAreProcesses()      {}

func TestCapsOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    harness.Backend
		want Caps
	}{
		{"plain", plain{}, Caps{}},
		{"external", external{}, Caps{External: "servers named by --x"}},
		{"tokenless", tokenless{}, Caps{NoToken: "no order"}},
		{"wrapper of a crasher", wrapper{service: crasher{}}, Caps{Crasher: true, ClientProcesses: true}},
		{"wrapper of a tokenless service", wrapper{service: tokenless{}}, Caps{ClientProcesses: true}},
		{"wrapper of nothing", wrapper{}, Caps{ClientProcesses: true}},
	} {
		t.Run(tc.name, func(t *testing.T) { require.Equal(t, tc.want, CapsOf(tc.b)) })
	}
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
	require.ErrorContains(t, b.CheckSettings(Settings{Members: 3}), "single server: --members must be 1")
	require.True(t, Backend{Options: []Option{{Name: "eps", External: true}}}.IsExternal(Settings{Options: map[string]string{"eps": "x"}}))
	require.False(t, Backend{Options: []Option{{Name: "eps"}}}.IsExternal(Settings{Options: map[string]string{"eps": "x"}}))
}
