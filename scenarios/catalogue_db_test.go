package scenarios

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/harness/resource/postgres"
)

// skipWithoutPostgres skips a scenario that needs a PostgreSQL server when none is
// configured, saying how to configure one.
func skipWithoutPostgres(t *testing.T, s Spec) {
	t.Helper()
	if needs, configured := needsPostgres(s); needs && !configured {
		t.Skipf("resource %s needs a PostgreSQL server: set %s (e.g. postgres://fencecheck:fencecheck@127.0.0.1:5432/fencecheck); .ci/run does", s.Resource, postgres.EnvDSN)
	}
}

func TestDatabaseScenarioNames(t *testing.T) {
	seen := map[string]bool{}
	for _, sc := range databaseScenarios() {
		require.False(t, seen[sc.Name], "duplicate scenario %s", sc.Name)
		seen[sc.Name] = true
		_, err := sc.Spec.withDefaults()
		require.NoError(t, err, sc.Name)
		_, ok := databaseMode(sc.Resource)
		require.True(t, ok, sc.Name)
	}
	for _, n := range databaseResourceNames() {
		_, ok := databaseMode(n.Name)
		require.True(t, ok, "listed resource %s has no mode", n.Name)
	}
	require.True(t, checksThenWrites("postgres-toctou-forupdate"))
	require.False(t, checksThenWrites("sqlite-outbox"))
	require.False(t, checksThenWrites("toctou"), "the register's toctou is spec.go's")
}

// A database that cannot be used is the user's input: ErrSpec (exit 2), one clear
// message, within a few seconds.
func TestDatabaseSpecErrors(t *testing.T) {
	t.Setenv(postgres.EnvDSN, "")
	for _, tc := range []struct {
		name string
		spec Spec
		want string
	}{
		{"no dsn", Spec{Resource: "postgres"}, "no PostgreSQL server configured"},
		{"bad dsn", Spec{Resource: "postgres-outbox", PostgresDSN: "postgres://u:sekrit@127.0.0.1:notaport/db"}, "bad PostgreSQL DSN"},
		{"unreachable", Spec{Resource: "postgres", PostgresDSN: "postgres://u:sekrit@127.0.0.1:1/db?sslmode=disable"}, "cannot connect to PostgreSQL at 127.0.0.1:1"},
		{"sqlite delay", Spec{Resource: "sqlite", Faults: []string{"delay"}}, "there is no network between the client and SQLite"},
		{"unknown database", Spec{Resource: "sqlite-toctou-serializable"}, `unknown resource "sqlite-toctou-serializable"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, err := Execute(context.Background(), tc.spec, Options{})
			require.ErrorIs(t, err, ErrSpec)
			require.ErrorContains(t, err, tc.want)
			require.NotContains(t, err.Error(), "sekrit")
			require.Less(t, time.Since(start), 5*time.Second)
		})
	}
}
