package etcd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/fencecheck/fencecheck/backend/lease"
	"github.com/fencecheck/fencecheck/harness"
)

// TokenSource chooses which revision a Lease hands out as its fencing token.
type TokenSource string

const (
	// TokenCreateRevision is the lock key's CreateRevision (the default).
	TokenCreateRevision TokenSource = "create-revision"
	// TokenHeaderRevision is the store revision in the header of the response that
	// granted the lock.
	TokenHeaderRevision TokenSource = "header-revision"
)

// DefaultLockKey is the mutex prefix when Config.LockKey is empty.
const DefaultLockKey = "/fencecheck/lock"

// Config configures the etcd backend.
type Config struct {
	// Endpoints are the etcd servers' client addresses (host:port).
	Endpoints []string
	// TTL is the session lease's TTL: whole seconds, at least 1s (see Validate).
	TTL time.Duration
	// Token is the token source (default TokenCreateRevision).
	Token TokenSource
	// LockKey is the concurrency.Mutex prefix (default Prefix+"lock", or DefaultLockKey
	// without a Prefix).
	LockKey string
	// Prefix, if set, is the run's own key prefix (RunPrefix(run id)): the lock lives
	// under it, and Close deletes every key under it (the etcd-txn resource's too) and
	// revokes every lease the backend's clients were granted and did not revoke, so a
	// run leaves nothing behind in a cluster it does not own.
	Prefix string
	// DialTimeout bounds connecting to the servers (default 2s).
	DialTimeout time.Duration
	// KeepAlive is how often each client pings its connection; a connection whose ping
	// goes unanswered for KeepAlive is dropped and the client moves to another member.
	// Default 5s, etcd's default minimum for clients; embedded clusters allow (and use)
	// EmbeddedKeepAlive.
	KeepAlive time.Duration
}

// EmbeddedKeepAlive is the client keep-alive used against embedded clusters, whose
// members accept pings this often.
const EmbeddedKeepAlive = time.Second

func (c Config) withDefaults() Config {
	if c.Token == "" {
		c.Token = TokenCreateRevision
	}
	if c.LockKey == "" {
		c.LockKey = DefaultLockKey
		if c.Prefix != "" {
			c.LockKey = c.Prefix + "lock"
		}
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = 2 * time.Second
	}
	return c
}

// Validate checks the configuration (after defaults).
//
// The TTL must be whole seconds and at least 1s because etcd grants leases in whole
// seconds (a 1.5s TTL would silently become 1s or 2s) and raises any TTL below
// ceil(1.5 × election timeout) to that minimum (1s with the embedded cluster's 100ms
// election timeout); a TTL the server would change makes every timing in a run wrong.
func (c Config) Validate() error {
	c = c.withDefaults()
	if len(c.Endpoints) == 0 {
		return errors.New("etcd: at least one endpoint is required")
	}
	for _, ep := range c.Endpoints {
		host, port, err := net.SplitHostPort(ep)
		if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 1 || n > 65535 || host == "" {
			return fmt.Errorf("etcd: endpoint %q is not host:port", ep)
		}
	}
	if err := validateTTL(c.TTL); err != nil {
		return err
	}
	if err := validatePrefix(c.Prefix); err != nil {
		return err
	}
	if c.Token != TokenCreateRevision && c.Token != TokenHeaderRevision {
		return fmt.Errorf("etcd: token source must be %q or %q, got %q", TokenCreateRevision, TokenHeaderRevision, c.Token)
	}
	if c.DialTimeout < 0 {
		return fmt.Errorf("etcd: DialTimeout must not be negative, got %v", c.DialTimeout)
	}
	return nil
}

func validateTTL(ttl time.Duration) error {
	if ttl < time.Second {
		return fmt.Errorf("etcd: TTL %v is below 1s: etcd leases are granted in whole seconds, "+
			"and the server raises any TTL below ceil(1.5 × election timeout) (1s at a 100ms election timeout) to that minimum", ttl)
	}
	if ttl%time.Second != 0 {
		return fmt.Errorf("etcd: TTL %v is not a whole number of seconds: etcd leases are granted in whole seconds", ttl)
	}
	return nil
}

// Backend is the "etcd" lock backend for etcd servers it does not own (see
// StartBackend for one that starts its own cluster).
type Backend struct {
	cfg    Config
	leases *leaseBook

	closeOnce sync.Once
	closeErr  error
}

var _ harness.Backend = (*Backend)(nil)

// New returns a backend for the etcd servers at cfg.Endpoints, after checking that at
// least one of them answers within the dial timeout (or ctx) and that it grants a
// lease of exactly cfg.TTL (a *TTLError if it grants another: every timing of a run
// derives from the TTL).
func New(ctx context.Context, cfg Config) (*Backend, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	cfg.Endpoints = append([]string(nil), cfg.Endpoints...)
	cli, err := DialKeepAlive(ctx, cfg.Endpoints, cfg.DialTimeout, cfg.KeepAlive)
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	if err := probeTTL(ctx, cli, cfg.TTL, probeTimeout); err != nil {
		return nil, err
	}
	return &Backend{cfg: cfg, leases: newLeaseBook()}, nil
}

// Name implements harness.Backend.
func (b *Backend) Name() string { return "etcd" }

// Endpoints implements harness.Backend: cfg.Endpoints.
func (b *Backend) Endpoints() []string { return append([]string(nil), b.cfg.Endpoints...) }

// Config returns the backend's configuration, defaults applied.
func (b *Backend) Config() Config { return b.cfg }

// KeyPrefix is the run's own key prefix ("" without one): a resource in the same
// cluster (etcd-txn) keeps its data under it, so the backend's Close removes it too.
func (b *Backend) KeyPrefix() string { return b.cfg.Prefix }

// Close implements harness.Backend: the backend owns no server, so it only tidies up
// after its clients: it revokes the leases they left (a paused or closed client's) and,
// with a Prefix, deletes every key under it. Safe to call twice.
func (b *Backend) Close() error {
	b.closeOnce.Do(func() { b.closeErr = b.cleanup() })
	return b.closeErr
}

// lockerDialCeiling bounds a lock client's first answer from servers that Start reached.
const lockerDialCeiling = 30 * time.Second

// NewLocker implements harness.Backend: a client dialling only addrs.
func (b *Backend) NewLocker(ctx context.Context, _ int, addrs []string) (harness.Locker, error) {
	if len(addrs) != len(b.cfg.Endpoints) {
		return nil, fmt.Errorf("%w: etcd: want %d addresses (one per endpoint), got %d", harness.ErrNoEffect, len(b.cfg.Endpoints), len(addrs))
	}
	// The servers answered Start already: a client's first answer waits out a loaded
	// machine (a client host, a fresh process, took over 2 s beside a CI run).
	cli, err := DialKeepAlive(ctx, addrs, max(b.cfg.DialTimeout, lockerDialCeiling), b.cfg.KeepAlive)
	if err != nil {
		return nil, err
	}
	return &Locker{cfg: b.cfg, cli: cli, leases: b.leases}, nil
}

// Dial returns an etcd client that talks only to addrs: no endpoint auto-sync (the
// client never learns the members' own URLs, so it cannot bypass a proxy), a no-op
// logger, and the dial timeout. clientv3 connects lazily, so Dial proves that at least
// one address answers with a serializable read bounded by timeout; when none does the
// error wraps harness.ErrNoEffect (dialling changes nothing on the server).
func Dial(ctx context.Context, addrs []string, timeout time.Duration) (*clientv3.Client, error) {
	return DialKeepAlive(ctx, addrs, timeout, 0)
}

// DialKeepAlive is Dial with a gRPC keep-alive period (0: 5s).
func DialKeepAlive(ctx context.Context, addrs []string, timeout, keepAlive time.Duration) (*clientv3.Client, error) {
	if keepAlive <= 0 {
		keepAlive = 5 * time.Second
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("%w: etcd: no address to dial", harness.ErrNoEffect)
	}
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:        addrs,
		AutoSyncInterval: 0,
		DialTimeout:      timeout,
		// Without keep-alives a member behind a stalled link looks merely slow and the
		// client waits on it forever; with them it is dropped and another member is used.
		DialKeepAliveTime:    keepAlive,
		DialKeepAliveTimeout: keepAlive,
		PermitWithoutStream:  true,
		Logger:               zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("%w: etcd: client for %v: %w", harness.ErrNoEffect, addrs, err)
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if _, err := cli.Get(pctx, "/fencecheck/probe", clientv3.WithSerializable(), clientv3.WithCountOnly()); err != nil {
		_ = cli.Close()
		return nil, fmt.Errorf("%w: etcd: no server at %v answered within %v: %w", harness.ErrNoEffect, addrs, timeout, err)
	}
	return cli, nil
}

// Locker is one harness client's lock client. Every Acquire opens a new session (a new
// lease), which keeps each grant independent and simple to reason about.
type Locker struct {
	cfg       Config
	cli       *clientv3.Client
	leases    *leaseBook
	closeOnce sync.Once
	closeErr  error
}

var _ harness.Locker = (*Locker)(nil)

// Client returns the locker's etcd client.
func (l *Locker) Client() *clientv3.Client { return l.cli }

// Close implements harness.Locker: it closes the client, which ends the keep-alives of
// every lease still held (they expire after their TTL; their Lost channels close).
// Safe to call twice.
func (l *Locker) Close() error {
	l.closeOnce.Do(func() {
		err := l.cli.Close()
		if err != nil && !errors.Is(err, context.Canceled) {
			l.closeErr = err
		}
	})
	return l.closeErr
}

// Acquire implements harness.Locker: grant a lease of cfg.TTL, start its keep-alive
// session, and concurrency.Mutex.Lock the lock key, blocking until granted or ctx ends.
// An error wraps harness.ErrNoEffect when the lock was definitely not taken (or was
// given back: the lease was revoked after a failed Lock).
func (l *Locker) Acquire(ctx context.Context) (harness.Lease, error) {
	// Booked before it is asked for: a grant whose answer is lost may still exist.
	id := newLeaseID()
	l.leases.add(id)
	granted, err := grant(ctx, l.cli, id, l.cfg.TTL)
	if err != nil {
		// A lease without a lock key has no effect on the lock (it just expires).
		return nil, fmt.Errorf("%w: etcd: grant lease: %w", harness.ErrNoEffect, err)
	}
	if granted != l.cfg.TTL {
		// New checked the grant; a member that grants otherwise (another election
		// timeout) would make the run's timings wrong, so the lease is not used.
		_ = l.revokeID(id)
		return nil, fmt.Errorf("%w: etcd: the server granted a %s lease, not the run's %s", harness.ErrNoEffect, secs(granted), secs(l.cfg.TTL))
	}
	s, err := concurrency.NewSession(l.cli, concurrency.WithLease(id), concurrency.WithTTL(int(granted/time.Second)))
	if err != nil {
		return nil, fmt.Errorf("%w: etcd: session: %w", harness.ErrNoEffect, err)
	}
	m := concurrency.NewMutex(s, l.cfg.LockKey)
	if err := m.Lock(ctx); err != nil {
		// Revoking the lease deletes our waiter key, whether or not it ever owned the lock.
		if rerr := l.revoke(s); rerr != nil {
			return nil, fmt.Errorf("etcd: lock: %v (and revoking the lease failed: %v)", err, rerr)
		}
		return nil, fmt.Errorf("%w: etcd: lock: %w", harness.ErrNoEffect, err)
	}
	cmp := m.IsOwner()
	createRev := cmp.GetCompare().GetCreateRevision()
	if createRev <= 0 {
		// Not reachable with clientv3 v3.7's Mutex; read the key rather than guess.
		resp, err := l.cli.Get(ctx, m.Key())
		if err != nil || len(resp.Kvs) == 0 {
			_ = l.revoke(s)
			return nil, fmt.Errorf("etcd: lock key %s gone before its revision was read: %v", m.Key(), err)
		}
		createRev = resp.Kvs[0].CreateRevision
	}
	token := createRev
	if l.cfg.Token == TokenHeaderRevision {
		token = m.Header().Revision
	}
	return &Lease{
		Grant: lease.NewGrant(token, granted, s.Done()),
		cli:   l.cli, s: s, key: m.Key(), createRev: createRev, leases: l.leases,
	}, nil
}

// revoke ends a session and revokes its lease with a short timeout of its own (the
// caller's context may be what ended). A lease already gone counts as revoked.
func (l *Locker) revoke(s *concurrency.Session) error {
	s.Orphan()
	return l.revokeID(s.Lease())
}

func (l *Locker) revokeID(id clientv3.LeaseID) error {
	ctx, cancel := context.WithTimeout(context.Background(), min(l.cfg.DialTimeout, l.cfg.TTL))
	defer cancel()
	_, err := l.cli.Revoke(ctx, id)
	if err == nil || errors.Is(err, rpctypes.ErrLeaseNotFound) {
		l.leases.remove(id)
		return nil
	}
	return err
}

// Lease is a granted etcd lock: its TTL is the one the server granted, and Lost closes
// when the session ends — the client saw no keep-alive answer for a TTL, the server said
// the lease is gone, the locker was closed, or the lease was released. Besides
// harness.Lease it exposes the lock key and its CreateRevision, which the etcd-txn
// resource compares in its write transaction.
type Lease struct {
	lease.Grant
	cli       *clientv3.Client
	s         *concurrency.Session
	key       string
	createRev int64
	leases    *leaseBook
	released  lease.Released
}

var _ harness.Lease = (*Lease)(nil)

// Key is the lock key this grant owns (LockKey/<lease id in hex>).
func (le *Lease) Key() string { return le.key }

// CreateRevision is the lock key's CreateRevision: the key exists with this revision
// exactly as long as this grant owns the lock.
func (le *Lease) CreateRevision() int64 { return le.createRev }

// LeaseID is the etcd lease behind the session.
func (le *Lease) LeaseID() clientv3.LeaseID { return le.s.Lease() }

// Release implements harness.Lease: delete the lock key, stop the keep-alive and
// revoke the lease. If the key was already gone (the lease expired: the lock was lost
// before the release) the error wraps harness.ErrNoEffect; so does a second Release.
func (le *Lease) Release(ctx context.Context) error {
	if err := le.released.First("etcd"); err != nil {
		return err
	}
	resp, err := le.cli.Delete(ctx, le.key)
	le.s.Orphan()
	if err != nil {
		// The key may or may not be deleted; the lease expires after its TTL anyway.
		return fmt.Errorf("etcd: release %s: %w", le.key, err)
	}
	// The key is gone either way now; revoking only tidies the lease (it expires after
	// its TTL if this fails).
	if _, err := le.cli.Revoke(ctx, le.s.Lease()); err == nil || errors.Is(err, rpctypes.ErrLeaseNotFound) {
		le.leases.remove(le.s.Lease())
	}
	if resp.Deleted == 0 {
		return fmt.Errorf("%w: etcd: lock key %s was already gone: the lease expired before the release", harness.ErrNoEffect, le.key)
	}
	return nil
}
