// Package exectest helps tests run the exec backend's examples: a real redis-server or
// ZooKeeper on a loopback port, and the interpreters the examples need. Tests only.
package exectest

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	execlock "github.com/fencecheck/fencecheck/backend/execlock"
	redislock "github.com/fencecheck/fencecheck/backend/redis"
	"github.com/fencecheck/fencecheck/backend/zookeeper"
	"github.com/fencecheck/fencecheck/harness/proc/proctest"

	"github.com/fencecheck/fencecheck/harness/proc"
)

// SystemPython is Debian's interpreter, the one Debian's python3-* libraries load under.
const SystemPython = proc.SystemPython

// Python is Debian's interpreter the examples run under.
var Python = proc.Need{Program: SystemPython, Package: "python3"}

// RequirePythonModule skips the test, in one line naming the Debian package, unless
// SystemPython can import module.
func RequirePythonModule(t testing.TB, module, debianPackage string) {
	t.Helper()
	proctest.Skip(t, Python, proc.Need{PythonModule: module, Package: debianPackage})
}

// CuratorNeeds are what examples/curator_lock.sh runs with (execlock.CuratorNeeds).
func CuratorNeeds() []proc.Need { return execlock.CuratorNeeds() }

// RequireCurator skips the test, in one line naming the Debian package, unless the
// Curator example can run here.
func RequireCurator(t testing.TB) {
	t.Helper()
	proctest.Skip(t, CuratorNeeds()...)
}

// PrepareCurator compiles the Curator example (script is examples/curator_lock.sh) into
// its cache folder before a test's clients start, so that javac's seconds do not count
// against their first answers.
func PrepareCurator(t testing.TB, script string) {
	t.Helper()
	RequireCurator(t)
	out, err := exec.Command("sh", script, "--prepare").CombinedOutput()
	if err != nil {
		t.Fatalf("%s --prepare: %v: %s", script, err, out)
	}
}

// ExampleNeeds are what the shipped examples that the client command cmd runs need
// (execlock.ExampleNeeds).
func ExampleNeeds(cmd string) []proc.Need { return execlock.ExampleNeeds(cmd) }

// RequireClient skips the test, in one line naming the Debian package, unless every
// shipped example the client command cmd runs can run here.
func RequireClient(t testing.TB, cmd string) {
	t.Helper()
	proctest.Skip(t, ExampleNeeds(cmd)...)
}

// StartRedis starts redis-server on a free loopback port (no persistence, data in a
// temp dir) and returns its address and process id; it is stopped when the test ends.
// Skips the test when redis-server is not installed.
func StartRedis(t testing.TB) (addr string, pid int) {
	t.Helper()
	proctest.Skip(t, redislock.ServerNeed)
	dir := t.TempDir()
	n, addr, err := proc.StartServer(context.Background(), proc.ServerConfig{
		Name: "redis-server", Need: redislock.ServerNeed, Dir: dir, ReadyTimeout: 30 * time.Second,
		Args:  func(port int) []string { return redislock.ServerArgs(port, dir, false) },
		Ready: redislock.Ping,
	})
	if err != nil {
		t.Fatalf("redis-server did not start: %v", err)
	}
	t.Cleanup(func() { _ = n.Close() })
	return addr, n.PID()
}

// ZooKeeperScript is Debian's ZooKeeper start script.
const ZooKeeperScript = "/usr/share/zookeeper/bin/zkServer.sh"

// ZooKeeperNeed is that script (it runs the JVM, which Debian's zookeeper brings).
var ZooKeeperNeed = proc.Need{File: ZooKeeperScript, Package: "zookeeper"}

// StartZooKeeper starts a standalone ZooKeeper on a free loopback port, with a 100 ms
// tick so sessions may be as short as 200 ms, and returns its address and process id
// (the JVM's group); it is stopped when the test ends. Skips the test when ZooKeeper is
// not installed.
func StartZooKeeper(t testing.TB) (addr string, pid int) {
	t.Helper()
	proctest.Skip(t, ZooKeeperNeed, zookeeper.JavaNeed)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "zoo.cfg")
	n, addr, err := proc.StartServer(context.Background(), proc.ServerConfig{
		Name: "ZooKeeper", Need: ZooKeeperNeed, Dir: dir,
		Env:          []string{"ZOO_LOG_DIR=" + dir, "ZOO_LOG4J_PROP=WARN,CONSOLE"},
		ReadyTimeout: 60 * time.Second, // a JVM on a loaded machine
		Args: func(port int) []string {
			conf := fmt.Sprintf("tickTime=100\ninitLimit=10\nsyncLimit=5\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n4lw.commands.whitelist=ruok,srvr,stat\nmaxSessionTimeout=20000\n", dir, port)
			if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
				t.Fatal(err)
			}
			return []string{"start-foreground", cfg}
		},
		Ready: ruok,
	})
	if err != nil {
		t.Fatalf("ZooKeeper did not start: %v", err)
	}
	t.Cleanup(func() { _ = n.Close() })
	return addr, n.PID()
}

// ruok asks ZooKeeper's four-letter command and wants "imok".
func ruok(ctx context.Context, addr string) error {
	d := net.Dialer{Timeout: time.Second}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("ruok")); err != nil {
		return err
	}
	b, err := io.ReadAll(c)
	if err != nil {
		return err
	}
	if string(b) != "imok" {
		return fmt.Errorf("ZooKeeper answered %q to ruok", b)
	}
	return nil
}
