// Package etcdtest has test helpers for the etcd backend and the etcd-txn resource: a
// cluster started for one test, and a tiny TCP forwarder that can stall (hold the bytes
// of every connection, both ways, like a paused process) and resume.
package etcdtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fencecheck/fencecheck/backend/etcd"
	"github.com/fencecheck/fencecheck/harness/proc"
)

// StartCluster starts an embedded cluster of n members for t, logging to a file in
// t's temp dir, and closes it when t ends.
func StartCluster(t testing.TB, n int) *etcd.Cluster {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	c, err := etcd.StartCluster(ctx, etcd.ClusterConfig{Members: n, Dir: dir, LogPath: filepath.Join(dir, "etcd.log")})
	if err != nil {
		t.Fatalf("start %d-member etcd: %v", n, err)
	}
	t.Logf("%d-member etcd ready in %v at %v", n, time.Since(start), c.Endpoints())
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Forwarder forwards TCP connections from its own 127.0.0.1 address to a target.
// Stall holds every byte in both directions (nothing is dropped, so a stream resumes
// intact); Resume lets them go.
type Forwarder struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	cond    *sync.Cond
	stalled bool
	closed  bool
	conns   map[net.Conn]struct{}
	wg      sync.WaitGroup
}

// Forward starts a forwarder to target.
func Forward(target string) (*Forwarder, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f := &Forwarder{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	f.cond = sync.NewCond(&f.mu)
	f.wg.Add(1)
	go f.accept()
	return f, nil
}

// MustForward is Forward for tests; the forwarder closes when t ends.
func MustForward(t testing.TB, target string) *Forwarder {
	t.Helper()
	f, err := Forward(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f
}

// Addr is the forwarder's own address.
func (f *Forwarder) Addr() string { return f.ln.Addr().String() }

// Stall holds every byte until Resume.
func (f *Forwarder) Stall() {
	f.mu.Lock()
	f.stalled = true
	f.mu.Unlock()
}

// Resume lets the held bytes go.
func (f *Forwarder) Resume() {
	f.mu.Lock()
	f.stalled = false
	f.mu.Unlock()
	f.cond.Broadcast()
}

// Close stops listening, closes every connection and waits for its goroutines.
func (f *Forwarder) Close() {
	f.mu.Lock()
	f.closed = true
	for c := range f.conns {
		_ = c.Close()
	}
	f.mu.Unlock()
	f.cond.Broadcast()
	_ = f.ln.Close()
	f.wg.Wait()
}

func (f *Forwarder) accept() {
	defer f.wg.Done()
	for {
		in, err := f.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.DialTimeout("tcp", f.target, time.Second)
		if err != nil {
			_ = in.Close()
			continue
		}
		f.mu.Lock()
		if f.closed {
			f.mu.Unlock()
			_ = in.Close()
			_ = out.Close()
			return
		}
		f.conns[in], f.conns[out] = struct{}{}, struct{}{}
		f.wg.Add(2)
		f.mu.Unlock()
		go f.pipe(in, out)
		go f.pipe(out, in)
	}
}

// pipe copies src to dst, holding each chunk while the forwarder is stalled.
func (f *Forwarder) pipe(src, dst net.Conn) {
	defer f.wg.Done()
	defer func() {
		_ = src.Close()
		_ = dst.Close()
		f.mu.Lock()
		delete(f.conns, src)
		delete(f.conns, dst)
		f.mu.Unlock()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !f.waitRunning() {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // EOF or a closed connection: close both sides
		}
	}
}

// waitRunning blocks while stalled; false when the forwarder closed.
func (f *Forwarder) waitRunning() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for f.stalled && !f.closed {
		f.cond.Wait()
	}
	return !f.closed
}

// VerifyNoLeaks runs the tests, then checks that no goroutine and no child process
// outlives them, with one exception (below). It waits up to a minute (generous, for a
// loaded machine) for goroutines to end on their own, because a closed member's peer HTTP
// client (etcd's rafthttp round tripper, which etcd never closes) keeps an idle
// keep-alive connection open until the other side's 5s peer read timeout ends it;
// goleak's own retries give up after about 2s. The process check is what lets tests that
// start servers run in parallel: none of them can look at the whole process tree.
//
// One goroutine etcd leaves for good is not counted: a member's peer /version handler
// that was running when the member was stopped abruptly (a crash: Server.HardStop)
// waits forever for the closed backend's read lock, and no caller can end it.
func VerifyNoLeaks(m *testing.M) int {
	code := m.Run()
	if code != 0 {
		return code
	}
	start := time.Now()
	for {
		err := goleak.Find(goleak.IgnoreAnyFunction("go.etcd.io/etcd/server/v3/etcdserver/api/etcdhttp.newPeerHandler.versionHandler.func1"))
		kids := proc.Descendants(os.Getpid())
		if err == nil && len(kids) == 0 {
			if d := time.Since(start); d > time.Second && testing.Verbose() {
				fmt.Fprintf(os.Stderr, "etcdtest: goroutines drained after %v\n", d.Round(time.Millisecond))
			}
			return 0
		}
		if time.Since(start) > time.Minute {
			if err != nil {
				fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			}
			if len(kids) > 0 {
				fmt.Fprintf(os.Stderr, "processes left behind by the tests: %v\n", kids)
			}
			return 1
		}
		time.Sleep(100 * time.Millisecond)
	}
}
