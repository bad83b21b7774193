//go:build linux

package proc

import (
	"fmt"
	"io"
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
