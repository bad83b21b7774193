package pgadvisory

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencecheck/fencecheck/backend/sqlsession"
	"github.com/fencecheck/fencecheck/harness/proc"
)

// DebianPackage provides initdb and postgres.
const DebianPackage = "postgresql"

// ServerNeed is the PostgreSQL server a private cluster runs (any installed version).
var ServerNeed = proc.Need{File: "/usr/lib/postgresql/*/bin/postgres", Package: DebianPackage}

// ServerConfig says how to start a private PostgreSQL cluster.
type ServerConfig struct {
	// Dir holds the cluster (Dir/pgdata). Required. As root the server runs as the
	// postgres user, so Dir is made traversable by it (mode 0711) and every parent of
	// Dir must be too.
	Dir string
	// Port to listen on; 0 picks a free one.
	Port int
	// Log receives initdb's and the server's output (nil: discarded).
	Log io.Writer
	// BinDir holds initdb and postgres (default: the newest /usr/lib/postgresql/*/bin).
	BinDir string
	// ReadyTimeout bounds the wait for the first connection (default 30 s: crash
	// recovery on a loaded machine).
	ReadyTimeout time.Duration
	// Settings are more "name=value" server settings (postgres -c).
	Settings []string
}

// Server is a private PostgreSQL cluster on 127.0.0.1: one postmaster (and its backends)
// in its own process group.
type Server struct {
	cfg  ServerConfig
	addr string
	data string
	run  []string // the command prefix that drops root (setpriv ...), or nil
	own  string   // a directory StartServer made for the cluster (removed by Close), or ""

	sqlsession.Process // PID, Pause, Resume, Crash
}

// setprivNeed starts the server as the postgres user when fencecheck runs as root.
var setprivNeed = proc.Need{Program: "setpriv", Package: "util-linux"}

// findBinDir returns the newest /usr/lib/postgresql/*/bin that has postgres.
func findBinDir() (string, error) {
	if _, err := ServerNeed.Find(); err != nil {
		return "", fmt.Errorf("postgres-advisory: %w", err)
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int {
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(a)))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(b)))
		return va - vb
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "postgres")); err == nil {
			return dirs[i], nil
		}
	}
	return "", fmt.Errorf("postgres-advisory: %w: no /usr/lib/postgresql/*/bin/postgres (install the Debian package %s)", proc.ErrNotFound, DebianPackage)
}

// StartServer runs initdb on Dir/pgdata and starts postgres on it, waiting until it
// accepts connections.
func StartServer(ctx context.Context, cfg ServerConfig) (*Server, error) {
	if cfg.Dir == "" {
		return nil, errors.New("postgres-advisory: ServerConfig.Dir is required")
	}
	if cfg.BinDir == "" {
		dir, err := findBinDir()
		if err != nil {
			return nil, err
		}
		cfg.BinDir = dir
	}
	for _, prog := range []string{"initdb", "postgres"} {
		if _, err := os.Stat(filepath.Join(cfg.BinDir, prog)); err != nil {
			return nil, fmt.Errorf("postgres-advisory: %w: %s (install the Debian package %s)", proc.ErrNotFound, filepath.Join(cfg.BinDir, prog), DebianPackage)
		}
	}
	if cfg.ReadyTimeout <= 0 {
		cfg.ReadyTimeout = 30 * time.Second
	}
	s := &Server{cfg: cfg, data: filepath.Join(cfg.Dir, "pgdata")}
	if os.Geteuid() == 0 {
		// PostgreSQL refuses to run as root: run initdb and the server as the postgres
		// user. setpriv execs the program (no extra process), so the PID is the server's.
		// Changing the uid clears the die-with-parent signal proc set, so setpriv sets it
		// again (measured: without it a SIGKILL'd fencecheck orphans the server).
		if _, err := setprivNeed.Find(); err != nil {
			return nil, fmt.Errorf("postgres-advisory: running as root needs setpriv (Debian util-linux) to start PostgreSQL as the postgres user: %w", err)
		}
		if _, err := user.Lookup("postgres"); err != nil {
			return nil, fmt.Errorf("postgres-advisory: running as root needs a postgres user to run PostgreSQL as (install the Debian package %s): %w", DebianPackage, err)
		}
		s.run = []string{"setpriv", "--reuid", "postgres", "--regid", "postgres", "--clear-groups", "--pdeathsig", "SIGKILL", "--"}
		if !reachable(cfg.Dir) {
			// A parent of Dir is closed to other users (t.TempDir's is 0700): keep the
			// cluster in a directory of its own under the system temp dir instead,
			// removed by Close.
			dir, err := os.MkdirTemp("", "fencecheck-pgdata-*")
			if err != nil {
				return nil, fmt.Errorf("postgres-advisory: %w", err)
			}
			s.own, s.data = dir, filepath.Join(dir, "pgdata")
			cfg.Dir = dir
		}
		if err := os.Chmod(cfg.Dir, 0o711); err != nil {
			s.removeOwn()
			return nil, fmt.Errorf("postgres-advisory: %w", err)
		}
	}
	if err := s.initdb(ctx); err != nil {
		s.removeOwn()
		return nil, err
	}
	// The port is only the server's command line: a picked one that another process
	// took meanwhile is replaced without a new initdb.
	if _, _, err := proc.OnFreePort(ctx, cfg.Port, func(port int, addr string) error {
		s.cfg.Port, s.addr = port, addr
		return s.start(ctx)
	}); err != nil {
		s.removeOwn()
		return nil, err
	}
	return s, nil
}

// reachable reports whether every parent of dir lets other users through (o+x), so
// that the postgres user can reach a cluster inside it.
func reachable(dir string) bool {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	for p := filepath.Dir(abs); ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm()&0o001 == 0 {
			return false
		}
		if p == filepath.Dir(p) {
			return true
		}
	}
}

// Dir is the directory that holds the cluster: ServerConfig.Dir, or the one StartServer
// made under the system temp dir when running as root. Close removes the latter; a
// SIGKILL'd fencecheck cannot.
func (s *Server) Dir() string {
	if s.own != "" {
		return s.own
	}
	return s.cfg.Dir
}

func (s *Server) removeOwn() {
	if s.own != "" {
		_ = os.RemoveAll(s.own)
	}
}

// initdb creates an empty cluster in s.data (removing whatever was there).
func (s *Server) initdb(ctx context.Context) error {
	if err := os.RemoveAll(s.data); err != nil {
		return fmt.Errorf("postgres-advisory: %w", err)
	}
	if err := os.Mkdir(s.data, 0o700); err != nil {
		return fmt.Errorf("postgres-advisory: %w", err)
	}
	if s.run != nil {
		u, _ := user.Lookup("postgres")
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(s.data, uid, gid); err != nil {
			return fmt.Errorf("postgres-advisory: %w", err)
		}
	}
	args := append(append([]string(nil), s.run...), filepath.Join(s.cfg.BinDir, "initdb"),
		"-D", s.data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync", "--no-instructions")
	p, err := proc.Start(ctx, proc.Config{Name: "initdb", Path: args[0], Args: args[1:], Log: s.cfg.Log})
	if errors.Is(err, proc.ErrNotFound) {
		return fmt.Errorf("%w (install the Debian package %s)", err, DebianPackage)
	}
	if err != nil {
		return err
	}
	select {
	case <-p.Done():
	case <-ctx.Done():
		_ = p.Close()
		return fmt.Errorf("postgres-advisory: initdb: %w", ctx.Err())
	}
	_, werr := p.Exited()
	out := p.Output()
	_ = p.Close()
	if werr != nil {
		return fmt.Errorf("postgres-advisory: initdb in %s failed (%v); its output ends: %s", s.data, werr, out)
	}
	return nil
}

func (s *Server) start(ctx context.Context) error {
	args := append(append([]string(nil), s.run...), filepath.Join(s.cfg.BinDir, "postgres"),
		"-D", s.data, "-c", "listen_addresses=127.0.0.1", "-c", "port="+strconv.Itoa(s.cfg.Port),
		"-c", "unix_socket_directories=", "-c", "max_connections=200",
		// A SIGKILL of the server loses nothing the kernel has; fsync would only cost
		// time on a shared machine, and crash recovery still runs.
		"-c", "fsync=off", "-c", "log_min_messages=warning")
	for _, kv := range s.cfg.Settings {
		args = append(args, "-c", kv)
	}
	dsn := s.DSN()
	p, err := proc.Start(ctx, proc.Config{
		Name: "postgres on " + s.addr, Path: args[0], Args: args[1:], Log: s.cfg.Log,
		// Backends call setsid: a pause or a crash must reach each of them.
		TreeSignals:  true,
		ReadyTimeout: s.cfg.ReadyTimeout,
		Ready:        func(ctx context.Context) error { return ping(ctx, dsn) },
	})
	if err != nil {
		return err
	}
	s.Set(p)
	return nil
}

// ping connects to dsn and runs SELECT 1 (a server in recovery refuses connections).
func ping(ctx context.Context, dsn string) error {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c, err := pgx.Connect(cctx, dsn)
	if err != nil {
		return err
	}
	defer c.Close(context.WithoutCancel(cctx))
	_, err = c.Exec(cctx, "SELECT 1")
	return err
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return s.addr }

// DSN is the superuser DSN of the server (trust authentication on loopback).
func (s *Server) DSN() string {
	return "postgres://postgres@" + s.addr + "/postgres?sslmode=disable"
}

// Restart starts a crashed server again on the same port: with its data (crash
// recovery replays the WAL) or, keepData=false, on a fresh initdb.
func (s *Server) Restart(ctx context.Context, keepData bool) error {
	return s.RestartWith(ctx, "postgres-advisory", keepData, s.initdb, s.start)
}

// Close stops the server: SIGINT (PostgreSQL's fast shutdown; SIGTERM would wait for
// every session to end), then proc's SIGTERM and SIGKILL. Safe to call twice.
func (s *Server) Close() error {
	p := s.Proc()
	if p == nil {
		return nil
	}
	defer s.removeOwn()
	if exited, _ := p.Exited(); !exited {
		_ = p.Resume()
		if p.Signal(syscall.SIGINT) == nil {
			select {
			case <-p.Done():
			case <-time.After(5 * time.Second):
			}
		}
	}
	return p.Close()
}

// Available returns nil when a PostgreSQL server can be started here, or an error
// (wrapping proc.ErrNotFound) naming the Debian package to install.
func Available() error {
	_, err := findBinDir()
	return err
}
