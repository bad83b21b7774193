package registry_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/registry"
)

// A refusal prints its words only; its Go names survive wrapping and joining, and
// WithGoNames adds them to the text once, keeping the chain.
func TestRefusalGoNames(t *testing.T) {
	base := errors.New("bad input")
	r := registry.Refuse("harness.Cluster", "backend %s is not a cluster: %w", "naive", base)
	require.Equal(t, "backend naive is not a cluster: bad input", r.Error())
	require.ErrorIs(t, r, base)

	wrapped := fmt.Errorf("invalid scenario: %w", errors.Join(r, registry.Refuse("harness.Crasher", "cannot crash")))
	require.Equal(t, []string{"harness.Cluster", "harness.Crasher"}, registry.GoNames(wrapped))
	g := registry.WithGoNames(wrapped)
	require.ErrorIs(t, g, base)
	require.Contains(t, g.Error(), "(in Go: harness.Cluster, harness.Crasher)")
	require.Equal(t, g.Error(), registry.WithGoNames(g).Error(), "added once")

	plain := errors.New("no such file")
	require.Equal(t, plain, registry.WithGoNames(plain))
	require.Nil(t, registry.WithGoNames(nil))

	restated := registry.CarryGoNames(errors.New("fault crash does not apply: cannot crash"), wrapped)
	require.Equal(t, []string{"harness.Cluster", "harness.Crasher"}, registry.GoNames(restated))
	require.Equal(t, "fault crash does not apply: cannot crash", restated.Error())
}

// A refusal of a descriptor without a Shape (none, or one without a Backend) says the
// Shape is missing and how to set it, and names registry.Backend.Shape first; with a
// Shape, or for an error that is no refusal, nothing changes.
func TestShapeRefusal(t *testing.T) {
	refusal := registry.Refuse("harness.Crasher", "fault %q cannot crash backend %s", "crash", "mine")
	withShape := func(registry.Settings) registry.Shape { return registry.Shape{Backend: shaped{}} }
	for _, tc := range []struct {
		name  string
		shape func(registry.Settings) registry.Shape
		err   error
		want  string // "": err unchanged
	}{
		{"no Shape", nil, refusal, "backend mine's descriptor has no Shape"},
		{"empty Shape", func(registry.Settings) registry.Shape { return registry.Shape{} }, refusal, "backend mine's descriptor has a Shape that gives no Backend value"},
		{"a Shape", withShape, refusal, ""},
		{"no refusal", nil, errors.New("ttl too short"), ""},
		{"nil", nil, nil, ""},
	} {
		b := registry.Backend{
			Name: "mine",
			Lifecycle: registry.Lifecycle{
				Shape: tc.shape,
			},
		}
		got := b.ShapeRefusal(registry.Settings{}, tc.err)
		if tc.want == "" {
			require.Equal(t, tc.err, got, tc.name)
			continue
		}
		require.ErrorContains(t, got, tc.want, tc.name)
		require.ErrorContains(t, got, "set its Shape to return values of the types its Start, NewLocker and Acquire return", tc.name)
		require.ErrorContains(t, got, `as planned without it, fault "crash" cannot crash backend mine`, tc.name)
		require.ErrorIs(t, got, refusal, tc.name)
		require.Equal(t, []string{"registry.Backend.Shape", "harness.Crasher"}, registry.GoNames(got), tc.name)
		require.Equal(t, b.ShapeMissing(registry.Settings{}), strings.SplitN(got.Error(), "; as planned", 2)[0], tc.name)
	}
}

// shaped is a backend value a Shape gives.
type shaped struct{}

func (shaped) Name() string        { return "mine" }
func (shaped) Endpoints() []string { return nil }
func (shaped) Close() error        { return nil }
func (shaped) NewLocker(context.Context, int, []string) (harness.Locker, error) {
	return nil, errors.New("never called")
}
