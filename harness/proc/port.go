package proc

import (
	"fmt"
	"net"
)

// FreePort returns a loopback port that was free a moment ago, for a server process
// that must be told its port before it starts. Another process may take it before the
// server binds it; the server then fails to start and says so.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free loopback port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
