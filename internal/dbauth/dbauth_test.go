package dbauth_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/internal/dbauth"
)

// SQLSTATE 28P01 and 28000 are the server refusing the user; other errors are not.
func TestPostgres(t *testing.T) {
	for _, tc := range []struct {
		code, message string
		refused       bool
	}{
		{"28P01", `password authentication failed for user "app"`, true},
		{"28000", `role "ghost" does not exist`, true},
		{"3D000", `database "nope" does not exist`, false},
		{"57P03", "the database system is starting up", false},
	} {
		cause := fmt.Errorf("failed to connect: %w", &pgconn.PgError{Severity: "FATAL", Code: tc.code, Message: tc.message})
		err := dbauth.Postgres("127.0.0.1:5432", "app", cause)
		if !tc.refused {
			require.NoError(t, err, tc.code)
			continue
		}
		require.EqualError(t, err, "PostgreSQL at 127.0.0.1:5432 refused user app: wrong password or no such user (the server says: "+tc.message+")")
		require.ErrorIs(t, err, dbauth.ErrRefused)
		var pe *pgconn.PgError
		require.ErrorAs(t, err, &pe)
	}
	require.NoError(t, dbauth.Postgres("127.0.0.1:5432", "app", errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")))
	require.NoError(t, dbauth.Postgres("127.0.0.1:5432", "app", nil))
}
