package etcdtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/backend/etcd"
	"github.com/fencecheck/fencecheck/harness/proc"
)

// ExternalPackage is the Debian package whose etcd binary StartExternal runs.
const ExternalPackage = "etcd-server"

// ExternalNeed is the etcd binary StartExternal runs.
var ExternalNeed = proc.Need{Program: "etcd", Package: ExternalPackage}

// External is an etcd server running as its own process, started from the etcd binary
// on PATH (Debian's etcd-server) with its defaults (1000 ms election timeout, so it
// grants at least 2 s leases): a cluster fencecheck reaches only through its endpoint,
// as a user's would be.
type External struct {
	Endpoint string
	cmd      *exec.Cmd
	exited   chan struct{}
	waitErr  error
}

// StartExternal starts an etcd server process for t on free loopback ports, with its
// data and log in t's temp dir, and stops it when t ends. It skips t, naming the package,
// when no etcd binary is installed.
func StartExternal(t testing.TB) *External {
	t.Helper()
	bin, err := ExternalNeed.Find()
	if err != nil {
		t.Skip(err.Error())
	}
	dir := t.TempDir()
	// A free port can be taken by someone else between the probe and etcd's bind;
	// then etcd exits at once and another set of ports is tried.
	var lastErr error
	for range 3 {
		x, err := startExternal(bin, dir)
		if err == nil {
			t.Cleanup(func() { _ = x.Close() })
			t.Logf("external etcd (%s) ready at %s", bin, x.Endpoint)
			return x
		}
		lastErr = err
	}
	t.Fatalf("start external etcd: %v", lastErr)
	return nil
}

func startExternal(bin, dir string) (*External, error) {
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	url := func(p int) string { return "http://127.0.0.1:" + strconv.Itoa(p) }
	data := filepath.Join(dir, fmt.Sprintf("data-%d", ports[0]))
	logf, err := os.Create(filepath.Join(dir, fmt.Sprintf("etcd-%d.log", ports[0])))
	if err != nil {
		return nil, err
	}
	defer logf.Close() // the child has its own descriptor
	cmd := exec.Command(bin,
		"--name", "n1", "--data-dir", data,
		"--listen-client-urls", url(ports[0]), "--advertise-client-urls", url(ports[0]),
		"--listen-peer-urls", url(ports[1]), "--initial-advertise-peer-urls", url(ports[1]),
		"--initial-cluster", "n1="+url(ports[1]),
		"--listen-metrics-urls", url(ports[2]))
	// Only the flags above: no ETCD_* variable of the caller's may change the server.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", bin, err)
	}
	x := &External{Endpoint: "127.0.0.1:" + strconv.Itoa(ports[0]), cmd: cmd, exited: make(chan struct{})}
	go func() {
		x.waitErr = cmd.Wait()
		close(x.exited)
	}()
	// Ready when it answers a read; a loaded machine may take a while, so the ceiling is
	// generous, and a server that exits ends the wait at once.
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		cli, err := etcd.Dial(ctx, []string{x.Endpoint}, 2*time.Second)
		cancel()
		if err == nil {
			_ = cli.Close()
			return x, nil
		}
		select {
		case <-x.exited:
			return nil, fmt.Errorf("etcd exited before it was ready (%v); see %s", x.waitErr, logf.Name())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = x.Close()
			return nil, fmt.Errorf("etcd at %s not ready after 60s: %w", x.Endpoint, err)
		}
	}
}

// Close stops the server (SIGTERM, then SIGKILL after 10 s) and waits for it. Safe to
// call twice.
func (x *External) Close() error {
	select {
	case <-x.exited:
		return nil
	default:
	}
	_ = x.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-x.exited:
	case <-time.After(10 * time.Second):
		_ = x.cmd.Process.Kill()
		<-x.exited
	}
	var ee *exec.ExitError
	if x.waitErr != nil && !errors.As(x.waitErr, &ee) {
		return x.waitErr
	}
	return nil
}

func freePorts(n int) ([]int, error) {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			_ = ln.Close()
		}
	}()
	var ports []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
