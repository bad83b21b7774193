package harnesstest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/backend/renewal"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/proc"
)

// memlock is a small lock service for the suite's own tests: a line protocol on
// loopback, a TTL lease, a token counter in memory that a Restart loses unless
// persist, and a ValidUntil that can lie. It is the kind of backend a user writes.
type memlock struct {
	ttl     time.Duration
	persist bool // the counter survives Crash+Restart (as if fsynced)
	lie     bool // ValidUntil claims an hour

	mu      sync.Mutex
	addr    string
	ln      net.Listener
	conns   map[net.Conn]struct{}
	counter int64
	holder  int64
	until   time.Time
	wg      sync.WaitGroup
}

var _ harness.Crasher = (*memlock)(nil)

func startMemlock(ttl time.Duration, persist, lie bool) (*memlock, error) {
	m := &memlock{ttl: ttl, persist: persist, lie: lie}
	if err := m.listen(""); err != nil {
		return nil, err
	}
	return m, nil
}

// listen serves on addr ("": a free port below the ephemeral range, which a restart can
// bind again).
func (m *memlock) listen(addr string) error {
	var ln net.Listener
	var err error
	if addr == "" {
		ln, err = proc.ListenFree()
	} else {
		ln, err = net.Listen("tcp", addr)
	}
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.ln, m.addr, m.conns = ln, ln.Addr().String(), map[net.Conn]struct{}{}
	m.mu.Unlock()
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			m.mu.Lock()
			if m.ln != ln { // crashed meanwhile
				m.mu.Unlock()
				_ = c.Close()
				return
			}
			m.conns[c] = struct{}{}
			m.mu.Unlock()
			m.wg.Add(1)
			go func() {
				defer m.wg.Done()
				m.serve(c)
			}()
		}
	}()
	return nil
}

func (m *memlock) serve(c net.Conn) {
	defer func() { _ = c.Close() }()
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		if _, err := fmt.Fprintln(c, m.handle(strings.Fields(line))); err != nil {
			return
		}
	}
}

// handle: ACQUIRE → OK <token> | BUSY; RENEW <token> / RELEASE <token> → OK | GONE.
func (m *memlock) handle(f []string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	if m.holder != 0 && !now.Before(m.until) {
		m.holder = 0
	}
	var tok int64
	if len(f) == 2 {
		tok, _ = strconv.ParseInt(f[1], 10, 64)
	}
	switch {
	case len(f) == 1 && f[0] == "ACQUIRE":
		if m.holder != 0 {
			return "BUSY"
		}
		m.counter++
		m.holder, m.until = m.counter, now.Add(m.ttl)
		return "OK " + strconv.FormatInt(m.counter, 10)
	case len(f) == 2 && f[0] == "RENEW" && tok == m.holder && tok != 0:
		m.until = now.Add(m.ttl)
		return "OK"
	case len(f) == 2 && f[0] == "RELEASE" && tok == m.holder && tok != 0:
		m.holder = 0
		return "OK"
	}
	return "GONE"
}

func (m *memlock) Name() string { return "memlock" }
func (m *memlock) Endpoints() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return []string{m.addr}
}

// Crash drops the listener and every connection; the lease (in memory) is gone.
func (m *memlock) Crash(context.Context, int) error {
	m.mu.Lock()
	if m.ln == nil {
		m.mu.Unlock()
		return nil
	}
	_ = m.ln.Close()
	for c := range m.conns {
		_ = c.Close()
	}
	m.ln, m.holder = nil, 0
	m.mu.Unlock()
	m.wg.Wait()
	return nil
}

// Restart listens again on the same address; the counter starts again unless persist.
func (m *memlock) Restart(_ context.Context, _ int, keepData bool) error {
	m.mu.Lock()
	if !m.persist || !keepData {
		m.counter = 0
	}
	addr := m.addr
	m.mu.Unlock()
	return m.listen(addr)
}

func (m *memlock) Close() error { return m.Crash(context.Background(), 0) }

func (m *memlock) NewLocker(_ context.Context, _ int, addrs []string) (harness.Locker, error) {
	if len(addrs) != 1 {
		return nil, fmt.Errorf("%w: memlock: want 1 address, got %d", harness.ErrNoEffect, len(addrs))
	}
	return &memLocker{m: m, addr: addrs[0]}, nil
}

type memLocker struct {
	m      *memlock
	addr   string
	leases renewal.Set

	mu sync.Mutex
	c  net.Conn
	r  *bufio.Reader
}

// call sends one request on the locker's connection (dialled again after it broke).
func (l *memLocker) call(ctx context.Context, req string) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.c == nil {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", l.addr)
		if err != nil {
			return "", fmt.Errorf("%w: %w", harness.ErrNoEffect, err)
		}
		l.c, l.r = c, bufio.NewReader(c)
	}
	dl, ok := ctx.Deadline()
	if !ok {
		dl = time.Now().Add(Ceiling)
	}
	_ = l.c.SetDeadline(dl)
	resp, err := "", error(nil)
	if _, err = fmt.Fprintln(l.c, req); err == nil {
		resp, err = l.r.ReadString('\n')
	}
	if err != nil {
		_ = l.c.Close()
		l.c = nil
		return "", err
	}
	return strings.TrimSpace(resp), nil
}

func (l *memLocker) Acquire(ctx context.Context) (harness.Lease, error) {
	for {
		start := time.Now()
		resp, err := l.call(ctx, "ACQUIRE")
		if tok, ok := strings.CutPrefix(resp, "OK "); ok && err == nil {
			n, _ := strconv.ParseInt(tok, 10, 64)
			le := &memLease{l: l, token: n}
			until := start.Add(l.m.ttl)
			if l.m.lie {
				until = start.Add(time.Hour)
			}
			le.k = l.leases.Start(l.m.ttl, until, le.renew)
			return le, nil
		}
		if err != nil && !errors.Is(err, harness.ErrNoEffect) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: memlock: busy until %w", harness.ErrNoEffect, ctx.Err())
		case <-time.After(l.m.ttl / 20):
		}
	}
}

func (l *memLocker) Close() error {
	l.leases.Close()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.c != nil {
		_ = l.c.Close()
		l.c = nil
	}
	return nil
}

type memLease struct {
	l     *memLocker
	token int64
	k     *renewal.Keeper
}

func (le *memLease) Token() int64          { return le.token }
func (le *memLease) TTL() time.Duration    { return le.l.m.ttl }
func (le *memLease) Lost() <-chan struct{} { return le.k.Lost() }
func (le *memLease) ValidUntil() time.Time { return le.k.ValidUntil() }

func (le *memLease) renew(ctx context.Context) (renewal.Result, time.Time) {
	start := time.Now()
	resp, err := le.l.call(ctx, "RENEW "+strconv.FormatInt(le.token, 10))
	switch {
	case err != nil:
		return renewal.Unknown, time.Time{}
	case resp != "OK":
		return renewal.Refused, time.Time{}
	case le.l.m.lie:
		return renewal.Renewed, start.Add(time.Hour)
	}
	return renewal.Renewed, start.Add(le.l.m.ttl)
}

func (le *memLease) Release(ctx context.Context) error {
	le.l.leases.Stop(le.k)
	resp, err := le.l.call(ctx, "RELEASE "+strconv.FormatInt(le.token, 10))
	if err != nil {
		return err
	}
	if resp != "OK" {
		return fmt.Errorf("%w: memlock: lease %d is gone", harness.ErrNoEffect, le.token)
	}
	return nil
}
