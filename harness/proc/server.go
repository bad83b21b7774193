package proc

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"time"
)

// Loopback is a server's address on 127.0.0.1: port, or a free one (FreePort) when 0.
func Loopback(port int) (int, string, error) {
	if port == 0 {
		var err error
		if port, err = FreePort(); err != nil {
			return 0, "", err
		}
	}
	return port, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), nil
}

// ServerConfig says how to start a server process on a loopback port and how to tell
// that it is ready: the one shape of the servers fencecheck starts (redis-server,
// nats-server, a test's ZooKeeper, ...).
type ServerConfig struct {
	// Name is the program's name in messages ("redis-server"); the process is named
	// "<Name> on <addr>".
	Name string
	// Need finds the program; Env, Log and TreeSignals are as in Config.
	Need        Need
	Env         []string
	Log         io.Writer
	TreeSignals bool
	// Dir is the server's data dir, created if missing, and its working directory.
	// Required.
	Dir string
	// Port to listen on. 0: a free one, and another free one when the server cannot
	// start on it because another process took the port between the probe and the bind
	// (OnFreePort).
	Port int
	// Args are the program's arguments to serve on port.
	Args func(port int) []string
	// Ready is polled with the server's address until it answers (nil: ready at once).
	Ready func(ctx context.Context, addr string) error
	// ReadyTimeout bounds the wait for Ready (default 10 s).
	ReadyTimeout time.Duration
}

// StartServer starts the server as a Node (crash and restart on the same port) and
// waits until it is ready; it returns the node and the server's address. A missing
// program is an error wrapping ErrNotFound that names its package.
func StartServer(ctx context.Context, cfg ServerConfig) (*Node, string, error) {
	if cfg.Dir == "" {
		return nil, "", fmt.Errorf("%s: a data dir is required", cfg.Name)
	}
	if cfg.ReadyTimeout <= 0 {
		cfg.ReadyTimeout = 10 * time.Second
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, "", fmt.Errorf("%s: data dir: %w", cfg.Name, err)
	}
	var n *Node
	_, addr, err := OnFreePort(ctx, cfg.Port, func(port int, addr string) error {
		pc := Config{
			Name: cfg.Name + " on " + addr, Need: cfg.Need, Args: cfg.Args(port), Dir: cfg.Dir,
			Env: cfg.Env, Log: cfg.Log, TreeSignals: cfg.TreeSignals, ReadyTimeout: cfg.ReadyTimeout,
		}
		if cfg.Ready != nil {
			pc.Ready = func(ctx context.Context) error { return cfg.Ready(ctx, addr) }
		}
		var err error
		n, err = StartNode(ctx, pc)
		return err
	})
	if err != nil {
		return nil, "", err
	}
	return n, addr, nil
}
