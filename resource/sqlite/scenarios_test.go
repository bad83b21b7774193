package sqlite_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/backend/naive"
	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/harnesstest"
	"github.com/fencecheck/fencecheck/resource/sqlite"
	"github.com/fencecheck/fencecheck/spec"
)

// newReg is fencecheck's registry with the naive backend and the sqlite resources.
func newReg(t testing.TB) *registry.Registry {
	reg := harnesstest.Registry(t, naive.Descriptors()...)
	require.NoError(t, reg.AddResource(sqlite.Descriptors()...))
	return reg
}

// Every scenario runs one of the package's resources; only the two-statement
// check-then-write is unfenced, and the outbox writes in one step.
func TestScenarioResources(t *testing.T) {
	reg := newReg(t)
	for _, sc := range sqlite.Scenarios() {
		_, ok := sqlite.Mode(sc.Resource)
		require.True(t, ok, sc.Name)
	}
	for _, name := range sqlite.Names() {
		r, ok := reg.Resource(name)
		require.True(t, ok, "resource %s is not registered", name)
		require.Equal(t, name == "sqlite-toctou", r.Unfenced, name)
	}
	r, _ := reg.Resource("sqlite-outbox")
	require.False(t, r.ChecksThenWrites)
}

// An embedded database has no network to delay a write in, and a mode it does not
// have is an unknown resource: both refused in one line before anything starts.
func TestSpecErrors(t *testing.T) {
	reg := newReg(t)
	_, err := spec.Resolve(reg, spec.Spec{Resource: "sqlite", Faults: []string{"delay"}})
	require.ErrorIs(t, err, spec.ErrSpec)
	require.ErrorContains(t, err, "there is no network between the client and SQLite")
	_, err = spec.Resolve(reg, spec.Spec{Resource: "sqlite-toctou-serializable"})
	require.ErrorContains(t, err, `unknown resource "sqlite-toctou-serializable"`)
}
