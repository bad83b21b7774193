//go:build linux

package proc

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"syscall"
)

// HoldPort binds a socket to addr without listening on it, so that while a server is
// crashed no other socket (a listener, or an outgoing connection's local port) can take
// its client API port, and connections to it are refused as they would be for a dead
// process. Restart listens again (SO_REUSEADDR lets it bind beside the holder), then
// releases the hold.
func HoldPort(addr string) (io.Closer, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || !ap.Addr().Is4() {
		return nil, fmt.Errorf("hold port %s: need an IPv4 host:port", addr)
	}
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("hold port %s: %w", addr, err)
	}
	if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1); err != nil {
		_ = syscall.Close(fd)
		return nil, fmt.Errorf("hold port %s: %w", addr, err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}); err != nil {
		_ = syscall.Close(fd)
		return nil, fmt.Errorf("hold port %s: %w", addr, err)
	}
	return fdCloser(fd), nil
}

type fdCloser int

func (f fdCloser) Close() error { return syscall.Close(int(f)) }

// listenExclusive listens on addr without SO_REUSEADDR (which Go's net.Listen sets), so
// that it fails on a port HoldPort holds: two sockets may share a port only when both
// ask for it. A port probe must see the hold, or it hands a crashed server's port to
// another server and the crashed one cannot restart.
func listenExclusive(addr string) (net.Listener, error) {
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error { return setReuseAddr(c, 0) }}
	return lc.Listen(context.Background(), "tcp", addr)
}

// shareAgain sets SO_REUSEADDR on a listener listenExclusive made, once it has its port:
// the server that keeps it, and the connections it accepts, must let the same server
// bind the port again after a crash, past their TIME_WAIT sockets and beside a hold.
func shareAgain(ln net.Listener) error {
	tl, ok := ln.(*net.TCPListener)
	if !ok {
		return nil
	}
	rc, err := tl.SyscallConn()
	if err != nil {
		return err
	}
	return setReuseAddr(rc, 1)
}

// setReuseAddr sets a socket's SO_REUSEADDR to on (0 or 1).
func setReuseAddr(c syscall.RawConn, on int) error {
	var serr error
	if err := c.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_REUSEADDR, on)
	}); err != nil {
		return err
	}
	return serr
}

// RefusingAddr binds a fresh port on 127.0.0.1 without listening and without
// SO_REUSEADDR, and returns its address: until the closer is called, connections to it
// are refused and no other socket can bind it. A test that needs "nothing answers here"
// cannot close a listener and reuse its address, since another server may take it.
func RefusingAddr() (string, io.Closer, error) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return "", nil, fmt.Errorf("refusing port: %w", err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		_ = syscall.Close(fd)
		return "", nil, fmt.Errorf("refusing port: %w", err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		_ = syscall.Close(fd)
		return "", nil, fmt.Errorf("refusing port: %w", err)
	}
	in4, ok := sa.(*syscall.SockaddrInet4)
	if !ok {
		_ = syscall.Close(fd)
		return "", nil, fmt.Errorf("refusing port: unexpected address %T", sa)
	}
	return netip.AddrPortFrom(netip.AddrFrom4(in4.Addr), uint16(in4.Port)).String(), fdCloser(fd), nil
}
