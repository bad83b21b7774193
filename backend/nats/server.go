package nats

import (
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fencecheck/fencecheck/harness/proc"
)

// DebianPackage is the package that provides nats-server.
const DebianPackage = "nats-server"

// ServerNeed is the nats-server program the server fencecheck starts runs.
var ServerNeed = proc.Need{Program: "nats-server", Package: DebianPackage}

// ServerConfig says how to start one nats-server with JetStream.
type ServerConfig struct {
	// Dir is the JetStream store dir (-sd). Required.
	Dir string
	// Port is the client port; 0 picks a free one.
	Port int
	// Log receives the server's output (nil: discarded).
	Log io.Writer
	// Binary is the nats-server program (default: ServerNeed's).
	Binary string
	// ReadyTimeout bounds the wait for JetStream to answer (default 10 s).
	ReadyTimeout time.Duration
}

// Server is a nats-server process fencecheck started on 127.0.0.1: a proc.Node (PID,
// Pause = SIGSTOP, Resume = SIGCONT, Crash = SIGKILL, Close) with its address.
type Server struct {
	*proc.Node
	cfg ServerConfig
	url string
}

// StartServer starts nats-server -js and waits until JetStream answers an account
// info request. A missing binary gives an error wrapping proc.ErrNotFound that names
// the Debian package.
func StartServer(ctx context.Context, cfg ServerConfig) (*Server, error) {
	if cfg.Dir == "" {
		return nil, errors.New("nats: ServerConfig.Dir is required")
	}
	n, addr, err := proc.StartServer(ctx, proc.ServerConfig{
		Name: "nats-server", Need: ServerNeed.Or(cfg.Binary), Dir: cfg.Dir, Port: cfg.Port,
		Log: cfg.Log, ReadyTimeout: cfg.ReadyTimeout,
		// Loopback only, no monitoring port, JetStream with its store in Dir.
		Args: func(port int) []string {
			return []string{"-a", "127.0.0.1", "-p", strconv.Itoa(port), "-js", "-sd", cfg.Dir}
		},
		Ready: func(ctx context.Context, addr string) error { return Ping(ctx, "nats://"+addr) },
	})
	if err != nil {
		return nil, err
	}
	return &Server{Node: n, cfg: cfg, url: "nats://" + addr}, nil
}

// Ping connects to url and asks JetStream for the account's info.
func Ping(ctx context.Context, url string) error {
	nc, err := natsgo.Connect(url, natsgo.Timeout(time.Second), natsgo.NoReconnect(), natsgo.Name("fencecheck-ready"))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err = js.AccountInfo(ctx)
	return err
}

// URL is the server's client URL (nats://127.0.0.1:port).
func (s *Server) URL() string { return s.url }

// Addr is the server's host:port.
func (s *Server) Addr() string { return strings.TrimPrefix(s.url, "nats://") }

// Restart starts a crashed server again on the same port; keepData=false empties its
// store dir first (a new disk).
func (s *Server) Restart(ctx context.Context, keepData bool) error {
	wipe := ""
	if !keepData {
		wipe = s.cfg.Dir
	}
	return s.Node.Restart(ctx, wipe)
}
