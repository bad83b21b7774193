//go:build !linux

package proc

import (
	"io"
	"net"
)

// HoldPort is a no-op where raw sockets are not available: a crashed node's port is
// simply free until Restart listens on it again.
func HoldPort(string) (io.Closer, error) { return nopCloser{}, nil }

type nopCloser struct{}

func (nopCloser) Close() error { return nil }

func listenExclusive(addr string) (net.Listener, error) { return net.Listen("tcp", addr) }

func shareAgain(net.Listener) error { return nil }

// RefusingAddr returns an address where nothing listens; without raw sockets the port is
// only free, not held, so another server may take it.
func RefusingAddr() (string, io.Closer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	addr := ln.Addr().String()
	return addr, nopCloser{}, ln.Close()
}
