package proc

import (
	"context"
	"errors"
	"net"
	"strconv"
	"testing"
	"time"
)

// A server on a free loopback port: its address is the port it was told, it is
// ready once it answers, and it restarts on the same port.
func TestStartServer(t *testing.T) {
	py := Need{Program: "python3", Package: "python3"}
	if _, err := py.Find(); err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	dial := func(ctx context.Context, addr string) error {
		c, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", addr)
		if err == nil {
			c.Close()
		}
		return err
	}
	var told int
	n, addr, err := StartServer(context.Background(), ServerConfig{
		Name: "http.server", Need: py, Dir: dir, ReadyTimeout: 30 * time.Second, Ready: dial,
		Args: func(port int) []string {
			told = port
			return []string{"-m", "http.server", strconv.Itoa(port), "--bind", "127.0.0.1"}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if addr != net.JoinHostPort("127.0.0.1", strconv.Itoa(told)) {
		t.Fatalf("address %s, but the server was told port %d", addr, told)
	}
	if err := n.Crash(); err != nil {
		t.Fatal(err)
	}
	if err := n.Restart(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	if err := dial(context.Background(), addr); err != nil {
		t.Fatalf("not serving on %s after the restart: %v", addr, err)
	}
}

func TestStartServerFailures(t *testing.T) {
	_, _, err := StartServer(context.Background(), ServerConfig{Name: "x", Need: Need{Program: "/nonexistent/x", Package: "x"}, Dir: t.TempDir(), Args: func(int) []string { return nil }})
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("a missing program: got %v, want ErrNotFound", err)
	}
	_, _, err = StartServer(context.Background(), ServerConfig{Name: "x", Args: func(int) []string { return nil }})
	if err == nil {
		t.Fatal("a server without a data dir started")
	}
	port, addr, err := Loopback(0)
	if err != nil || port == 0 || addr != "127.0.0.1:"+strconv.Itoa(port) {
		t.Fatalf("Loopback(0) = %d, %q, %v", port, addr, err)
	}
}
