package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/backend/naive"
	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/harnesstest"
	"github.com/fencecheck/fencecheck/resource/postgres"
	"github.com/fencecheck/fencecheck/spec"
	"github.com/fencecheck/fencecheck/trial"
)

// newReg is fencecheck's registry with the naive backend and the postgres resources.
func newReg(t testing.TB) *registry.Registry {
	reg := harnesstest.Registry(t, naive.Descriptors()...)
	require.NoError(t, reg.AddResource(postgres.Descriptors()...))
	return reg
}

// Every scenario runs one of the package's resources; the check-then-write ones are
// unfenced or check in a step of their own, as their descriptors say.
func TestScenarioResources(t *testing.T) {
	reg := newReg(t)
	for _, sc := range postgres.Scenarios() {
		_, ok := postgres.Mode(sc.Resource)
		require.True(t, ok, sc.Name)
	}
	for _, name := range postgres.Names() {
		r, ok := reg.Resource(name)
		require.True(t, ok, "resource %s is not registered", name)
		require.Equal(t, name == "postgres-toctou", r.Unfenced, name)
	}
	r, _ := reg.Resource("postgres-toctou-forupdate")
	require.True(t, r.ChecksThenWrites)
}

// A database that cannot be used is the user's input: spec.ErrSpec (exit 2), one clear
// message that prints no password, within a few seconds.
func TestSpecErrors(t *testing.T) {
	t.Setenv(postgres.EnvDSN, "")
	for _, tc := range []struct {
		name string
		s    spec.Spec
		want string
	}{
		{"no dsn", spec.Spec{Resource: "postgres"}, "no PostgreSQL server configured"},
		{"bad dsn", spec.Spec{Resource: "postgres-outbox", Options: map[string]string{postgres.OptionDSN: "postgres://u:sekrit@127.0.0.1:notaport/db"}}, "bad PostgreSQL DSN"},
		{"unreachable", spec.Spec{Resource: "postgres", Options: map[string]string{postgres.OptionDSN: "postgres://u:sekrit@127.0.0.1:1/db?sslmode=disable"}}, "cannot connect to PostgreSQL at 127.0.0.1:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, err := trial.Run(context.Background(), newReg(t), tc.s, trial.Options{})
			require.ErrorIs(t, err, spec.ErrSpec)
			require.ErrorContains(t, err, tc.want)
			require.NotContains(t, err.Error(), "sekrit")
			require.Less(t, time.Since(start), 5*time.Second)
		})
	}
}
