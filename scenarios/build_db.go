package scenarios

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/resource/postgres"
	"github.com/fencecheck/fencecheck/harness/resource/sqldb"
	"github.com/fencecheck/fencecheck/harness/resource/sqlite"
)

// databaseResourceNames lists the database resources (SQLite, embedded; PostgreSQL, a
// server given by DSN), for ResourceNames.
func databaseResourceNames() []Named {
	return []Named{
		{"sqlite", "a row in an embedded SQLite database (WAL): one conditional UPDATE ... WHERE key = ? AND token < ?; rows affected decide"},
		{"sqlite-toctou", "SQLite guarded by check-then-write: SELECT token, compare, then UPDATE without the condition, each statement autocommitted"},
		{"sqlite-toctou-tx", "the SQLite check-then-write inside one deferred transaction (SQLite's default; serializable)"},
		{"sqlite-toctou-immediate", "the SQLite check-then-write inside BEGIN IMMEDIATE (takes the write lock before the check)"},
		{"sqlite-outbox", "SQLite fenced UPDATE and an outbox INSERT in one transaction; a relay delivers committed rows to the side-effect sink"},
		{"sqlite-direct", "SQLite fenced UPDATE, but the client calls the side-effect sink itself just before writing"},
		{"postgres", "a row in PostgreSQL (--postgres-dsn or $" + postgres.EnvDSN + "): one conditional UPDATE ... WHERE key = $3 AND token < $2"},
		{"postgres-toctou", "PostgreSQL guarded by check-then-write: SELECT token, compare, then UPDATE without the condition, each statement autocommitted"},
		{"postgres-toctou-tx", "the PostgreSQL check-then-write inside one transaction at the default READ COMMITTED"},
		{"postgres-toctou-serializable", "the PostgreSQL check-then-write inside one SERIALIZABLE transaction (serialization failures retried)"},
		{"postgres-toctou-forupdate", "the PostgreSQL check-then-write with SELECT ... FOR UPDATE in one READ COMMITTED transaction"},
		{"postgres-outbox", "PostgreSQL fenced UPDATE and an outbox INSERT in one transaction; a relay delivers committed rows to the side-effect sink"},
		{"postgres-direct", "PostgreSQL fenced UPDATE, but the client calls the side-effect sink itself just before writing"},
	}
}

// databaseMode returns the sqldb mode of a database resource name.
func databaseMode(resource string) (sqldb.Mode, bool) {
	if m, ok := sqlite.Mode(resource); ok {
		return m, true
	}
	return postgres.Mode(resource)
}

// checksThenWrites reports whether a database resource's clients check the token and
// write in separate statements, so that a "pause" strikes between the two
// (harness.PauseAfterCheck), like the register's toctou.
func checksThenWrites(resource string) bool {
	m, ok := databaseMode(resource)
	return ok && m.ChecksThenWrites()
}

// postgresDSN is the spec's DSN, or $FENCECHECK_POSTGRES_DSN.
func postgresDSN(s Spec) string {
	if s.PostgresDSN != "" {
		return s.PostgresDSN
	}
	return os.Getenv(postgres.EnvDSN)
}

// buildDatabase starts the database resource s.Resource names; any other name is an
// unknown resource. tempDir makes a directory removed when the run's env closes.
func buildDatabase(ctx context.Context, s Spec, tempDir func() (string, error)) (harness.Resource, error) {
	if _, ok := sqlite.Mode(s.Resource); ok {
		if slices.Contains(s.Faults, "delay") { // validation refuses it first; kept as a guard
			return nil, fmt.Errorf("%w: fault delay holds a write in the network, and %s is embedded: there is no network between the client and SQLite (use pause, or a postgres resource)", ErrSpec, s.Resource)
		}
		dir, err := tempDir()
		if err != nil {
			return nil, err
		}
		r, err := sqlite.New(ctx, sqlite.Config{Name: s.Resource, Fence: s.Fence, Dir: dir})
		if err != nil {
			return nil, err
		}
		return r, nil
	}
	if _, ok := postgres.Mode(s.Resource); ok {
		r, err := postgres.New(ctx, postgres.Config{Name: s.Resource, Fence: s.Fence, DSN: postgresDSN(s)})
		if err != nil {
			if errors.Is(err, postgres.ErrUnavailable) {
				return nil, fmt.Errorf("%w: resource %s: %w", ErrSpec, s.Resource, err)
			}
			return nil, err
		}
		return r, nil
	}
	return nil, fmt.Errorf("%w: unknown resource %q", ErrSpec, s.Resource)
}

// needsPostgres reports whether a spec needs a PostgreSQL server, and whether one is
// configured (tests skip such scenarios when none is).
func needsPostgres(s Spec) (needs, configured bool) {
	return strings.HasPrefix(s.Resource, "postgres"), postgresDSN(s) != ""
}
