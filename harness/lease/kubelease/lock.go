package kubelease

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/leaderelection"
	rl "k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"

	"github.com/fencecheck/fencecheck/harness"
)

// Locker is one harness client's lock client. Each Acquire runs a LeaderElector of its
// own, with an identity of its own (client-N-grant-M): every grant changes the holder,
// so client-go counts it as a transition, even when the same client takes the lock twice
// in a row (with one identity per client it would not, and two grants would share a
// token).
type Locker struct {
	b      *Backend
	id     int
	log    logr.Logger
	leases *coordclient.CoordinationV1Client
	http   *http.Client
	// namespace and lease name the Lease.
	namespace, lease string

	mu     sync.Mutex
	grants int
	live   map[*Lease]struct{} // electors still running
	closed bool
}

var _ harness.Locker = (*Locker)(nil)

// Acquire implements harness.Locker: it starts a LeaderElector on the Lease and returns
// once client-go calls OnStartedLeading. When ctx ends first the elector is stopped; the
// error wraps harness.ErrNoEffect unless a write naming this grant's identity was sent
// (then the lock may have been taken, and was handed back by ReleaseOnCancel).
func (l *Locker) Acquire(ctx context.Context) (harness.Lease, error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, fmt.Errorf("%w: kube-lease: locker closed", harness.ErrNoEffect)
	}
	l.grants++
	identity := fmt.Sprintf("client-%d-grant-%d", l.id, l.grants)
	l.mu.Unlock()

	t := l.b.cfg.Timing
	le := &Lease{
		l: l, identity: identity, ttl: t.LeaseDuration,
		lock:    newRecordingLock(l.leases, l.namespace, l.lease, identity),
		granted: make(chan struct{}), lost: make(chan struct{}), done: make(chan struct{}),
	}
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          le.lock,
		LeaseDuration: t.LeaseDuration, RenewDeadline: t.RenewDeadline, RetryPeriod: t.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            identity,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) { le.grantOnce.Do(func() { close(le.granted) }) },
			OnStoppedLeading: func() { le.lostOnce.Do(func() { close(le.lost) }) },
		},
	})
	if err != nil {
		return nil, fmt.Errorf("%w: kube-lease: %w", harness.ErrNoEffect, err)
	}
	runCtx, cancel := context.WithCancel(klog.NewContext(context.Background(), l.log.WithValues("identity", identity)))
	le.cancel = cancel
	if !l.track(le) {
		cancel()
		return nil, fmt.Errorf("%w: kube-lease: locker closed", harness.ErrNoEffect)
	}
	go func() {
		defer l.untrack(le)
		defer close(le.done)
		elector.Run(runCtx)
	}()

	select {
	case <-le.granted:
		g, ok := le.lock.grant()
		if !ok {
			// OnStartedLeading comes only after a confirmed write naming us.
			le.stop()
			return nil, errors.New("kube-lease: client-go started leading without a confirmed write")
		}
		tok, err := l.b.cfg.Token.of(g)
		if err != nil {
			le.stop()
			return nil, err
		}
		le.token = tok
		return le, nil
	case <-ctx.Done():
		le.stop()
		if le.lock.attempted() {
			return nil, fmt.Errorf("kube-lease: acquire: %w (a takeover write had been sent; ReleaseOnCancel handed back what it may have won)", ctx.Err())
		}
		return nil, fmt.Errorf("%w: kube-lease: lock held by another until %w", harness.ErrNoEffect, ctx.Err())
	}
}

func (l *Locker) track(le *Lease) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	if l.live == nil {
		l.live = map[*Lease]struct{}{}
	}
	l.live[le] = struct{}{}
	return true
}

func (l *Locker) untrack(le *Lease) {
	l.mu.Lock()
	delete(l.live, le)
	l.mu.Unlock()
}

// Close implements harness.Locker: stops every elector still running (client-go's
// ReleaseOnCancel hands a held Lease back; their Lost channels close) and closes the
// connections. Safe to call twice.
func (l *Locker) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	live := make([]*Lease, 0, len(l.live))
	for le := range l.live {
		live = append(live, le)
	}
	l.mu.Unlock()
	for _, le := range live {
		le.stop()
	}
	l.http.CloseIdleConnections()
	return nil
}

// of is the token of a grant.
func (k TokenKind) of(g grant) (int64, error) {
	if k == TokenResourceVersion {
		v, err := strconv.ParseInt(g.resourceVersion, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("kube-lease: resourceVersion %q is not a number (it is opaque by the API's contract): %w", g.resourceVersion, err)
		}
		return v, nil
	}
	return int64(g.transitions), nil
}

// Lease is one grant: a running LeaderElector that leads.
type Lease struct {
	l        *Locker
	identity string
	ttl      time.Duration
	token    int64
	lock     *recordingLock
	cancel   context.CancelFunc

	granted, lost, done chan struct{}
	grantOnce, lostOnce sync.Once

	mu       sync.Mutex
	released bool
}

var (
	_ harness.Lease    = (*Lease)(nil)
	_ harness.Expiring = (*Lease)(nil)
)

// Token implements harness.Lease.
func (le *Lease) Token() int64 { return le.token }

// TTL implements harness.Lease: the LeaseDuration.
func (le *Lease) TTL() time.Duration { return le.ttl }

// Lost implements harness.Lease: closed when client-go calls OnStoppedLeading (no
// renewal succeeded for RenewDeadline, then the attempt to release ended), or when the
// lease is released or its locker closed.
func (le *Lease) Lost() <-chan struct{} { return le.lost }

// ValidUntil implements harness.Expiring: the start of the last confirmed write naming
// this grant plus LeaseDuration. A candidate waits LeaseDuration from when it saw that
// write, which is later.
func (le *Lease) ValidUntil() time.Time { return le.lock.lastWrite().Add(le.ttl) }

// stop cancels the elector and waits for it to end (its release attempt is bounded by
// RenewDeadline).
func (le *Lease) stop() {
	le.cancel()
	<-le.done
}

// Release implements harness.Lease: cancel the elector, whose ReleaseOnCancel writes
// the Lease with no holder. A lease client-go had already stopped leading gives an error
// wrapping harness.ErrNoEffect; so does a second Release. An unconfirmed release is an
// unknown outcome.
func (le *Lease) Release(ctx context.Context) error {
	le.mu.Lock()
	if le.released {
		le.mu.Unlock()
		return fmt.Errorf("%w: kube-lease: lease already released", harness.ErrNoEffect)
	}
	le.released = true
	le.mu.Unlock()
	select {
	case <-le.lost:
		return fmt.Errorf("%w: kube-lease: client-go had stopped leading before the release (no renewal succeeded within RenewDeadline)", harness.ErrNoEffect)
	default:
	}
	le.cancel()
	select {
	case <-le.done:
	case <-ctx.Done():
		return fmt.Errorf("kube-lease: release: %w", ctx.Err())
	}
	if le.lock.releasedOK() {
		return nil
	}
	return errors.New("kube-lease: release: client-go's write of an empty holder was not confirmed")
}

// grant is what the write that won the lock wrote.
type grant struct {
	transitions     int
	resourceVersion string
}

// recordingLock is client-go's LeaseLock, watched: it notes which of its writes were
// confirmed, and the resourceVersion each returned, without changing what it does.
type recordingLock struct {
	*rl.LeaseLock
	seen *versionSeen

	mu       sync.Mutex
	sent     bool // a write naming us was sent
	won      *grant
	last     time.Time // start of the last confirmed write naming us
	released bool      // a write with no holder was confirmed
}

func newRecordingLock(c coordclient.LeasesGetter, namespace, name, identity string) *recordingLock {
	seen := &versionSeen{LeasesGetter: c}
	return &recordingLock{
		LeaseLock: &rl.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: namespace, Name: name},
			Client:     seen,
			LockConfig: rl.ResourceLockConfig{Identity: identity},
		},
		seen: seen,
	}
}

// Create implements rl.Interface.
func (r *recordingLock) Create(ctx context.Context, ler rl.LeaderElectionRecord) error {
	return r.write(ctx, ler, r.LeaseLock.Create)
}

// Update implements rl.Interface.
func (r *recordingLock) Update(ctx context.Context, ler rl.LeaderElectionRecord) error {
	return r.write(ctx, ler, r.LeaseLock.Update)
}

func (r *recordingLock) write(ctx context.Context, ler rl.LeaderElectionRecord, f func(context.Context, rl.LeaderElectionRecord) error) error {
	start := time.Now()
	ours := ler.HolderIdentity == r.Identity()
	if ours {
		r.mu.Lock()
		r.sent = true
		r.mu.Unlock()
	}
	if err := f(ctx, ler); err != nil {
		return err
	}
	rv := r.seen.last()
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case ours && r.won == nil:
		r.won, r.last = &grant{transitions: ler.LeaderTransitions, resourceVersion: rv}, start
	case ours:
		r.last = start
	case ler.HolderIdentity == "":
		r.released = true
	}
	return nil
}

func (r *recordingLock) grant() (grant, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.won == nil {
		return grant{}, false
	}
	return *r.won, true
}

func (r *recordingLock) attempted() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sent
}

func (r *recordingLock) lastWrite() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

func (r *recordingLock) releasedOK() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.released
}

// versionSeen passes the LeaseLock's requests through and keeps the resourceVersion of
// the Lease its last Create or Update returned.
type versionSeen struct {
	coordclient.LeasesGetter
	mu sync.Mutex
	rv string
}

func (v *versionSeen) Leases(ns string) coordclient.LeaseInterface {
	return versionSeenLeases{LeaseInterface: v.LeasesGetter.Leases(ns), v: v}
}

func (v *versionSeen) last() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.rv
}

func (v *versionSeen) note(l *coordinationv1.Lease, err error) (*coordinationv1.Lease, error) {
	if err == nil && l != nil {
		v.mu.Lock()
		v.rv = l.ResourceVersion
		v.mu.Unlock()
	}
	return l, err
}

type versionSeenLeases struct {
	coordclient.LeaseInterface
	v *versionSeen
}

func (s versionSeenLeases) Create(ctx context.Context, l *coordinationv1.Lease, o metav1.CreateOptions) (*coordinationv1.Lease, error) {
	return s.v.note(s.LeaseInterface.Create(ctx, l, o))
}

func (s versionSeenLeases) Update(ctx context.Context, l *coordinationv1.Lease, o metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	return s.v.note(s.LeaseInterface.Update(ctx, l, o))
}
