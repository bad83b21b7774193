package execlock_test

import (
	"archive/zip"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	execlock "github.com/fencecheck/fencecheck/backend/execlock"
	"github.com/fencecheck/fencecheck/backend/execlock/exectest"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/nemesis/proxy"
	"github.com/fencecheck/fencecheck/harness/proc"
	"github.com/fencecheck/fencecheck/harness/registry"
)

func example(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("examples", name))
	require.NoError(t, err)
	return p
}

// requireOnly checks that no process but keep (the test's own servers) survives.
func requireOnly(t *testing.T, keep ...int) {
	t.Helper()
	others := func() []int {
		var out []int
		for _, p := range proc.Descendants(os.Getpid()) {
			if !slices.Contains(keep, p) {
				out = append(out, p)
			}
		}
		return out
	}
	require.Eventually(t, func() bool { return len(others()) == 0 }, ceiling, 10*time.Millisecond, "processes survive: %v", others())
}

// proxied starts the exec backend on an existing service at addr and n clients, each
// dialling the service only through a fault proxy of its own.
func proxied(t *testing.T, cmd, addr string, ttl time.Duration, n int) (*execlock.Backend, []harness.Locker, []*proxy.Link) {
	t.Helper()
	log := &clientLog{}
	t.Cleanup(func() { // after the backend's Close: every line is in
		if t.Failed() {
			t.Logf("the clients' stderr:\n%s", log.String())
		}
	})
	b, err := execlock.Start(context.Background(), execlock.Config{Command: cmd, Endpoints: []string{addr}, TTL: ttl, LogWriter: log})
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	var lockers []harness.Locker
	var links []*proxy.Link
	for i := range n {
		link, err := proxy.New(addr)
		require.NoError(t, err)
		t.Cleanup(func() { _ = link.Close() })
		l, err := b.NewLocker(context.Background(), i, []string{link.Addr()})
		require.NoError(t, err)
		lockers, links = append(lockers, l), append(links, link)
	}
	return b, lockers, links
}

// clientLog keeps the clients' stderr, shown when a test fails.
type clientLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (w *clientLog) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(b)
}

func (w *clientLog) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}

// lockNode is the one child of the lock path (the holder's node when nobody waits) and
// its czxid, read by a client of the test's own.
func lockNode(t *testing.T, c *zk.Conn, path string) (string, int64) {
	t.Helper()
	kids, _, err := c.Children(path)
	require.NoError(t, err)
	require.Len(t, kids, 1, "the holder's node only")
	_, st, err := c.Get(path + "/" + kids[0])
	require.NoError(t, err)
	return kids[0], st.Czxid
}

// TestZooKeeperExamples runs kazoo's Lock and Curator's InterProcessMutex against a real
// ZooKeeper, each client through its own fault proxy. The token is the grant's own lock
// node's czxid (read back from the server); it keeps growing when the lock's parent is
// deleted and made again, though the node's sequence number starts again at 0 (the
// token kazoo's example used to report); a holder stopped with SIGSTOP past its session
// timeout loses the lock to the next client, reports it lost once continued, and its
// release is a definite refusal.
func TestZooKeeperExamples(t *testing.T) {
	tests := []struct {
		name, lockPath string
		cmd            func(t *testing.T) string
		// library is what the client must say of its library, as the installed one is.
		library func(t *testing.T) string
	}{
		{"kazoo Lock", "/fencecheck/lock", func(t *testing.T) string {
			exectest.RequirePythonModule(t, "kazoo", "python3-kazoo")
			return exectest.SystemPython + " " + example(t, "kazoo_lock.py")
		}, func(t *testing.T) string {
			return "kazoo " + pythonSays(t, "import kazoo.version; print(kazoo.version.__version__)")
		}},
		{"Curator InterProcessMutex", "/fencecheck/curator-lock", func(t *testing.T) string {
			script := example(t, "curator_lock.sh")
			exectest.PrepareCurator(t, script)
			return "sh " + script
		}, func(t *testing.T) string {
			// The jar's Maven pom.properties says its version.
			z, err := zip.OpenReader("/usr/share/java/curator-recipes.jar")
			require.NoError(t, err)
			defer z.Close()
			f, err := z.Open("META-INF/maven/org.apache.curator/curator-recipes/pom.properties")
			require.NoError(t, err)
			defer f.Close()
			props, err := io.ReadAll(f)
			require.NoError(t, err)
			m := regexp.MustCompile(`(?m)^version=(\S+)`).FindSubmatch(props)
			require.NotNil(t, m, "pom.properties: %s", props)
			v := string(m[1])
			return "Apache Curator " + v
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := tt.cmd(t)
			addr, zkPID := exectest.StartZooKeeper(t)
			// A 1 s session: the JVM's and Python's pings keep up on a loaded machine.
			ttl := time.Second
			b, ls, links := proxied(t, cmd, addr, ttl, 2)
			obs, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(nopLogger{}))
			require.NoError(t, err)
			defer obs.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 4*ceiling)
			defer cancel()

			var last int64
			grant := func(l harness.Locker) (harness.Lease, string) {
				t.Helper()
				le, err := l.Acquire(ctx)
				require.NoError(t, err)
				node, czxid := lockNode(t, obs, tt.lockPath)
				require.Equal(t, czxid, le.Token(), "the token is the lock node's czxid")
				require.Greater(t, le.Token(), last, "tokens increase")
				last = le.Token()
				return le, node
			}
			for _, l := range []harness.Locker{ls[0], ls[1]} {
				le, _ := grant(l)
				require.NoError(t, le.Release(ctx))
			}
			require.Equal(t, tt.library(t), b.ClientLibrary(), "the library it reported")

			// The parent goes (a container ZooKeeper reaps once empty, a cleanup job) and
			// is made again: the sequence restarts, the czxid does not.
			require.NoError(t, obs.Delete(tt.lockPath, -1))
			_, err = obs.CreateContainer(tt.lockPath, nil, zk.FlagContainer, zk.WorldACL(zk.PermAll))
			require.NoError(t, err)
			held, node := grant(ls[0])
			require.True(t, strings.HasSuffix(node, "0000000000"), "the sequence starts again at 0: %s", node)

			// The holder is stopped past its session timeout: the next client gets the lock.
			pp := ls[0].(harness.PausableProcess)
			_, err = pp.PauseProcess()
			require.NoError(t, err)
			next, _ := grant(ls[1])
			require.NoError(t, pp.ResumeProcess())
			select {
			case <-held.Lost():
			case <-time.After(ceiling):
				t.Fatal("the continued client never reported its lock lost")
			}
			require.ErrorIs(t, held.Release(ctx), harness.ErrNoEffect, "its node is gone: a definite refusal")
			require.NoError(t, next.Release(ctx))

			for i, link := range links {
				require.Positive(t, link.Stats().BytesToTarget, "client %d talks to ZooKeeper through its proxy", i)
			}
			require.NoError(t, b.Err())
			require.NoError(t, b.Close())
			requireOnly(t, zkPID)
		})
	}
}

// TestRedisPyLock runs redis-py's Lock against a real redis-server through fault
// proxies: it grants with "no_token", so its leases carry the order fencecheck saw the
// grants in and the backend says why it has no token; against a resource that fences on
// tokens its first grant ends the run with registry.ErrNoToken. With --token incr the
// counter bumped in the acquire script is a real, increasing token.
func TestRedisPyLock(t *testing.T) {
	exectest.RequirePythonModule(t, "redis", "python3-redis")
	addr, redisPID := exectest.StartRedis(t)
	script := exectest.SystemPython + " " + example(t, "redis_lock.py")
	ctx, cancel := context.WithTimeout(context.Background(), 4*ceiling)
	defer cancel()

	b, ls, _ := proxied(t, script, addr, time.Second, 2)
	var tokens []int64
	for _, l := range []harness.Locker{ls[0], ls[1], ls[0]} {
		le, err := l.Acquire(ctx)
		require.NoError(t, err)
		tokens = append(tokens, le.Token())
		require.NoError(t, le.Release(ctx))
	}
	require.Equal(t, []int64{1, 2, 3}, tokens, "the order fencecheck saw the grants in")
	require.Contains(t, b.ReportedNoToken(), "redis-py's Lock is SET NX PX with a random value")
	require.Equal(t, "redis-py "+pythonSays(t, "import redis; print(redis.__version__)"), b.ClientLibrary())
	require.NoError(t, b.Close())

	fenced, err := execlock.Start(ctx, execlock.Config{Command: script, Endpoints: []string{addr}, TTL: time.Second, TokenResource: "fenced"})
	require.NoError(t, err)
	defer fenced.Close()
	l, err := fenced.NewLocker(ctx, 0, []string{addr})
	require.NoError(t, err)
	_, err = l.Acquire(ctx)
	require.Error(t, err)
	<-fenced.Failed()
	require.ErrorIs(t, fenced.Err(), registry.ErrNoToken)
	var nt *execlock.NoTokenError
	require.True(t, errors.As(fenced.Err(), &nt))
	require.Equal(t, "fenced", nt.Resource)
	require.NoError(t, fenced.Close())

	incr, ls, _ := proxied(t, script+" --token incr", addr, time.Second, 2)
	last := int64(0)
	for _, l := range []harness.Locker{ls[0], ls[1], ls[0]} {
		le, err := l.Acquire(ctx)
		require.NoError(t, err)
		require.Greater(t, le.Token(), last)
		last = le.Token()
		require.NoError(t, le.Release(ctx))
	}
	require.Empty(t, incr.ReportedNoToken())
	require.NoError(t, incr.Close())
	requireOnly(t, redisPID)
}

// pythonSays is what the system Python prints for code (trimmed).
func pythonSays(t *testing.T, code string) string {
	t.Helper()
	out, err := exec.Command(exectest.SystemPython, "-c", code).Output()
	require.NoError(t, err)
	return strings.TrimSpace(string(out))
}
