package proc_test

import (
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/harness/proc"
)

// The port FreePort gives can be bound on loopback right after.
func TestFreePort(t *testing.T) {
	p, err := proc.FreePort()
	require.NoError(t, err)
	require.Positive(t, p)
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
	require.NoError(t, err)
	require.NoError(t, ln.Close())
}
