package sqlsession

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// A server that refused TLS gets the hint to add sslmode=disable; any other error is
// left as it is, and the cause stays visible to errors.Is.
func TestConnectHint(t *testing.T) {
	cause := errors.New("failed to connect to `user=app database=app`: 127.0.0.1:5432 (127.0.0.1): tls error: server refused TLS connection")
	err := ConnectHint(OneLine(cause))
	require.Equal(t, cause.Error()+"; the server refused TLS: add sslmode=disable to the DSN", err.Error())
	require.ErrorIs(t, err, cause)
	other := errors.New("connection refused")
	require.Equal(t, other, ConnectHint(other))
	require.NoError(t, ConnectHint(nil))
}
