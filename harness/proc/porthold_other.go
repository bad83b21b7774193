//go:build !linux

package proc

import "io"

// HoldPort is a no-op where raw sockets are not available: a crashed node's port is
// simply free until Restart listens on it again.
func HoldPort(string) (io.Closer, error) { return nopCloser{}, nil }

type nopCloser struct{}

func (nopCloser) Close() error { return nil }
