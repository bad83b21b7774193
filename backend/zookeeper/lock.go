package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/fencecheck/fencecheck/backend/lease"
	"github.com/fencecheck/fencecheck/harness"
)

// childPrefix names the lock's children: childPrefix + ZooKeeper's 10-digit sequence.
const childPrefix = "lock-"

// Locker is one harness client's lock client. Every Acquire opens a session of its own
// (a new connection), so each grant lives and dies with exactly one session.
type Locker struct {
	cfg   Config
	addrs []string
	log   *slog.Logger

	mu       sync.Mutex
	sessions map[*session]struct{}
	closed   bool
}

var _ harness.Locker = (*Locker)(nil)

// Close implements harness.Locker: it closes every session still open, which deletes
// their ephemeral lock znodes (or lets them expire, if the server is out of reach).
// Safe to call twice.
func (l *Locker) Close() error {
	l.mu.Lock()
	l.closed = true
	ss := make([]*session, 0, len(l.sessions))
	for s := range l.sessions {
		ss = append(ss, s)
	}
	l.sessions = map[*session]struct{}{}
	l.mu.Unlock()
	for _, s := range ss {
		s.close()
	}
	return nil
}

// session is one ZooKeeper session and the state the lock derives from it.
type session struct {
	conn *zk.Conn
	ttl  time.Duration

	mu          sync.Mutex
	netConns    []net.Conn
	closing     bool          // close has begun: dial no more
	granted     time.Duration // negotiated session timeout, once known
	grantedCh   chan struct{} // closed when granted is first known
	grantOnce   sync.Once
	releasing   atomic.Bool   // our own Release deletes the znode: not a loss
	me          string        // our lock znode, once created (only acquire writes it)
	established chan struct{} // closed at the first StateHasSession
	estOnce     sync.Once
	lost        chan struct{} // closed when the session is gone (or given up for gone)
	lostOnce    sync.Once
	lostWhy     string
	discTimer   *time.Timer
	closeOnce   sync.Once
	done        chan struct{} // closed when the client's goroutines have ended
	// inflight counts requests still running in call's goroutines (a caller may have
	// returned early): go-zookeeper writes a request's response while a Close makes the
	// request return, so close waits for them first (see close).
	inflight atomic.Int32
}

// zkLogger receives go-zookeeper's log lines: the negotiated session timeout is only
// ever reported there ("authenticated: id=…, timeout=…").
type zkLogger struct {
	s   *session
	log *slog.Logger
}

func (z zkLogger) Printf(format string, args ...any) {
	if strings.HasPrefix(format, "authenticated: id=%d, timeout=%d") && len(args) == 2 {
		if ms, ok := args[1].(int32); ok {
			z.s.mu.Lock()
			z.s.granted = time.Duration(ms) * time.Millisecond
			z.s.mu.Unlock()
			z.s.grantOnce.Do(func() { close(z.s.grantedCh) })
		}
	}
	z.log.Debug("zk client: " + fmt.Sprintf(format, args...))
}

// setLost closes lost once, remembering why.
func (s *session) setLost(why string) {
	s.lostOnce.Do(func() {
		s.mu.Lock()
		s.lostWhy = why
		s.mu.Unlock()
		close(s.lost)
	})
}

// onEvent follows the connection state. The lease counts as lost when the server says
// the session expired, or when the client has been disconnected for a whole session
// timeout: by then the server has surely expired it (its clock started before ours, at
// the last message it heard), even if no server can be reached to say so. A shorter
// disconnection is not a loss: the session may resume on any server of the ensemble.
func (s *session) onEvent(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	switch ev.State {
	case zk.StateHasSession:
		s.estOnce.Do(func() { close(s.established) })
		s.mu.Lock()
		if s.discTimer != nil {
			s.discTimer.Stop()
			s.discTimer = nil
		}
		s.mu.Unlock()
	case zk.StateExpired:
		s.setLost("the server expired the session")
	case zk.StateDisconnected, zk.StateConnecting:
		s.mu.Lock()
		select {
		case <-s.established:
			if s.discTimer == nil {
				ttl := s.ttl
				s.discTimer = time.AfterFunc(ttl, func() {
					s.setLost(fmt.Sprintf("disconnected from every server for a session timeout (%v)", ttl))
				})
			}
		default:
		}
		s.mu.Unlock()
	}
}

// dial dials like go-zookeeper's default dialer and keeps the connection, so close can
// cut it at once instead of waiting out a stalled link's read timeout.
func (s *session) dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout(network, addr, timeout)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		_ = c.Close() // the client would otherwise wait out its handshake timeout on it
		return nil, net.ErrClosed
	}
	s.netConns = append(s.netConns, c)
	return c, nil
}

// close ends the session (the server deletes its ephemeral znodes when the close
// request reaches it) and waits for the client's goroutines. Safe to call twice.
func (s *session) close() {
	s.closeOnce.Do(func() {
		// A request still in flight ends with its answer, or with the library's own
		// error when the connection drops (its read deadline is 2/3 of the session
		// timeout). Closing first would let the request return while the library's
		// receiver still writes its response: a data race inside go-zookeeper
		// (Conn.request's own comment), so wait for them, up to a session timeout.
		deadline := time.Now().Add(max(s.ttl, time.Second))
		for s.inflight.Load() > 0 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		// Close sends a close-session request and waits up to 1 s for its answer.
		s.conn.Close()
		s.mu.Lock()
		s.closing = true
		for _, c := range s.netConns {
			_ = c.Close()
		}
		if s.discTimer != nil {
			s.discTimer.Stop()
		}
		s.mu.Unlock()
		s.setLost("the session was closed")
	})
	<-s.done
}

// open starts a session through addrs and waits until the server granted it, checking
// the granted timeout. Its errors mean no session exists (the caller wraps
// harness.ErrNoEffect).
func (l *Locker) open(ctx context.Context) (*session, error) {
	s := &session{ttl: l.cfg.TTL, established: make(chan struct{}), grantedCh: make(chan struct{}), lost: make(chan struct{}), done: make(chan struct{})}
	conn, events, err := zk.Connect(l.addrs, l.cfg.TTL,
		zk.WithLogger(zkLogger{s: s, log: l.log}), zk.WithLogInfo(true),
		zk.WithEventCallback(s.onEvent), zk.WithDialer(s.dial))
	if err != nil {
		return nil, fmt.Errorf("connect %v: %w", l.addrs, err)
	}
	s.conn = conn
	go func() {
		for range events { // closed when the client's loop has ended
		}
		close(s.done)
	}()
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		s.close()
		return nil, errors.New("locker closed")
	}
	l.sessions[s] = struct{}{}
	l.mu.Unlock()
	// The client logs the granted timeout right after it reports the session.
	select {
	case <-s.grantedCh:
	case <-ctx.Done():
		l.drop(s)
		return nil, fmt.Errorf("no session from %v: %w", l.addrs, ctx.Err())
	}
	s.mu.Lock()
	granted := s.granted
	s.mu.Unlock()
	if granted != l.cfg.TTL {
		l.drop(s)
		return nil, fmt.Errorf("asked for a %v session timeout, the server granted %v (it bounds timeouts to 2..20 ticks of its tickTime): refusing a TTL the server does not keep",
			l.cfg.TTL, granted)
	}
	return s, nil
}

// drop closes a session and forgets it.
func (l *Locker) drop(s *session) {
	l.mu.Lock()
	delete(l.sessions, s)
	l.mu.Unlock()
	s.close()
}

// call runs a blocking ZooKeeper request, returning early when ctx ends or the session
// is lost (the request itself ends when the session closes).
func call[T any](ctx context.Context, s *session, f func() (T, error)) (T, error) {
	return callUntil(ctx, s.lost, s, f)
}

// callUntil is call, returning early when stop (rather than the session's loss) closes.
func callUntil[T any](ctx context.Context, stop <-chan struct{}, s *session, f func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	s.inflight.Add(1)
	go func() {
		defer s.inflight.Add(-1)
		v, err := f()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	case <-stop:
		var zero T
		return zero, fmt.Errorf("session lost: %s", s.why())
	}
}

func (s *session) why() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lostWhy
}

// ensureParent creates the lock's ancestors (persistent) and the lock path itself as a
// container node, as Curator does; a node that already exists is fine.
func ensureParent(ctx context.Context, s *session, lockPath string) error {
	parts := strings.Split(strings.TrimPrefix(lockPath, "/"), "/")
	for i := range parts {
		p := "/" + strings.Join(parts[:i+1], "/")
		last := i == len(parts)-1
		_, err := call(ctx, s, func() (string, error) {
			if last {
				return s.conn.CreateContainer(p, nil, zk.FlagContainer, zk.WorldACL(zk.PermAll))
			}
			return s.conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll))
		})
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("create %s: %w", p, err)
		}
	}
	return nil
}

// Acquire implements harness.Locker with the classic recipe: create an ephemeral
// sequential child of the lock path; the lowest sequence holds the lock; every other
// child watches the one just below it and looks again when it goes away. An error
// wraps harness.ErrNoEffect when no lock znode of ours can remain (the session was
// closed or never made one).
func (l *Locker) Acquire(ctx context.Context) (harness.Lease, error) {
	s, err := l.open(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: zookeeper: %w", harness.ErrNoEffect, err)
	}
	lease, err := l.acquire(ctx, s)
	if err != nil && ctx.Err() != nil && s.me != "" {
		// Given up while waiting: delete our child ourselves (with a bound of our own,
		// the caller's context is over). Once it is gone it can hold nothing, and we
		// never acted on it, so the attempt had no effect.
		dctx, cancel := context.WithTimeout(context.Background(), max(time.Second, l.cfg.TTL))
		_, derr := call(dctx, s, func() (struct{}, error) { return struct{}{}, s.conn.Delete(s.me, -1) })
		cancel()
		if derr == nil || errors.Is(derr, zk.ErrNoNode) {
			err = fmt.Errorf("%w: %w", harness.ErrNoEffect, err)
		}
	}
	if err != nil {
		// Closing the session deletes our child if the server hears it, and the session
		// expires (deleting it) if not: either way the znode cannot hold the lock later.
		// A grant may still have happened unseen, so the error is not "no effect"
		// unless no child was ever created.
		l.drop(s)
		return nil, err
	}
	return lease, nil
}

// errNoChild marks an acquire that failed before a lock znode could exist.
var errNoChild = errors.New("no lock znode created")

func (l *Locker) acquire(ctx context.Context, s *session) (*Lease, error) {
	parent := l.cfg.LockPath
	var me string
	for me == "" {
		if err := ensureParent(ctx, s, parent); err != nil {
			return nil, fmt.Errorf("%w: zookeeper: %w: %w", harness.ErrNoEffect, errNoChild, err)
		}
		p, err := call(ctx, s, func() (string, error) {
			return s.conn.Create(path.Join(parent, childPrefix), nil, zk.FlagEphemeralSequential, zk.WorldACL(zk.PermAll))
		})
		switch {
		case errors.Is(err, zk.ErrNoNode):
			continue // the empty container was deleted under us: make it again
		case err != nil:
			// The create may have been applied with its answer lost.
			return nil, fmt.Errorf("zookeeper: create lock znode: %w", err)
		}
		me = p
		s.me = p
	}
	seq, err := sequenceOf(path.Base(me))
	if err != nil {
		return nil, fmt.Errorf("zookeeper: %w", err)
	}
	for {
		children, err := call(ctx, s, func() ([]string, error) {
			c, _, err := s.conn.Children(parent)
			return c, err
		})
		if err != nil {
			return nil, fmt.Errorf("zookeeper: list %s: %w", parent, err)
		}
		pred, mine := predecessor(children, path.Base(me))
		if !mine {
			return nil, fmt.Errorf("zookeeper: lock znode %s vanished while waiting (%s)", me, s.whyOrAlive())
		}
		if pred == "" {
			break // lowest: ours
		}
		type watch struct {
			ok bool
			ch <-chan zk.Event
		}
		w, err := call(ctx, s, func() (watch, error) {
			ok, _, ch, err := s.conn.ExistsW(path.Join(parent, pred))
			return watch{ok, ch}, err
		})
		if err != nil {
			return nil, fmt.Errorf("zookeeper: watch %s: %w", pred, err)
		}
		if !w.ok {
			continue
		}
		select {
		case <-w.ch: // deleted (or the watch ended with the session): look again
		case <-ctx.Done():
			return nil, fmt.Errorf("zookeeper: waiting for %s: %w", pred, ctx.Err())
		case <-s.lost:
			return nil, fmt.Errorf("zookeeper: waiting for %s: session lost: %s", pred, s.why())
		}
	}
	type exists struct {
		ok bool
		st *zk.Stat
		ch <-chan zk.Event
	}
	// Read our znode's czxid and watch it: if anyone deletes it, the lock is gone.
	ex, err := call(ctx, s, func() (exists, error) {
		ok, st, ch, err := s.conn.ExistsW(me)
		return exists{ok, st, ch}, err
	})
	if err != nil {
		return nil, fmt.Errorf("zookeeper: stat %s: %w", me, err)
	}
	if !ex.ok {
		return nil, fmt.Errorf("zookeeper: lock znode %s gone right after it was granted (%s)", me, s.whyOrAlive())
	}
	go func() {
		select {
		case ev, ok := <-ex.ch:
			if ok && ev.Type == zk.EventNodeDeleted {
				why := "the lock znode " + me + " was deleted"
				if s.releasing.Load() {
					why = "the lease was released"
				}
				s.setLost(why)
			}
		case <-s.lost:
		}
	}()
	token := ex.st.Czxid
	if l.cfg.Token == TokenSequence {
		token = seq + 1 // the first child is 0, and a token of 0 means "none" to the harness
	}
	// The TTL is the session timeout the server negotiated (open refuses any other).
	s.mu.Lock()
	granted := s.granted
	s.mu.Unlock()
	return &Lease{Grant: lease.NewGrant(token, granted, s.lost), l: l, s: s, path: me, czxid: ex.st.Czxid, seq: seq}, nil
}

func (s *session) whyOrAlive() string {
	select {
	case <-s.lost:
		return "session lost: " + s.why()
	default:
		return "session still alive"
	}
}

// sequenceOf parses a child name's sequence suffix.
func sequenceOf(name string) (int64, error) {
	digits, ok := strings.CutPrefix(name, childPrefix)
	if !ok {
		return 0, fmt.Errorf("lock child %q does not start with %q", name, childPrefix)
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("lock child %q: bad sequence: %w", name, err)
	}
	return n, nil
}

// predecessor returns the lock child just below me in sequence order ("" if me is the
// lowest), and whether me is among children at all. Children with other names are
// ignored.
func predecessor(children []string, me string) (string, bool) {
	mySeq, err := sequenceOf(me)
	if err != nil {
		return "", false
	}
	type child struct {
		name string
		seq  int64
	}
	var cs []child
	found := false
	for _, c := range children {
		n, err := sequenceOf(c)
		if err != nil {
			continue
		}
		if c == me {
			found = true
		}
		cs = append(cs, child{c, n})
	}
	slices.SortFunc(cs, func(a, b child) int { return int(min(max(a.seq-b.seq, -1), 1)) })
	pred := ""
	for _, c := range cs {
		if c.seq >= mySeq {
			break
		}
		pred = c.name
	}
	return pred, found
}

// Lease is a granted ZooKeeper lock: an ephemeral sequential znode that is the lowest
// child of the lock path, alive as long as its session. Its TTL is the session timeout
// the server granted; Lost closes when the server expired the session, the client was
// disconnected from every server for a session timeout, the lock znode was deleted, or
// the lease was released.
type Lease struct {
	lease.Grant
	l        *Locker
	s        *session
	path     string
	czxid    int64
	seq      int64
	released lease.Released
}

var _ harness.Lease = (*Lease)(nil)

// LossReason implements harness.LossReasoner: why the session or the lock was lost.
func (le *Lease) LossReason() string { return le.s.why() }

// Path is the lock znode; Czxid and Sequence its two candidate tokens.
func (le *Lease) Path() string    { return le.path }
func (le *Lease) Czxid() int64    { return le.czxid }
func (le *Lease) Sequence() int64 { return le.seq }

// Release implements harness.Lease: delete the lock znode and close the session. A
// lease already lost, a znode already gone, or a second Release wraps
// harness.ErrNoEffect.
func (le *Lease) Release(ctx context.Context) error {
	if err := le.released.First("zookeeper"); err != nil {
		return err
	}
	defer le.l.drop(le.s)
	select {
	case <-le.s.lost:
		return fmt.Errorf("%w: zookeeper: lease already lost (%s)", harness.ErrNoEffect, le.s.why())
	default:
	}
	le.s.releasing.Store(true)
	// Our own delete fires our own watch; the delete's answer is what counts.
	_, err := callUntil(ctx, nil, le.s, func() (struct{}, error) { return struct{}{}, le.s.conn.Delete(le.path, -1) })
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return fmt.Errorf("%w: zookeeper: lock znode %s was already gone", harness.ErrNoEffect, le.path)
	case err != nil:
		// Closing the session deletes the znode if the server hears it; else it expires.
		return fmt.Errorf("zookeeper: release %s: %w", le.path, err)
	}
	return nil
}
