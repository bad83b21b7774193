package raftlock

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/fencecheck/fencecheck/harness"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testLogWriter sends raft's output to the test log when RAFTLOCK_LOG is set.
type testLogWriter struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
}

func (w *testLogWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(string(p))
	}
	return len(p), nil
}

// testConfig is a fast config: TTL 300ms, raft's test timings.
func testConfig(t testing.TB) config {
	cfg := config{TTL: 300 * time.Millisecond}
	if os.Getenv("RAFTLOCK_LOG") != "" {
		w := &testLogWriter{t: t}
		t.Cleanup(func() { w.mu.Lock(); w.done = true; w.mu.Unlock() })
		cfg.LogWriter = w
		cfg.RaftLogLevel = "debug"
	}
	return cfg
}

func startService(t testing.TB, cfg config) *service {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	begin := time.Now()
	s, err := Start(ctx, cfg)
	require.NoError(t, err)
	t.Logf("time to first leader: %s", time.Since(begin))
	t.Cleanup(func() {
		require.NoError(t, s.Close())
	})
	return s
}

func newTestLocker(t testing.TB, s *service, id int, addrs []string) *locker {
	t.Helper()
	if addrs == nil {
		addrs = s.Endpoints()
	}
	l, err := s.NewLocker(context.Background(), id, addrs)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, l.Close()) })
	return l.(*locker)
}

// patience is the ceiling of every wait for an event in these tests: generous, because
// a loaded 2-core machine can be many times slower than an idle one, and never spent on
// the passing path, which ends at the event.
const patience = 30 * time.Second

func ctxTimeout(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// eventually polls cond every 5ms until it holds or the deadline passes.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// acquire acquires, retrying when the outcome was unknown: a request can die with its
// connection after a crash, or meet a leader change (even an unprovoked one on a starved
// machine), which is honestly ambiguous.
func acquire(t testing.TB, l *locker, d time.Duration) *Lease {
	t.Helper()
	ctx := ctxTimeout(t, d)
	for {
		ls, err := l.AcquireLease(ctx)
		if err == nil {
			return ls
		}
		require.NotErrorIs(t, err, harness.ErrNoEffect)
		t.Logf("acquire outcome unknown, retrying: %v", err)
	}
}

// acquireAfterFault is acquire, named for where unknown outcomes are expected.
func acquireAfterFault(t testing.TB, l *locker, d time.Duration) *Lease {
	t.Helper()
	return acquire(t, l, d)
}

// release releases, retrying after an unknown outcome; a refusal after an unknown
// outcome means the first attempt took effect (or the lease expired meanwhile).
func release(t testing.TB, ls *Lease) {
	t.Helper()
	ctx := ctxTimeout(t, patience)
	unknown := false
	for {
		err := ls.Release(ctx)
		if err == nil || (unknown && errors.Is(err, harness.ErrNoEffect) && errors.Is(ls.Err(), ErrLeaseRefused)) {
			return
		}
		require.NotErrorIs(t, err, harness.ErrNoEffect)
		t.Logf("release outcome unknown, retrying: %v", err)
		unknown = true
	}
}

// waitConverged waits until every live node has applied the same index and holds the
// same FSM state (raft's AppliedIndex may run ahead of the FSM briefly).
func waitConverged(t testing.TB, s *service, d time.Duration) {
	t.Helper()
	eventually(t, d, "nodes to converge", func() bool {
		var (
			first   = true
			applied uint64
			state   state
		)
		for i := range s.Nodes() {
			st, err := s.Status(i)
			require.NoError(t, err)
			if !st.Up {
				continue
			}
			fs, err := s.NodeState(i)
			if err != nil {
				return false // crashed meanwhile
			}
			if first {
				applied, state, first = st.AppliedIndex, fs, false
				continue
			}
			if st.AppliedIndex != applied || fs != state {
				return false
			}
		}
		return true
	})
}

// forwarder is a tiny TCP forwarder standing in for a client's link to a node: Cut closes
// every connection and refuses to forward new ones until Mend.
type forwarder struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func newForwarder(t testing.TB, target string) *forwarder {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	f := &forwarder{ln: ln, target: target, conns: make(map[net.Conn]struct{})}
	f.wg.Add(1)
	go f.accept()
	t.Cleanup(f.Close)
	return f
}

func (f *forwarder) Addr() string { return f.ln.Addr().String() }

func (f *forwarder) accept() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		if f.cut {
			f.mu.Unlock()
			_ = c.Close()
			continue
		}
		up, err := net.Dial("tcp", f.target)
		if err != nil {
			f.mu.Unlock()
			_ = c.Close()
			continue
		}
		f.conns[c] = struct{}{}
		f.conns[up] = struct{}{}
		f.wg.Add(2)
		f.mu.Unlock()
		go f.pipe(c, up)
		go f.pipe(up, c)
	}
}

func (f *forwarder) pipe(dst, src net.Conn) {
	defer f.wg.Done()
	_, _ = io.Copy(dst, src)
	_ = dst.Close()
	_ = src.Close()
	f.mu.Lock()
	delete(f.conns, dst)
	delete(f.conns, src)
	f.mu.Unlock()
}

func (f *forwarder) Cut() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cut = true
	for c := range f.conns {
		_ = c.Close()
	}
}

func (f *forwarder) Mend() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cut = false
}

func (f *forwarder) Close() {
	err := f.ln.Close()
	if err != nil && !errors.Is(err, net.ErrClosed) {
		panic(err)
	}
	f.Cut()
	f.wg.Wait()
}

func forwarders(t testing.TB, s *service) ([]*forwarder, []string) {
	var fs []*forwarder
	var addrs []string
	for _, ep := range s.Endpoints() {
		f := newForwarder(t, ep)
		fs = append(fs, f)
		addrs = append(addrs, f.Addr())
	}
	return fs, addrs
}
