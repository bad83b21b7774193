package proxy

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/harness/proc"
	"github.com/fencecheck/fencecheck/harness/proc/proctest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// generous bounds for "it eventually happens"; never used as a timing assert
// on the proxy's speed.
const (
	eventually = 30 * time.Second
	tick       = 5 * time.Millisecond
	holdWindow = 200 * time.Millisecond // how long we assert absence while stalled
)

// echoServer is a real TCP echo server on 127.0.0.1. Each connection echoes
// until EOF, then half-closes and closes.
type echoServer struct {
	ln       net.Listener
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    map[net.Conn]struct{}
	accepted atomic.Int64
	received atomic.Int64
}

func startEcho(tb testing.TB) *echoServer {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(tb, err)
	s := &echoServer{ln: ln, conns: map[net.Conn]struct{}{}}
	s.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.accepted.Add(1)
			s.mu.Lock()
			s.conns[c] = struct{}{}
			s.mu.Unlock()
			s.wg.Go(func() {
				defer func() {
					s.mu.Lock()
					delete(s.conns, c)
					s.mu.Unlock()
					_ = c.Close()
				}()
				buf := make([]byte, 32<<10)
				for {
					n, err := c.Read(buf)
					if n > 0 {
						s.received.Add(int64(n))
						if _, werr := c.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						if errors.Is(err, io.EOF) {
							_ = c.(*net.TCPConn).CloseWrite()
						}
						return
					}
				}
			})
		}
	})
	tb.Cleanup(s.close)
	return s
}

func (s *echoServer) addr() string { return s.ln.Addr().String() }

func (s *echoServer) close() {
	_ = s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func newLink(tb testing.TB, target string) *Link {
	tb.Helper()
	l, err := New(target)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = l.Close() })
	return l
}

func dial(tb testing.TB, addr string) *net.TCPConn {
	tb.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = c.Close() })
	return c.(*net.TCPConn)
}

// readFull reads exactly n bytes, failing the test after a generous timeout.
func readFull(tb testing.TB, c net.Conn, n int) []byte {
	tb.Helper()
	require.NoError(tb, c.SetReadDeadline(time.Now().Add(eventually)))
	buf := make([]byte, n)
	_, err := io.ReadFull(c, buf)
	require.NoError(tb, err)
	require.NoError(tb, c.SetReadDeadline(time.Time{}))
	return buf
}

// requireNothingFor asserts no byte arrives on c within d.
func requireNothingFor(t *testing.T, c net.Conn, d time.Duration) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(d)))
	var b [1]byte
	n, err := c.Read(b[:])
	require.Zero(t, n, "bytes arrived through a stalled link")
	var ne net.Error
	require.True(t, errors.As(err, &ne) && ne.Timeout(), "want read timeout, got %v", err)
	require.NoError(t, c.SetReadDeadline(time.Time{}))
}

// requireClosed asserts the peer closed c (EOF or error, not a timeout).
func requireClosed(t *testing.T, c net.Conn) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(eventually)))
	_, err := io.Copy(io.Discard, c) // returns nil on EOF
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "connection was not closed: %v", err)
}

func roundTrip(t *testing.T, c net.Conn, msg []byte) {
	t.Helper()
	_, err := c.Write(msg)
	require.NoError(t, err)
	require.Equal(t, msg, readFull(t, c, len(msg)))
}

func TestModeString(t *testing.T) {
	for _, tc := range []struct {
		m    Mode
		want string
	}{
		{Pass, "pass"}, {Delay, "delay"}, {Stall, "stall"}, {Blackhole, "blackhole"}, {Mode(42), "Mode(42)"},
	} {
		require.Equal(t, tc.want, tc.m.String())
	}
}

func TestNewInvalidTarget(t *testing.T) {
	for _, target := range []string{"", "localhost", "127.0.0.1", "127.0.0.1:", ":80", "127.0.0.1:http", "127.0.0.1:0", "127.0.0.1:70000", "[::1"} {
		t.Run(target, func(t *testing.T) {
			l, err := New(target)
			require.Nil(t, l)
			require.ErrorIs(t, err, ErrInvalidTarget)
			require.Contains(t, err.Error(), "invalid target")
		})
	}
}

func TestAddrTargetMode(t *testing.T) {
	l := newLink(t, "127.0.0.1:9")
	require.True(t, strings.HasPrefix(l.Addr(), "127.0.0.1:"), l.Addr())
	require.NotEqual(t, "127.0.0.1:0", l.Addr())
	require.Equal(t, "127.0.0.1:9", l.Target())
	steps := []struct {
		do   func()
		want Mode
	}{
		{func() {}, Pass},
		{func() { l.SetDelay(time.Millisecond) }, Delay},
		{l.Stall, Stall},
		{l.Blackhole, Blackhole},
		{l.Pass, Pass},
	}
	for _, s := range steps {
		s.do()
		require.Equal(t, s.want, l.Mode())
	}
}

func TestPassEcho(t *testing.T) {
	echo := startEcho(t)
	l := newLink(t, echo.addr())
	c := dial(t, l.Addr())
	for i := range 10 {
		roundTrip(t, c, []byte(fmt.Sprintf("hello %d", i)))
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
	go func() { _, _ = c.Write(big) }()
	require.Equal(t, big, readFull(t, c, len(big)))

	want := int64(len(big))
	for i := range 10 {
		want += int64(len(fmt.Sprintf("hello %d", i)))
	}
	require.Eventually(t, func() bool {
		s := l.Stats()
		return s.BytesToTarget == want && s.BytesToClient == want
	}, eventually, tick)
	s := l.Stats()
	require.EqualValues(t, 1, s.Accepted)
	require.Equal(t, 1, s.Active)
	require.Zero(t, s.BlackholeClosed)
}

// Half-close travels both ways: client CloseWrite → target sees EOF → target
// finishes and closes → client reads everything then EOF.
func TestHalfClose(t *testing.T) {
	echo := startEcho(t)
	l := newLink(t, echo.addr())
	c := dial(t, l.Addr())
	msg := bytes.Repeat([]byte("x"), 100<<10)
	_, err := c.Write(msg)
	require.NoError(t, err)
	require.NoError(t, c.CloseWrite())
	require.NoError(t, c.SetReadDeadline(time.Now().Add(eventually)))
	got, err := io.ReadAll(c)
	require.NoError(t, err)
	require.Equal(t, msg, got)
	require.Eventually(t, func() bool { return l.Stats().Active == 0 }, eventually, tick)
}

func TestDelay(t *testing.T) {
	for _, d := range []time.Duration{20 * time.Millisecond, 100 * time.Millisecond} {
		t.Run(d.String(), func(t *testing.T) {
			echo := startEcho(t)
			l := newLink(t, echo.addr())
			c := dial(t, l.Addr())
			roundTrip(t, c, []byte("warm-up"))
			l.SetDelay(d)

			start := time.Now()
			roundTrip(t, c, []byte("ping"))
			// Delayed once each way: lower bound only.
			require.GreaterOrEqual(t, time.Since(start), 2*d)

			// Many writes come out in order, exactly.
			var want bytes.Buffer
			for i := range 50 {
				msg := fmt.Sprintf("<%d>", i)
				want.WriteString(msg)
				_, err := c.Write([]byte(msg))
				require.NoError(t, err)
			}
			require.Equal(t, want.Bytes(), readFull(t, c, want.Len()))
		})
	}
}

// A huge delay switched back to Pass releases the delayed bytes.
func TestDelayThenPassReleases(t *testing.T) {
	echo := startEcho(t)
	l := newLink(t, echo.addr())
	c := dial(t, l.Addr())
	roundTrip(t, c, []byte("warm-up"))
	l.SetDelay(time.Hour)
	_, err := c.Write([]byte("late"))
	require.NoError(t, err)
	requireNothingFor(t, c, holdWindow)
	l.Pass()
	require.Equal(t, []byte("late"), readFull(t, c, 4))
}

func TestStallHoldsRequest(t *testing.T) {
	echo := startEcho(t)
	l := newLink(t, echo.addr())
	c := dial(t, l.Addr())
	roundTrip(t, c, []byte("before"))
	received := echo.received.Load()

	l.Stall()
	_, err := c.Write([]byte("request"))
	require.NoError(t, err)
	requireNothingFor(t, c, holdWindow)
	require.Equal(t, received, echo.received.Load(), "target saw bytes while stalled")

	l.Pass()
	require.Equal(t, []byte("request"), readFull(t, c, len("request")))
	roundTrip(t, c, []byte("after"))
}

// Many writes (far more than the proxy buffers, so TCP back-pressure holds
// some) while stalled come out in order after Pass.
func TestStallManyWritesInOrder(t *testing.T) {
	echo := startEcho(t)
	l := newLink(t, echo.addr())
	c := dial(t, l.Addr())
	roundTrip(t, c, []byte("warm-up"))

	l.Stall()
	var want bytes.Buffer
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		msg := make([]byte, 8+rng.IntN(4096))
		binary.BigEndian.PutUint64(msg, uint64(i))
		for j := 8; j < len(msg); j++ {
			msg[j] = byte(rng.Uint32())
		}
		want.Write(msg)
	}
	total := want.Len()
	writeErr := make(chan error, 1)
	go func() {
		data := want.Bytes()
		for len(data) > 0 {
			n := min(len(data), 1+rng.IntN(8192))
			if _, err := c.Write(data[:n]); err != nil {
				writeErr <- err
				return
			}
			data = data[n:]
		}
		writeErr <- nil
	}()
	requireNothingFor(t, c, holdWindow)

	l.Pass()
	require.Equal(t, want.Bytes(), readFull(t, c, total))
	require.NoError(t, <-writeErr)
}

// A connection made while stalled is accepted but not forwarded (the target
// does not even see it) until Pass.
func TestStallHoldsNewConnection(t *testing.T) {
	echo := startEcho(t)
	l := newLink(t, echo.addr())
	l.Stall()
	c := dial(t, l.Addr())
	_, err := c.Write([]byte("hello"))
	require.NoError(t, err)
	requireNothingFor(t, c, holdWindow)
	require.Zero(t, echo.accepted.Load(), "target was dialled while stalled")
	require.Eventually(t, func() bool { return l.Stats().Accepted == 1 }, eventually, tick)

	l.Pass()
	require.Equal(t, []byte("hello"), readFull(t, c, 5))
}

func TestBlackhole(t *testing.T) {
	echo := startEcho(t)
	l := newLink(t, echo.addr())
	open1 := dial(t, l.Addr())
	open2 := dial(t, l.Addr())
	roundTrip(t, open1, []byte("one"))
	roundTrip(t, open2, []byte("two"))

	l.Blackhole()
	requireClosed(t, open1)
	requireClosed(t, open2)
	require.Eventually(t, func() bool { return echo.accepted.Load() == 2 && l.Stats().Active == 0 }, eventually, tick)

	// New connections are closed while blackholed; the target never sees them.
	fresh := dial(t, l.Addr())
	_, _ = fresh.Write([]byte("ignored")) // may fail; the connection is dead either way
	requireClosed(t, fresh)
	require.EqualValues(t, 2, echo.accepted.Load())

	s := l.Stats()
	require.EqualValues(t, 2, s.BlackholeClosed)
	require.EqualValues(t, 1, s.Refused)

	// Pass restores service for new connections; the old ones stay closed.
	l.Pass()
	c := dial(t, l.Addr())
	roundTrip(t, c, []byte("back"))
}

// Bytes held by a stall on a connection that is then blackholed are never
// delivered: the connection is closed, not resumed.
func TestBlackholeDropsHeldConnection(t *testing.T) {
	echo := startEcho(t)
	l := newLink(t, echo.addr())
	c := dial(t, l.Addr())
	roundTrip(t, c, []byte("warm-up"))
	received := echo.received.Load()

	l.Stall()
	_, err := c.Write([]byte("held"))
	require.NoError(t, err)
	held := dial(t, l.Addr()) // held at the dial stage
	require.Eventually(t, func() bool { return l.Stats().Accepted == 2 }, eventually, tick)
	l.Blackhole()
	requireClosed(t, c)
	requireClosed(t, held)
	require.EqualValues(t, 2, l.Stats().BlackholeClosed)

	l.Pass()
	c2 := dial(t, l.Addr())
	roundTrip(t, c2, []byte("fresh"))
	require.Equal(t, received+int64(len("fresh")), echo.received.Load(), "held bytes leaked to the target")
	require.EqualValues(t, 2, echo.accepted.Load())
}

func TestDialFailureClosesClient(t *testing.T) {
	dead := proctest.DeadAddr(t)

	l := newLink(t, dead)
	c := dial(t, l.Addr())
	requireClosed(t, c)
	require.Eventually(t, func() bool {
		s := l.Stats()
		return s.DialErrors == 1 && s.Active == 0
	}, eventually, tick)
}

// With a dial retry, a client that connects before the target listens is served once
// it does, instead of being closed.
func TestDialRetryWaitsForLateListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	// Held, the port refuses the first dials and no other test's probe hands it out;
	// the late listener binds beside the hold.
	hold, err := proc.HoldPort(addr)
	require.NoError(t, err)
	defer hold.Close()

	l := newLink(t, addr)
	l.SetDialRetry(eventually)
	c := dial(t, l.Addr())
	_, err = c.Write([]byte("late"))
	require.NoError(t, err)
	time.Sleep(holdWindow) // the first dials are refused
	ln, err = net.Listen("tcp", addr)
	require.NoError(t, err)
	defer ln.Close()
	sc, err := ln.Accept()
	require.NoError(t, err)
	defer sc.Close()
	buf := make([]byte, 4)
	_, err = io.ReadFull(sc, buf)
	require.NoError(t, err)
	require.Equal(t, "late", string(buf))
	require.Zero(t, l.Stats().DialErrors)
}

// An HTTP/1.1 server behind the proxy works through Pass→Stall→Pass with a
// request in flight across the stall; the response arrives after Pass.
func TestHTTPAcrossStall(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		_, _ = fmt.Fprintf(w, "%s %s %s", r.Method, r.URL.Path, body)
	}))
	defer srv.Close()
	l := newLink(t, srv.Listener.Addr().String())
	tr := &http.Transport{} // no env proxy
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: eventually}
	base := "http://" + l.Addr()

	get := func(method, path, body string) (string, error) {
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			return "", err
		}
		resp, err := client.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}

	got, err := get("GET", "/before", "")
	require.NoError(t, err)
	require.Equal(t, "GET /before ", got)

	l.Stall()
	type result struct {
		body string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		b, err := get("POST", "/during", "payload across the stall")
		done <- result{b, err}
	}()
	select {
	case r := <-done:
		t.Fatalf("response arrived while stalled: %+v", r)
	case <-time.After(holdWindow):
	}
	l.Pass()
	r := <-done // bounded by client.Timeout
	require.NoError(t, r.err)
	require.Equal(t, "POST /during payload across the stall", r.body)

	got, err = get("GET", "/after", "")
	require.NoError(t, err)
	require.Equal(t, "GET /after ", got)
}

// Streams keep their exact bytes while modes flip under them.
func TestConcurrentModeFlips(t *testing.T) {
	echo := startEcho(t)
	l := newLink(t, echo.addr())

	stop := make(chan struct{})
	var flipper sync.WaitGroup
	var flips atomic.Int64
	flipper.Go(func() {
		rng := rand.New(rand.NewPCG(3, 4))
		for ; ; flips.Add(1) {
			select {
			case <-stop:
				l.Pass()
				return
			case <-time.After(time.Duration(rng.IntN(3000)) * time.Microsecond):
			}
			switch rng.IntN(3) {
			case 0:
				l.Pass()
			case 1:
				l.SetDelay(time.Duration(rng.IntN(2000)) * time.Microsecond)
			case 2:
				l.Stall()
			}
			_ = l.Mode()
			_ = l.Stats()
		}
	})

	var clients sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 4 {
		clients.Go(func() {
			c, err := net.Dial("tcp", l.Addr())
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			rng := rand.New(rand.NewPCG(uint64(i), 9))
			data := make([]byte, 512<<10)
			for j := range data {
				data[j] = byte(rng.Uint32())
			}
			go func() {
				rest := data
				for len(rest) > 0 {
					n := min(len(rest), 1+rng.IntN(16<<10))
					if _, err := c.Write(rest[:n]); err != nil {
						return
					}
					rest = rest[n:]
				}
				_ = c.(*net.TCPConn).CloseWrite()
			}()
			_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
			got, err := io.ReadAll(c)
			if err != nil {
				errs <- err
				return
			}
			if !bytes.Equal(data, got) {
				errs <- fmt.Errorf("client %d: stream corrupted (%d bytes back of %d)", i, len(got), len(data))
			}
		})
	}
	// A hundred flips under the streams, however slow the machine, not 300 ms' worth.
	require.Eventually(t, func() bool { return flips.Load() >= 100 }, eventually, tick)
	close(stop)
	flipper.Wait()
	clients.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

func TestCloseTwice(t *testing.T) {
	echo := startEcho(t)
	l, err := New(echo.addr())
	require.NoError(t, err)
	c := dial(t, l.Addr())
	roundTrip(t, c, []byte("x"))
	require.NoError(t, l.Close())
	require.NoError(t, l.Close())
	requireClosed(t, c)
	// Mode changes after Close are harmless.
	l.Stall()
	l.Blackhole()
	l.Pass()
	_, err = net.DialTimeout("tcp", l.Addr(), time.Second)
	require.Error(t, err, "listener still accepting after Close")
}

func TestCloseConcurrent(t *testing.T) {
	echo := startEcho(t)
	l, err := New(echo.addr())
	require.NoError(t, err)
	dial(t, l.Addr())
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { _ = l.Close() })
	}
	wg.Wait()
}

// Close while stalled with held data (and a writer blocked on back-pressure)
// returns and closes the client.
func TestCloseWhileStalledWithHeldData(t *testing.T) {
	echo := startEcho(t)
	l, err := New(echo.addr())
	require.NoError(t, err)
	c := dial(t, l.Addr())
	roundTrip(t, c, []byte("warm-up"))
	l.Stall()
	pending := dial(t, l.Addr()) // held before dial
	_, err = pending.Write([]byte("pending"))
	require.NoError(t, err)

	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		big := make([]byte, 16<<20) // more than proxy + kernel buffers hold
		_, _ = c.Write(big)
	}()
	requireNothingFor(t, c, holdWindow)

	closed := make(chan error, 1)
	go func() { closed <- l.Close() }()
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(eventually):
		t.Fatal("Close did not return while stalled")
	}
	requireClosed(t, c)
	requireClosed(t, pending)
	<-writerDone
}

func startSink(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(tb, err)
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				_, _ = io.Copy(io.Discard, c)
			})
		}
	})
	tb.Cleanup(func() {
		_ = ln.Close()
		wg.Wait()
	})
	return ln.Addr().String()
}

// BenchmarkPassThroughput measures one-way throughput through a Pass link,
// next to a direct connection for reference.
func BenchmarkPassThroughput(b *testing.B) {
	for _, via := range []string{"direct", "proxy"} {
		b.Run(via, func(b *testing.B) {
			addr := startSink(b)
			if via == "proxy" {
				addr = newLink(b, addr).Addr()
			}
			c := dial(b, addr)
			buf := make([]byte, 64<<10)
			b.SetBytes(int64(len(buf)))
			b.ResetTimer()
			for range b.N {
				if _, err := c.Write(buf); err != nil {
					b.Fatal(err)
				}
			}
			// Wait until every byte reached the sink: it closes after EOF.
			if err := c.CloseWrite(); err != nil {
				b.Fatal(err)
			}
			if _, err := io.Copy(io.Discard, c); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
		})
	}
}
