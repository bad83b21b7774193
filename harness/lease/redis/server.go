package redis

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/harness/proc"
)

// DebianPackage is the package that provides redis-server.
const DebianPackage = "redis-server"

// ServerConfig says how to start one redis-server.
type ServerConfig struct {
	// Dir holds the server's data (its AOF when Persist is set). Required.
	Dir string
	// Persist turns on the append-only file (appendonly yes, appendfsync everysec):
	// every write reaches the file before the reply, so a SIGKILL loses nothing the
	// kernel already has. Without it the server runs with --save '' --appendonly no
	// and a restart forgets every key.
	Persist bool
	// Port is the port to listen on; 0 picks a free ephemeral one.
	Port int
	// Log receives the server's output (nil: discarded).
	Log io.Writer
	// Binary is the redis-server program (default "redis-server" from PATH).
	Binary string
	// ReadyTimeout bounds the wait for the first PONG (default 10 s).
	ReadyTimeout time.Duration
}

// Server is a redis-server process fencecheck started on 127.0.0.1.
type Server struct {
	cfg  ServerConfig
	addr string

	mu     sync.Mutex
	p      *proc.Process // nil while crashed
	closed bool
}

// StartServer starts redis-server and waits until it answers PING. A missing binary
// gives an error wrapping proc.ErrNotFound that names the Debian package.
func StartServer(ctx context.Context, cfg ServerConfig) (*Server, error) {
	if cfg.Dir == "" {
		return nil, errors.New("redis: ServerConfig.Dir is required")
	}
	if cfg.Binary == "" {
		cfg.Binary = "redis-server"
	}
	if cfg.ReadyTimeout <= 0 {
		cfg.ReadyTimeout = 10 * time.Second
	}
	if cfg.Port == 0 {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		cfg.Port = port
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("redis: data dir: %w", err)
	}
	s := &Server{cfg: cfg, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.Port))}
	p, err := s.start(ctx)
	if err != nil {
		return nil, err
	}
	s.p = p
	return s, nil
}

// freePort asks the kernel for a free loopback port. Another process may take it before
// redis-server binds it; the server then exits with "Address already in use" and the
// start fails with that line.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("redis: find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func (s *Server) start(ctx context.Context) (*proc.Process, error) {
	args := []string{
		"--port", strconv.Itoa(s.cfg.Port), "--bind", "127.0.0.1", "--dir", s.cfg.Dir,
		"--daemonize", "no", "--save", "", "--logfile", "",
	}
	if s.cfg.Persist {
		args = append(args, "--appendonly", "yes", "--appendfsync", "everysec")
	} else {
		args = append(args, "--appendonly", "no")
	}
	p, err := proc.Start(ctx, proc.Config{
		Name: "redis-server on " + s.addr, Path: s.cfg.Binary, Args: args, Dir: s.cfg.Dir,
		Log: s.cfg.Log, ReadyTimeout: s.cfg.ReadyTimeout,
		Ready: func(ctx context.Context) error { return Ping(ctx, s.addr) },
	})
	if errors.Is(err, proc.ErrNotFound) {
		return nil, fmt.Errorf("%w (install the Debian package %s)", err, DebianPackage)
	}
	return p, err
}

// Ping sends PING to addr and wants +PONG (a server still loading its AOF answers
// -LOADING, which is not ready).
func Ping(ctx context.Context, addr string) error {
	d := net.Dialer{Timeout: time.Second}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	deadline := time.Now().Add(time.Second)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	_ = c.SetDeadline(deadline)
	if _, err := io.WriteString(c, "PING\r\n"); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+PONG" {
		return fmt.Errorf("redis at %s answered %q to PING", addr, strings.TrimSpace(line))
	}
	return nil
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return s.addr }

// PID is the server's process id, 0 while it is crashed.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.p == nil {
		return 0
	}
	return s.p.PID()
}

func (s *Server) process() (*proc.Process, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.p == nil {
		return nil, fmt.Errorf("redis-server on %s is not running", s.addr)
	}
	return s.p, nil
}

// Pause stops the server with SIGSTOP.
func (s *Server) Pause() error {
	p, err := s.process()
	if err != nil {
		return err
	}
	return p.Pause()
}

// Resume continues a paused server with SIGCONT.
func (s *Server) Resume() error {
	p, err := s.process()
	if err != nil {
		return err
	}
	return p.Resume()
}

// Crash kills the server with SIGKILL and waits for it to exit.
func (s *Server) Crash() error {
	s.mu.Lock()
	p := s.p
	s.p = nil
	s.mu.Unlock()
	if p == nil {
		return fmt.Errorf("redis-server on %s is not running", s.addr)
	}
	_ = p.Kill()
	return p.Close()
}

// Restart starts a crashed server again on the same port. keepData=false deletes its
// data dir first (a new disk), so even a persistent server comes back empty.
func (s *Server) Restart(ctx context.Context, keepData bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("redis-server on %s is closed", s.addr)
	}
	if s.p != nil {
		return fmt.Errorf("redis-server on %s is running", s.addr)
	}
	if !keepData {
		entries, err := os.ReadDir(s.cfg.Dir)
		if err != nil {
			return fmt.Errorf("redis: data dir: %w", err)
		}
		for _, e := range entries {
			if err := os.RemoveAll(filepath.Join(s.cfg.Dir, e.Name())); err != nil {
				return fmt.Errorf("redis: wipe data: %w", err)
			}
		}
	}
	p, err := s.start(ctx)
	if err != nil {
		return err
	}
	s.p = p
	return nil
}

// Close stops the server. Safe to call twice.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	p := s.p
	s.p = nil
	s.mu.Unlock()
	if p == nil {
		return nil
	}
	return p.Close()
}
