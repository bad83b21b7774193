// Package ownlock is an example of a lock backend that lives outside fencecheck: a tiny
// TTL lock server over TCP (one text line per request) and its client, wired into
// fencecheck through a registry descriptor. Its tests run fencecheck's contract suite
// (with the descriptor's defaults and with settings of their own), one scenario (from
// the descriptor, and against a server the test started), the evaluate scorecard and
// its plan against it, through the fencecheck package, and print the run's summary and
// the scorecard to the test's log; docs/go-api.md walks through it, and every Go
// snippet in it is code of this module.
//
// The rules it follows, which every backend must:
//   - tokens are int64 and increase with every grant (a fenced resource refuses a
//     token older than the newest it accepted);
//   - an error after which the request surely had no effect wraps harness.ErrNoEffect:
//     a dial that failed, Acquire's ctx ending before a grant, a second Release; an
//     error after the request went out (its answer lost) does not, because the server
//     may have acted on it;
//   - a Locker dials only the addresses NewLocker was given (fencecheck's fault proxies),
//     never Endpoints() directly;
//   - Lost closes when the client learns its lease is gone;
//   - Close is safe to call twice.
package ownlock

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/registry"
)

// Descriptor registers the tiny lock with fencecheck.
func Descriptor() registry.Backend {
	return registry.Backend{
		Name:    "tinylock",
		Meaning: "a tiny TTL lock server over TCP with a counter token (an example from outside fencecheck)",
		Token:   "the tiny server's grant counter",
		Lifecycle: registry.Lifecycle{
			Start: func(_ context.Context, env registry.Env) (harness.Backend, error) {
				return Start(env.TTL)
			},
			// The types Start, NewLocker and Acquire return: fencecheck reads from their
			// interfaces which faults apply (here none of the optional ones: no Crasher,
			// no Expiring lease). The contract suite checks that the started values agree.
			Shape: func(registry.Settings) registry.Shape {
				return registry.Shape{Backend: (*Server)(nil), Locker: (*Locker)(nil), Lease: (*lease)(nil)}
			},
		},
	}
}

// Server is the lock server: one lock, one lease at a time, a token per grant.
type Server struct {
	ttl time.Duration
	ln  net.Listener
	wg  sync.WaitGroup

	mu      sync.Mutex
	owner   string
	token   int64
	expires time.Time
	closed  bool
	conns   map[net.Conn]bool
}

// Start listens on 127.0.0.1 and serves until Close.
func Start(ttl time.Duration) (*Server, error) {
	if ttl <= 0 {
		return nil, registry.Input(fmt.Errorf("tinylock: TTL must be positive, got %v", ttl))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{ttl: ttl, ln: ln, conns: map[net.Conn]bool{}}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			_ = c.Close()
			return
		}
		s.conns[c] = true
		s.mu.Unlock()
		s.wg.Add(1)
		go s.serve(c)
	}
}

// serve answers one request per line: "acquire OWNER", "renew OWNER TOKEN" and
// "release OWNER TOKEN", with "ok TOKEN", "busy" or "lost".
func (s *Server) serve(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		_ = c.Close()
	}()
	r := bufio.NewScanner(c)
	for r.Scan() {
		f := strings.Fields(r.Text())
		if _, err := fmt.Fprintln(c, s.handle(f)); err != nil {
			return
		}
	}
}

func (s *Server) handle(f []string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	held := s.owner != "" && now.Before(s.expires)
	var tok int64
	if len(f) == 3 {
		tok, _ = strconv.ParseInt(f[2], 10, 64)
	}
	switch {
	case len(f) == 2 && f[0] == "acquire":
		if held {
			return "busy"
		}
		s.token++
		s.owner, s.expires = f[1], now.Add(s.ttl)
		return "ok " + strconv.FormatInt(s.token, 10)
	case len(f) == 3 && f[0] == "renew":
		if !held || s.owner != f[1] || s.token != tok {
			return "lost"
		}
		s.expires = now.Add(s.ttl)
		return "ok " + f[2]
	case len(f) == 3 && f[0] == "release":
		if held && s.owner == f[1] && s.token == tok {
			s.owner = ""
		}
		return "ok " + f[2]
	}
	return "error bad request"
}

// Name implements harness.Backend.
func (s *Server) Name() string { return "tinylock" }

// Endpoints implements harness.Backend.
func (s *Server) Endpoints() []string { return []string{s.ln.Addr().String()} }

// Close stops the server and waits for its goroutines. Safe to call twice.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	err := s.ln.Close()
	s.wg.Wait()
	return err
}

// NewLocker implements harness.Backend: a client of the server at addrs[0] only.
func (s *Server) NewLocker(_ context.Context, id int, addrs []string) (harness.Locker, error) {
	if len(addrs) != 1 {
		return nil, fmt.Errorf("tinylock: want 1 address, got %d", len(addrs))
	}
	return &Locker{addr: addrs[0], owner: "c" + strconv.Itoa(id), ttl: s.ttl, done: make(chan struct{})}, nil
}

// Locker is one client. Each request is one short TCP connection.
type Locker struct {
	addr, owner string
	ttl         time.Duration
	once        sync.Once
	done        chan struct{}
	wg          sync.WaitGroup
}

// call sends one request and reads the answer.
func (l *Locker) call(ctx context.Context, req string) (string, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", l.addr)
	if err != nil {
		return "", fmt.Errorf("%w: %w", harness.ErrNoEffect, err) // nothing was sent
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Now()) })
	defer stop()
	if _, err := fmt.Fprintln(c, req); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("tinylock: %w", ctx.Err())
		}
		return "", err
	}
	return strings.TrimSpace(line), nil
}

// Acquire implements harness.Locker: it asks until granted or ctx ends.
func (l *Locker) Acquire(ctx context.Context) (harness.Lease, error) {
	for {
		ans, err := l.call(ctx, "acquire "+l.owner)
		if err == nil && strings.HasPrefix(ans, "ok ") {
			tok, perr := strconv.ParseInt(strings.TrimPrefix(ans, "ok "), 10, 64)
			if perr != nil {
				return nil, fmt.Errorf("tinylock: bad answer %q", ans)
			}
			le := &lease{l: l, token: tok, lost: make(chan struct{}), stop: make(chan struct{})}
			l.wg.Add(1)
			go le.renew()
			return le, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: tinylock: %w", harness.ErrNoEffect, ctx.Err())
		case <-time.After(l.ttl / 10):
		}
	}
}

// Close implements harness.Locker: it stops every renewal. Safe to call twice.
func (l *Locker) Close() error {
	l.once.Do(func() { close(l.done) })
	l.wg.Wait()
	return nil
}

type lease struct {
	l        *Locker
	token    int64
	lost     chan struct{}
	lostOnce sync.Once
	stop     chan struct{}

	mu       sync.Mutex
	released bool
}

func (le *lease) Token() int64          { return le.token }
func (le *lease) TTL() time.Duration    { return le.l.ttl }
func (le *lease) Lost() <-chan struct{} { return le.lost }

// renew extends the lease every TTL/3 until it is released, refused or the client closes.
func (le *lease) renew() {
	defer le.l.wg.Done()
	t := time.NewTicker(le.l.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-le.stop:
			return
		case <-le.l.done:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*le.l.ttl)
		ans, err := le.l.call(ctx, fmt.Sprintf("renew %s %d", le.l.owner, le.token))
		cancel()
		if err == nil && ans == "lost" {
			le.lostOnce.Do(func() { close(le.lost) })
			return
		}
	}
}

// Release implements harness.Lease. A second Release has nothing to give back: it
// returns an error wrapping harness.ErrNoEffect without asking the server.
func (le *lease) Release(ctx context.Context) error {
	le.mu.Lock()
	if le.released {
		le.mu.Unlock()
		return fmt.Errorf("%w: tinylock: lease %d already released", harness.ErrNoEffect, le.token)
	}
	le.released = true
	close(le.stop)
	le.mu.Unlock()
	_, err := le.l.call(ctx, fmt.Sprintf("release %s %d", le.l.owner, le.token))
	return err
}
