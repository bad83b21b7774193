package registry_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

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
