package mariadblock

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/fencecheck/fencecheck/backend/sqlsession"
	"github.com/fencecheck/fencecheck/harness/proc"
)

// DebianPackage provides mariadbd.
const DebianPackage = "mariadb-server"

// ServerNeed is the mariadbd a private server runs.
var ServerNeed = proc.Need{Program: "mariadbd", Package: DebianPackage}

// ServerConfig says how to start a private MariaDB server.
type ServerConfig struct {
	// Dir holds the server's data (Dir/data) and socket. Required.
	Dir string
	// Port to listen on; 0 picks a free one.
	Port int
	// Log receives the server's output (nil: discarded).
	Log io.Writer
	// Binary is mariadbd (default from PATH).
	Binary string
	// ReadyTimeout bounds the wait for the first connection (default 30 s: InnoDB
	// crash recovery on a loaded machine).
	ReadyTimeout time.Duration
	// ClockRate, if above 0, runs mariadbd's clock (wall and monotonic, and its poll
	// timeouts, which time wait_timeout) that many times fast, by preloading Debian's
	// libfaketime: a skewed server clock, from every start of the process.
	ClockRate float64
}

// FaketimeAvailable returns nil when libfaketime (proc.Libfaketime), which ClockRate
// preloads, is installed, or an error naming the Debian package.
func FaketimeAvailable() error {
	if _, err := proc.Libfaketime.Find(); err != nil {
		return fmt.Errorf("%s: %w, for a fast server clock", Name, err)
	}
	return nil
}

// Server is a private mariadbd on 127.0.0.1 (one process, its own process group).
type Server struct {
	cfg  ServerConfig
	addr string
	data string

	sqlsession.Process // PID, Pause, Resume, Crash
}

// Available returns nil when mariadbd can be started here, or an error (wrapping
// proc.ErrNotFound) naming the Debian package to install.
func Available() error {
	if _, err := ServerNeed.Find(); err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	return nil
}

// StartServer starts mariadbd on Dir/data (created on first use) and waits until it
// accepts connections. The server runs without grant tables (any user on loopback is
// let in): it is fencecheck's own, on an ephemeral loopback port, for one run.
func StartServer(ctx context.Context, cfg ServerConfig) (*Server, error) {
	if cfg.Dir == "" {
		return nil, fmt.Errorf("%s: ServerConfig.Dir is required", Name)
	}
	if _, err := ServerNeed.Or(cfg.Binary).Find(); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	if cfg.ReadyTimeout <= 0 {
		cfg.ReadyTimeout = 30 * time.Second
	}
	if cfg.ClockRate < 0 || cfg.ClockRate > 100 {
		return nil, fmt.Errorf("%s: clock rate must be between 0 (real time) and 100, got %g", Name, cfg.ClockRate)
	}
	if cfg.ClockRate > 0 {
		if err := FaketimeAvailable(); err != nil {
			return nil, err
		}
	}
	s := &Server{cfg: cfg, data: filepath.Join(cfg.Dir, "data")}
	// A picked port that another process took meanwhile is replaced, with a new init:
	// the first start, which creates InnoDB's files, is on the port too.
	if _, _, err := proc.OnFreePort(ctx, cfg.Port, func(port int, addr string) error {
		s.cfg.Port, s.addr = port, addr
		if err := s.init(ctx); err != nil {
			return err
		}
		return s.start(ctx)
	}); err != nil {
		return nil, err
	}
	return s, nil
}

// init creates an empty data dir: a first start creates InnoDB's files, and a clean
// shutdown writes them out (a SIGKILL right after the first start would leave a
// system tablespace InnoDB refuses). 1-2 s; mariadb-install-db takes longer.
func (s *Server) init(ctx context.Context) error {
	if err := os.RemoveAll(s.data); err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	if err := os.MkdirAll(s.data, 0o700); err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	if err := s.start(ctx); err != nil {
		return err
	}
	p := s.Proc()
	if err := p.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-p.Done():
	case <-time.After(30 * time.Second):
		_ = p.Close()
		return fmt.Errorf("%s: the first start on %s did not shut down within 30 s; its output ends: %s", Name, s.data, p.Output())
	}
	return p.Close()
}

func (s *Server) start(ctx context.Context) error {
	args := []string{
		"--no-defaults", "--datadir=" + s.data, "--bind-address=127.0.0.1", "--port=" + strconv.Itoa(s.cfg.Port),
		"--socket=" + filepath.Join(s.cfg.Dir, "sock"), "--pid-file=" + filepath.Join(s.cfg.Dir, "pid"),
		"--skip-grant-tables", "--skip-log-bin", "--skip-name-resolve",
		"--innodb-buffer-pool-size=32M", "--innodb-log-file-size=8M", "--max-connections=500",
	}
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	var env []string
	if s.cfg.ClockRate > 0 {
		lib, err := proc.Libfaketime.Find()
		if err != nil {
			return fmt.Errorf("%s: %w, for a fast server clock", Name, err)
		}
		// LD_PRELOAD, not the faketime wrapper: the wrapper forks, and SIGSTOP/SIGKILL
		// sent to the process group must reach mariadbd itself.
		env = []string{"LD_PRELOAD=" + lib, "FAKETIME=+0 x" + strconv.FormatFloat(s.cfg.ClockRate, 'g', -1, 64)}
	}
	addr := s.addr
	p, err := proc.Start(ctx, proc.Config{
		Name: "mariadbd on " + addr, Need: ServerNeed.Or(s.cfg.Binary), Args: args, Log: s.cfg.Log, Env: env,
		ReadyTimeout: s.cfg.ReadyTimeout,
		Ready:        func(ctx context.Context) error { return ping(ctx, addr) },
	})
	if err != nil {
		return err
	}
	s.Set(p)
	return nil
}

// ping connects to addr and runs SELECT 1.
func ping(ctx context.Context, addr string) error {
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr, cfg.User = "tcp", addr, "root"
	cfg.Timeout = time.Second
	cfg.Logger = quiet{}
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		return err
	}
	db := sql.OpenDB(c)
	defer db.Close()
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return db.PingContext(cctx)
}

// quiet drops the driver's log lines (a server still starting up makes it print).
type quiet struct{}

func (quiet) Print(...any) {}

// Addr is the server's host:port.
func (s *Server) Addr() string { return s.addr }

// DSN is the go-sql-driver DSN of the server's fencecheck database.
func (s *Server) DSN() string { return "root@tcp(" + s.addr + ")/fencecheck" }

// Restart starts a crashed server again on the same port: with its data (InnoDB crash
// recovery) or, keepData=false, on an empty data dir.
func (s *Server) Restart(ctx context.Context, keepData bool) error {
	return s.RestartWith(ctx, Name, keepData, s.init, s.start)
}

// Close stops the server (SIGTERM: a clean shutdown; SIGKILL after the grace). Safe to
// call twice.
func (s *Server) Close() error {
	if p := s.Proc(); p != nil {
		return p.Close()
	}
	return nil
}
