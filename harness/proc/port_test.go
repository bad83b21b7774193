package proc_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"syscall"
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

// A picked port that another process binds first is given up for another; any other
// failure, or a port the caller chose, is not retried.
func TestOnFreePort(t *testing.T) {
	failed := errors.New("the server did not start")
	// thief binds port as another process would between the pick and the server's bind.
	thief := func(t *testing.T, port int) {
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		require.NoError(t, err)
		t.Cleanup(func() { _ = ln.Close() })
	}
	t.Run("taken, then free", func(t *testing.T) {
		var ports []int
		port, addr, err := proc.OnFreePort(context.Background(), 0, func(port int, addr string) error {
			ports = append(ports, port)
			if len(ports) == 1 {
				thief(t, port)
				return failed
			}
			return nil
		})
		require.NoError(t, err)
		require.Len(t, ports, 2)
		require.NotEqual(t, ports[0], ports[1])
		require.Equal(t, ports[1], port)
		require.Equal(t, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), addr)
	})
	t.Run("always taken", func(t *testing.T) {
		tries := 0
		_, _, err := proc.OnFreePort(context.Background(), 0, func(port int, _ string) error {
			tries++
			thief(t, port)
			return failed
		})
		require.ErrorIs(t, err, failed)
		require.Equal(t, 5, tries)
	})
	t.Run("in use for a moment", func(t *testing.T) {
		// A probe held the port when the server bound it, and let it go since: the
		// server's own words say so.
		tries := 0
		_, _, err := proc.OnFreePort(context.Background(), 0, func(port int, _ string) error {
			tries++
			if tries == 1 {
				return fmt.Errorf("redis-server exited before it was ready; its output ends: Could not create server TCP listening socket 127.0.0.1:%d: bind: Address already in use", port)
			}
			return nil
		})
		require.NoError(t, err)
		require.Equal(t, 2, tries)
	})
	t.Run("another failure", func(t *testing.T) {
		tries := 0
		_, _, err := proc.OnFreePort(context.Background(), 0, func(int, string) error { tries++; return failed })
		require.ErrorIs(t, err, failed)
		require.Equal(t, 1, tries, "the port is free: the failure was not about it")
	})
	t.Run("a port the caller chose", func(t *testing.T) {
		free, err := proc.FreePort()
		require.NoError(t, err)
		tries := 0
		_, _, err = proc.OnFreePort(context.Background(), free, func(port int, _ string) error {
			tries++
			require.Equal(t, free, port)
			thief(t, port)
			return failed
		})
		require.ErrorIs(t, err, failed)
		require.Equal(t, 1, tries)
	})
}

// A crashed server's port, held by HoldPort, is Taken for every prober (so FreePort and
// OnFreePort never hand it to another server), while the server itself can listen on it
// again past the TIME_WAIT sockets its crash left.
func TestHeldPortIsTaken(t *testing.T) {
	ln, err := proc.ListenFree()
	require.NoError(t, err)
	addr := ln.Addr().String()
	port := ln.Addr().(*net.TCPAddr).Port
	// One connection the server closes first, as a crash does: its side stays in
	// TIME_WAIT on the port.
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
		close(accepted)
	}()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	sc := <-accepted
	require.NotNil(t, sc)
	require.NoError(t, sc.Close())
	require.NoError(t, ln.Close())
	_, _ = c.Read(make([]byte, 1)) // the server's FIN
	require.NoError(t, c.Close())

	hold, err := proc.HoldPort(addr)
	require.NoError(t, err, "the hold binds beside the TIME_WAIT socket")
	require.True(t, proc.Taken(port), "a held port is taken")
	again, err := net.Listen("tcp", addr)
	require.NoError(t, err, "the restarted server binds beside its hold")
	require.NoError(t, hold.Close())
	require.NoError(t, again.Close())
}

// A refusing address refuses connections and cannot be listened on, even by a Go
// listener (which sets SO_REUSEADDR), until it is released.
func TestRefusingAddr(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("a refusing address holds its port only on Linux")
	}
	addr, c, err := proc.RefusingAddr()
	require.NoError(t, err)
	_, err = net.Dial("tcp", addr)
	require.ErrorIs(t, err, syscall.ECONNREFUSED)
	_, err = net.Listen("tcp", addr)
	require.Error(t, err, "no server may take a refusing address")
	require.NoError(t, c.Close())
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err, "released, the port is free")
	require.NoError(t, ln.Close())
}
