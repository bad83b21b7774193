// Package proxy is a loopback TCP fault proxy.
//
// A Link listens on 127.0.0.1 (ephemeral port) and forwards every accepted
// connection to one target address. Faults set on a Link apply to every
// connection through it, in both directions, and to nothing else: the
// harness gives each client its own Link per server, so a fault on a link
// touches only that client.
//
// Modes:
//
//   - Pass: bytes are forwarded as soon as they are read.
//   - Delay: every chunk of bytes is forwarded d after it was read, in order.
//   - Stall: nothing is forwarded. Bytes already read are kept, in order;
//     once the per-direction buffer is full the proxy stops reading, so TCP
//     back-pressure holds the rest in the kernel. Nothing is dropped. New
//     connections are accepted but the target is not dialled until the stall
//     ends. No FIN or RST is sent either way and both sides stay open, so a
//     stall is a silent network: the proxy's kernel still ACKs and answers TCP
//     keepalive probes, so only an application-level timeout notices it (the
//     silent-partition fault). Bytes are held, not dropped: TCP loses none in a
//     partition shorter than its retransmission timeout.
//   - Blackhole: every open connection is closed (both sides) and new
//     connections are closed right after accept, until Pass. A blackholed
//     connection is closed, never resumed, so no byte stream ever has a hole
//     in it (gRPC/HTTP2 framing would desync).
//
// Pass (or SetDelay) after Stall releases everything held, in its original
// order, then forwards normally. A half-close (EOF) travels through the
// pipeline like data: it is delayed and held like the bytes before it and is
// delivered as CloseWrite on the other side, so HTTP/1.1 and gRPC both work.
package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Mode is the fault mode of a Link.
type Mode int

const (
	// Pass forwards bytes as soon as they are read.
	Pass Mode = iota
	// Delay forwards every chunk a fixed time after it was read.
	Delay
	// Stall holds bytes in both directions and holds new connections.
	Stall
	// Blackhole closes every connection and refuses new ones.
	Blackhole
)

// String returns "pass", "delay", "stall" or "blackhole".
func (m Mode) String() string {
	switch m {
	case Pass:
		return "pass"
	case Delay:
		return "delay"
	case Stall:
		return "stall"
	case Blackhole:
		return "blackhole"
	default:
		return "Mode(" + strconv.Itoa(int(m)) + ")"
	}
}

// ErrInvalidTarget is wrapped by the error New returns for a bad target.
var ErrInvalidTarget = errors.New("proxy: invalid target address")

// Stats are counters of a Link since it was created.
type Stats struct {
	// Accepted is the number of connections accepted by the listener,
	// including those refused because the link was blackholed.
	Accepted int64
	// Active is the number of connections currently open through the link
	// (including those held, not yet dialled, during a stall).
	Active int
	// BytesToTarget is the number of bytes written to the target
	// (client → server direction).
	BytesToTarget int64
	// BytesToClient is the number of bytes written to clients
	// (server → client direction).
	BytesToClient int64
	// BlackholeClosed is the number of open connections closed by Blackhole.
	BlackholeClosed int64
	// Refused is the number of new connections closed right after accept
	// because the link was blackholed.
	Refused int64
	// DialErrors is the number of failed dials to the target (the client
	// connection is closed when the dial fails).
	DialErrors int64
}

const (
	chunkSize  = 32 << 10 // bytes per read
	queueDepth = 64       // chunks buffered per direction per connection
)

var bufPool = sync.Pool{New: func() any {
	b := make([]byte, chunkSize)
	return &b
}}

// state is an immutable snapshot of a link's mode. Every change stores a new
// state and closes the old one's changed channel, waking every waiter.
type state struct {
	mode    Mode
	delay   time.Duration
	changed chan struct{}
}

// Link is one listener on 127.0.0.1 forwarding to one target. All methods
// are safe for concurrent use.
type Link struct {
	target string
	ln     net.Listener
	addr   string

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc

	state atomic.Pointer[state]

	mu     sync.Mutex // guards closed, conns, state changes
	closed bool
	conns  map[*conn]struct{}
	wg     sync.WaitGroup // accept loop and connection handlers

	accepted      atomic.Int64
	bytesToTarget atomic.Int64
	bytesToClient atomic.Int64
	blackholed    atomic.Int64
	refused       atomic.Int64
	dialErrors    atomic.Int64

	dialRetry atomic.Int64 // ns; see SetDialRetry
}

// New starts a Link listening on 127.0.0.1:0 that forwards to target
// ("host:port"). The target is not dialled until a client connects.
func New(target string) (*Link, error) {
	if err := validateTarget(target); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("proxy: listen on 127.0.0.1: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &Link{
		target: target,
		ln:     ln,
		addr:   ln.Addr().String(),
		ctx:    ctx,
		cancel: cancel,
		conns:  make(map[*conn]struct{}),
	}
	l.state.Store(&state{mode: Pass, changed: make(chan struct{})})
	l.wg.Add(1)
	go l.acceptLoop()
	return l, nil
}

func validateTarget(target string) error {
	if target == "" {
		return fmt.Errorf("%w: empty", ErrInvalidTarget)
	}
	host, port, err := net.SplitHostPort(target)
	if err != nil {
		return fmt.Errorf("%w %q: %v", ErrInvalidTarget, target, err)
	}
	if host == "" {
		return fmt.Errorf("%w %q: missing host", ErrInvalidTarget, target)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil || p == 0 {
		return fmt.Errorf("%w %q: port must be a number in 1-65535", ErrInvalidTarget, target)
	}
	return nil
}

// Addr is the listening address, "127.0.0.1:port". Clients dial this.
func (l *Link) Addr() string { return l.addr }

// Target is the address every connection is forwarded to.
func (l *Link) Target() string { return l.target }

// Mode is the current mode.
func (l *Link) Mode() Mode { return l.state.Load().mode }

// SetDelay switches to mode Delay: every chunk of bytes, in both directions,
// is forwarded d after it was read, order preserved. Negative d counts as 0.
// Bytes held by a stall are released (they are already older than d).
// New connections are dialled without delay.
func (l *Link) SetDelay(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.setLocked(Delay, max(d, 0))
}

// Stall stops forwarding in both directions. Bytes read from either side are
// held in order (and, once the buffers are full, left unread in the kernel);
// nothing is dropped. New connections are accepted but not dialled until the
// stall ends. Bytes forwarded before Stall cannot be recalled.
func (l *Link) Stall() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.setLocked(Stall, 0)
}

// Pass returns to normal forwarding: everything held is released in its
// original order, then bytes flow as they are read. After Blackhole, new
// connections are served again (closed ones stay closed).
func (l *Link) Pass() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.setLocked(Pass, 0)
}

// SetDialRetry makes a refused dial of the target be retried, every 20 ms, for up
// to d before the client's connection is closed (default 0: closed at once). A client
// that would itself retry a refused connect sees, through the proxy, a connection
// that opens and then closes; this keeps it waiting instead, for a target whose
// listener opens a moment late (a new leader's quorum port).
func (l *Link) SetDialRetry(d time.Duration) { l.dialRetry.Store(int64(max(d, 0))) }

// Blackhole closes every open connection through the link now (client and
// target side; bytes held for them are discarded with them) and closes new
// connections right after accept until Pass or SetDelay. A blackholed
// connection is never resumed.
func (l *Link) Blackhole() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.setLocked(Blackhole, 0)
	for c := range l.conns {
		if c.abort() {
			l.blackholed.Add(1)
		}
	}
}

func (l *Link) setLocked(m Mode, d time.Duration) {
	old := l.state.Load()
	if old.mode == m && old.delay == d {
		return
	}
	l.state.Store(&state{mode: m, delay: d, changed: make(chan struct{})})
	close(old.changed)
}

// Stats returns the link's counters.
func (l *Link) Stats() Stats {
	l.mu.Lock()
	active := len(l.conns)
	l.mu.Unlock()
	return Stats{
		Accepted:        l.accepted.Load(),
		Active:          active,
		BytesToTarget:   l.bytesToTarget.Load(),
		BytesToClient:   l.bytesToClient.Load(),
		BlackholeClosed: l.blackholed.Load(),
		Refused:         l.refused.Load(),
		DialErrors:      l.dialErrors.Load(),
	}
}

// Close stops the listener and closes every connection (held bytes are
// discarded), then waits for all of the link's goroutines to exit. It is safe
// to call more than once; later calls wait too and return nil.
func (l *Link) Close() error {
	l.mu.Lock()
	first := !l.closed
	if first {
		l.closed = true
		l.cancel()
		for c := range l.conns {
			c.abort()
		}
	}
	l.mu.Unlock()
	var err error
	if first {
		err = l.ln.Close()
	}
	l.wg.Wait()
	return err
}

func (l *Link) acceptLoop() {
	defer l.wg.Done()
	var backoff time.Duration
	for {
		nc, err := l.ln.Accept()
		if err != nil {
			if l.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			// Transient failure (e.g. out of file descriptors): back off.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
			case <-l.ctx.Done():
				t.Stop()
				return
			}
			continue
		}
		backoff = 0
		l.admit(nc)
	}
}

func (l *Link) admit(nc net.Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		_ = nc.Close()
		return
	}
	l.accepted.Add(1)
	if l.state.Load().mode == Blackhole {
		l.refused.Add(1)
		_ = nc.Close()
		return
	}
	ctx, cancel := context.WithCancel(l.ctx)
	c := &conn{link: l, client: nc, ctx: ctx, cancel: cancel}
	l.conns[c] = struct{}{}
	l.wg.Add(1)
	go c.run()
}

func (l *Link) forget(c *conn) {
	l.mu.Lock()
	delete(l.conns, c)
	l.mu.Unlock()
}

// await blocks until a chunk read at readAt may be forwarded under the
// link's mode: at once in Pass, at readAt+delay in Delay (if honorDelay),
// never while Stall or Blackhole. It returns false if ctx ends first.
// *timer is reused across calls by one goroutine.
func (l *Link) await(ctx context.Context, readAt time.Time, honorDelay bool, timer **time.Timer) bool {
	for {
		st := l.state.Load()
		switch st.mode {
		case Pass:
			return true
		case Delay:
			if !honorDelay {
				return true
			}
			wait := time.Until(readAt.Add(st.delay))
			if wait <= 0 {
				return true
			}
			if *timer == nil {
				*timer = time.NewTimer(wait)
			} else {
				(*timer).Reset(wait)
			}
			select {
			case <-(*timer).C:
			case <-st.changed:
			case <-ctx.Done():
				return false
			}
		default: // Stall, Blackhole (a blackholed conn's ctx is cancelled)
			select {
			case <-st.changed:
			case <-ctx.Done():
				return false
			}
		}
	}
}

// conn is one client connection through a link and its target connection.
type conn struct {
	link   *Link
	client net.Conn
	ctx    context.Context // cancelled by abort
	cancel context.CancelFunc

	mu      sync.Mutex
	server  net.Conn
	aborted bool
}

// chunk is a unit of the per-direction pipeline: data, or the read error
// (io.EOF for a half-close) that ended the direction.
type chunk struct {
	buf *[]byte
	n   int
	at  time.Time
	err error
}

// abort closes both sides and cancels the connection's context. It reports
// whether this call did it.
func (c *conn) abort() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.aborted {
		return false
	}
	c.aborted = true
	c.cancel()
	_ = c.client.Close()
	if c.server != nil {
		_ = c.server.Close()
	}
	return true
}

func (c *conn) setServer(sc net.Conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.aborted {
		_ = sc.Close()
		return false
	}
	c.server = sc
	return true
}

func (c *conn) run() {
	l := c.link
	defer l.wg.Done()
	defer l.forget(c)
	defer c.abort()

	// A new connection is held (not dialled) while the link is stalled.
	var timer *time.Timer
	if !l.await(c.ctx, time.Time{}, false, &timer) {
		return
	}
	var d net.Dialer
	retryUntil := time.Now().Add(time.Duration(l.dialRetry.Load()))
	sc, err := d.DialContext(c.ctx, "tcp", l.target)
	for err != nil && c.ctx.Err() == nil && time.Now().Before(retryUntil) {
		select {
		case <-c.ctx.Done():
		case <-time.After(20 * time.Millisecond):
			sc, err = d.DialContext(c.ctx, "tcp", l.target)
		}
	}
	if err != nil {
		if c.ctx.Err() == nil {
			l.dialErrors.Add(1)
		}
		return
	}
	if !c.setServer(sc) {
		return
	}

	up := make(chan chunk, queueDepth)   // client → target
	down := make(chan chunk, queueDepth) // target → client
	var readers, writers sync.WaitGroup
	readers.Go(func() { c.read(c.client, up) })
	readers.Go(func() { c.read(sc, down) })
	writers.Go(func() { c.write(sc, up, &l.bytesToTarget) })
	c.write(c.client, down, &l.bytesToClient)
	writers.Wait()
	// Both directions are finished (or the connection was aborted): close
	// both sides, which also unblocks any reader.
	c.abort()
	readers.Wait()
}

func (c *conn) push(q chan<- chunk, ch chunk) bool {
	select {
	case q <- ch:
		return true
	case <-c.ctx.Done():
		return false
	}
}

// read reads src into chunks until an error, which it queues last.
func (c *conn) read(src net.Conn, q chan<- chunk) {
	for {
		bp := bufPool.Get().(*[]byte)
		n, err := src.Read(*bp)
		if n > 0 {
			if !c.push(q, chunk{buf: bp, n: n, at: time.Now()}) {
				return
			}
		} else {
			bufPool.Put(bp)
		}
		if err != nil {
			c.push(q, chunk{err: err, at: time.Now()})
			return
		}
	}
}

// write forwards queued chunks to dst in order, as the link's mode allows.
// EOF becomes CloseWrite on dst; any other read error, or a write error,
// aborts the whole connection.
func (c *conn) write(dst net.Conn, q <-chan chunk, counter *atomic.Int64) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		var ch chunk
		select {
		case ch = <-q:
		case <-c.ctx.Done():
			return
		}
		if !c.link.await(c.ctx, ch.at, true, &timer) {
			return
		}
		if ch.err != nil {
			if errors.Is(ch.err, io.EOF) {
				if cw, ok := dst.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
					return
				}
			}
			c.abort()
			return
		}
		n, err := dst.Write((*ch.buf)[:ch.n])
		bufPool.Put(ch.buf)
		counter.Add(int64(n))
		if err != nil {
			c.abort()
			return
		}
	}
}
