package proc_test

import (
	"fmt"
	"net"
	"os"
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

// The port lies below the kernel's ephemeral range, where no outgoing connection can be
// given it as its local port.
func TestFreePortIsNotEphemeral(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		t.Skip("no /proc/sys/net/ipv4/ip_local_port_range here")
	}
	var lo, hi int
	_, err = fmt.Sscan(string(b), &lo, &hi)
	require.NoError(t, err)
	for range 20 {
		p, err := proc.FreePort()
		require.NoError(t, err)
		require.Less(t, p, lo)
	}
}
