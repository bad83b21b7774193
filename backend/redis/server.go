package redis

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/harness/proc"
)

// DebianPackage is the package that provides redis-server.
const DebianPackage = "redis-server"

// ServerNeed is the redis-server program the servers fencecheck starts run.
var ServerNeed = proc.Need{Program: "redis-server", Package: DebianPackage}

// ServerConfig says how to start one redis-server.
type ServerConfig struct {
	// Dir holds the server's data (its AOF when Persist is set). Required.
	Dir string
	// Persist turns on the append-only file with appendfsync always: every write is
	// written and fsynced before its reply, so a SIGKILL loses no acknowledged INCR.
	// (With everysec Redis may postpone the write itself for up to 2 s while a
	// background fsync is slow, and still reply: a crash then loses acknowledged
	// grants, and the counter goes back.) Without it the server runs with --save ''
	// --appendonly no and a restart forgets every key.
	Persist bool
	// Port is the port to listen on; 0 picks a free one.
	Port int
	// Log receives the server's output (nil: discarded).
	Log io.Writer
	// Binary is the redis-server program (default: ServerNeed's).
	Binary string
	// ReadyTimeout bounds the wait for the first PONG (default 10 s).
	ReadyTimeout time.Duration
}

// Server is a redis-server process fencecheck started on 127.0.0.1: a proc.Node (PID,
// Pause = SIGSTOP, Resume = SIGCONT, Crash = SIGKILL, Close) with its address.
type Server struct {
	*proc.Node
	cfg  ServerConfig
	addr string
}

// StartServer starts redis-server and waits until it answers PING. A missing binary
// gives an error wrapping proc.ErrNotFound that names the Debian package.
func StartServer(ctx context.Context, cfg ServerConfig) (*Server, error) {
	if cfg.Dir == "" {
		return nil, errors.New("redis: ServerConfig.Dir is required")
	}
	n, addr, err := proc.StartServer(ctx, proc.ServerConfig{
		Name: "redis-server", Need: ServerNeed.Or(cfg.Binary), Dir: cfg.Dir, Port: cfg.Port,
		Log: cfg.Log, ReadyTimeout: cfg.ReadyTimeout, Ready: Ping,
		Args: func(port int) []string { return ServerArgs(port, cfg.Dir, cfg.Persist) },
	})
	if err != nil {
		return nil, err
	}
	return &Server{Node: n, cfg: cfg, addr: addr}, nil
}

// ServerArgs are redis-server's arguments to serve on 127.0.0.1:port with its data in
// dir, with the append-only file or without persistence.
func ServerArgs(port int, dir string, persist bool) []string {
	args := []string{
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--daemonize", "no", "--save", "", "--logfile", "",
	}
	if persist {
		return append(args, "--appendonly", "yes", "--appendfsync", "always")
	}
	return append(args, "--appendonly", "no")
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

// Restart starts a crashed server again on the same port. keepData=false deletes its
// data dir first (a new disk), so even a persistent server comes back empty.
func (s *Server) Restart(ctx context.Context, keepData bool) error {
	wipe := ""
	if !keepData {
		wipe = s.cfg.Dir
	}
	return s.Node.Restart(ctx, wipe)
}
