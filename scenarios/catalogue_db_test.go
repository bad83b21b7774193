package scenarios

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/harness/builtin"
	"github.com/fencecheck/fencecheck/harness/resource/postgres"
	"github.com/fencecheck/fencecheck/harness/resource/sqlite"
	"github.com/fencecheck/fencecheck/spec"
	"github.com/fencecheck/fencecheck/trial"
)

func TestDatabaseScenarioNames(t *testing.T) {
	for _, sc := range builtin.Catalogue() {
		res, _ := builtin.Registry().Resource(sc.Resource)
		if res.Name == "" || (!strings.HasPrefix(res.Name, "sqlite") && !strings.HasPrefix(res.Name, "postgres")) {
			continue
		}
		_, sok := sqlite.Mode(sc.Resource)
		_, pok := postgres.Mode(sc.Resource)
		require.True(t, sok || pok, sc.Name)
	}
	reg := builtin.Registry()
	for _, name := range append(sqlite.Names(), postgres.Names()...) {
		r, ok := reg.Resource(name)
		require.True(t, ok, "database resource %s is not registered", name)
		_, isToctou := map[string]bool{"sqlite-toctou": true, "postgres-toctou": true}[name]
		require.Equal(t, isToctou, r.Unfenced, name)
	}
	checks := func(name string) bool { r, _ := reg.Resource(name); return r.ChecksThenWrites }
	require.True(t, checks("postgres-toctou-forupdate"))
	require.False(t, checks("sqlite-outbox"))
	require.True(t, checks("toctou"))
	require.False(t, checks("fenced"))
}

// A database that cannot be used is the user's input: spec.ErrSpec (exit 2), one clear
// message, within a few seconds.
func TestDatabaseSpecErrors(t *testing.T) {
	t.Setenv(postgres.EnvDSN, "")
	for _, tc := range []struct {
		name string
		s    spec.Spec
		want string
	}{
		{"no dsn", spec.Spec{Resource: "postgres"}, "no PostgreSQL server configured"},
		{"bad dsn", spec.Spec{Resource: "postgres-outbox", Options: map[string]string{postgres.OptionDSN: "postgres://u:sekrit@127.0.0.1:notaport/db"}}, "bad PostgreSQL DSN"},
		{"unreachable", spec.Spec{Resource: "postgres", Options: map[string]string{postgres.OptionDSN: "postgres://u:sekrit@127.0.0.1:1/db?sslmode=disable"}}, "cannot connect to PostgreSQL at 127.0.0.1:1"},
		{"sqlite delay", spec.Spec{Resource: "sqlite", Faults: []string{"delay"}}, "there is no network between the client and SQLite"},
		{"unknown database", spec.Spec{Resource: "sqlite-toctou-serializable"}, `unknown resource "sqlite-toctou-serializable"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, err := trial.Run(context.Background(), builtin.Registry(), tc.s, trial.Options{})
			require.ErrorIs(t, err, spec.ErrSpec)
			require.ErrorContains(t, err, tc.want)
			require.NotContains(t, err.Error(), "sekrit")
			require.Less(t, time.Since(start), 5*time.Second)
		})
	}
}
