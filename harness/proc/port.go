package proc

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// FreePort returns a loopback port that was free a moment ago, for a server process
// that must be told its port before it starts. Another process may take it before the
// server binds it: OnFreePort starts a server on another port then.
//
// The port lies below the kernel's ephemeral range, so that no outgoing connection can
// hold it as its local port later: a server that binds its port again after a crash, or
// only when it becomes leader (a ZooKeeper leader's quorum port), would otherwise find
// it taken by any client connection that happened to get that number.
func FreePort() (int, error) {
	ln, err := ListenFree()
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// ListenFree listens on a free loopback port below the ephemeral range (see FreePort);
// the caller closes it just before the server that is to have the port starts.
func ListenFree() (net.Listener, error) {
	lo, hi := ephemeralRange()
	const floor = 10000
	if lo-floor >= 1000 {
		for range 64 {
			port := floor + rand.IntN(lo-floor)
			ln, err := listenExclusive(net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
			if err != nil {
				continue
			}
			if err := shareAgain(ln); err != nil {
				_ = ln.Close()
				return nil, fmt.Errorf("find a free loopback port: %w", err)
			}
			return ln, nil
		}
	}
	// No room below the range (an unusual ip_local_port_range): any free port.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("find a free loopback port (ephemeral range %d-%d): %w", lo, hi, err)
	}
	return ln, nil
}

// ephemeralRange is the kernel's range of local ports for outgoing connections (Linux's
// default when it cannot be read).
func ephemeralRange() (lo, hi int) {
	lo, hi = 32768, 60999
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return lo, hi
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return lo, hi
	}
	l, err1 := strconv.Atoi(f[0])
	h, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || l <= 0 || h < l {
		return lo, hi
	}
	return l, h
}

// Taken reports whether a process holds port on 127.0.0.1 now (it cannot be bound),
// also when HoldPort holds it for a crashed server.
func Taken(port int) bool {
	ln, err := listenExclusive(net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return true
	}
	_ = ln.Close()
	return false
}

// OnFreePort runs start on port, or, when port is 0, on a port FreePort picks; when a
// picked port's start fails and the port is now Taken (another process bound it between
// the pick and the server's bind), or the failure says the port was in use, it picks
// another, up to 5 tries in all. Any other
// failure is start's error at once. It returns the port and address start succeeded on.
func OnFreePort(ctx context.Context, port int, start func(port int, addr string) error) (int, string, error) {
	picked := port == 0
	for try := 1; ; try++ {
		p, addr, err := Loopback(port)
		if err != nil {
			return 0, "", err
		}
		err = start(p, addr)
		if err == nil {
			return p, addr, nil
		}
		if !picked || try == 5 || ctx.Err() != nil || !(Taken(p) || inUse(err)) {
			return 0, "", err
		}
	}
}

// inUse reports whether a server's start failed because its port was in use: another
// process's probe may have held it for a moment and let it go by the time Taken looks.
func inUse(err error) bool {
	return errors.Is(err, syscall.EADDRINUSE) || strings.Contains(strings.ToLower(err.Error()), "address already in use")
}
