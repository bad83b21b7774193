package mariadblock

import (
	"errors"
	"fmt"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/internal/dbauth"
)

// A server that refuses the credentials (error 1045) is said to have answered, naming
// the user and not the password; any other error is not a refusal.
func TestAccessDenied(t *testing.T) {
	denied := fmt.Errorf("connect: %w", &mysql.MySQLError{Number: 1045, Message: "Access denied for user 'app'@'localhost' (using password: YES)"})
	err := accessDenied("127.0.0.1:3306", "app", denied)
	require.EqualError(t, err, "MariaDB at 127.0.0.1:3306 refused user app: wrong password or no such user (the server says: Access denied for user 'app'@'localhost' (using password: YES))")
	require.ErrorIs(t, err, dbauth.ErrRefused)
	var me *mysql.MySQLError
	require.ErrorAs(t, err, &me, "the driver's error stays in the chain")

	require.NoError(t, accessDenied("127.0.0.1:3306", "app", &mysql.MySQLError{Number: 1049, Message: "Unknown database 'x'"}))
	require.NoError(t, accessDenied("127.0.0.1:3306", "app", errors.New("dial tcp: connection refused")))
	require.NoError(t, accessDenied("127.0.0.1:3306", "app", nil))
}
