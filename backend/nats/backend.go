// Package nats is the "nats" lock backend: a JetStream key-value bucket on one
// nats-server (started by fencecheck from Debian's nats-server, or an existing one),
// whose TTL (the stream's MaxAge) is the lock's TTL. The lock is Create of a key,
// renewed by Update with the key's last revision every TTL/3, released by Delete with
// the last revision. The token is the revision Create returned: the stream sequence,
// which only grows, and survives a restart with the file store.
package nats

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fencecheck/fencecheck/backend/lease"
	"github.com/fencecheck/fencecheck/backend/renewal"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/proc"
)

// Defaults for the bucket and key.
const (
	DefaultBucket = "fencecheck_lock"
	DefaultKey    = "lock"
)

// Config configures the nats backend.
type Config struct {
	// TTL is the bucket's TTL (MaxAge): whole milliseconds, at least 100 ms.
	TTL time.Duration
	// Dir is the started server's JetStream store; required unless URL is set.
	Dir string
	// LogWriter receives the server's output (nil: discarded).
	LogWriter io.Writer
	// URL is an existing server (nats://host:port): none is started and node faults
	// do not apply. The bucket is created (or its TTL updated) there.
	URL string
	// Bucket and Key name the lock (defaults DefaultBucket, DefaultKey).
	Bucket, Key string
	// Binary is the nats-server program (default from PATH).
	Binary string
	// Port is the started server's port (0: a free one).
	Port int
}

func (c Config) withDefaults() Config {
	if c.Bucket == "" {
		c.Bucket = DefaultBucket
	}
	if c.Key == "" {
		c.Key = DefaultKey
	}
	return c
}

// Validate checks the configuration.
func (c Config) Validate() error {
	c = c.withDefaults()
	// JetStream refuses a MaxAge below 100 ms ("max age needs to be >= 100ms", 2.9.10):
	// refuse it here, before a server is started.
	if c.TTL < 100*time.Millisecond || c.TTL%time.Millisecond != 0 {
		return fmt.Errorf("nats: TTL %v must be whole milliseconds, at least 100ms (the bucket's MaxAge)", c.TTL)
	}
	if c.URL != "" {
		if !strings.HasPrefix(c.URL, "nats://") || strings.Count(c.URL, ",") > 0 {
			return fmt.Errorf("nats: URL %q is not one nats://host:port", c.URL)
		}
		return nil
	}
	if c.Dir == "" {
		return errors.New("nats: Dir is required to start a server")
	}
	return nil
}

// Backend is the nats lock backend.
type Backend struct {
	// Group is the started server (none for an external one): ProcessNodes and Crasher.
	proc.Group[*Server]
	cfg Config
	url string
}

var (
	_ harness.Backend      = (*Backend)(nil)
	_ harness.ProcessNodes = (*Backend)(nil)
	_ harness.Crasher      = (*Backend)(nil)
)

// Start starts nats-server (or reaches the one at cfg.URL) and creates the bucket.
func Start(ctx context.Context, cfg Config) (_ *Backend, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	b := &Backend{Group: proc.Group[*Server]{Name: "nats"}, cfg: cfg, url: cfg.URL}
	if cfg.URL == "" {
		s, err := StartServer(ctx, ServerConfig{Dir: cfg.Dir, Port: cfg.Port, Log: cfg.LogWriter, Binary: cfg.Binary})
		if err != nil {
			return nil, err
		}
		b.Servers, b.url = []*Server{s}, s.URL()
		defer func() {
			if err != nil {
				_ = s.Close()
			}
		}()
	}
	if err := b.createBucket(ctx); err != nil {
		return nil, err
	}
	return b, nil
}

// createBucket creates the lock bucket (file storage, one value per key, MaxAge = TTL),
// or updates an existing one to this TTL.
func (b *Backend) createBucket(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	nc, err := natsgo.Connect(b.url, natsgo.Timeout(2*time.Second), natsgo.NoReconnect(), natsgo.Name("fencecheck-setup"))
	if err != nil {
		return fmt.Errorf("nats: no server at %s: %w", b.url, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("nats: jetstream: %w", err)
	}
	_, err = js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: b.cfg.Bucket, TTL: b.cfg.TTL, History: 1, Storage: jetstream.FileStorage,
	})
	if err != nil {
		return fmt.Errorf("nats: create bucket %s at %s: %w", b.cfg.Bucket, b.url, err)
	}
	return nil
}

// Name implements harness.Backend.
func (b *Backend) Name() string { return "nats" }

// Endpoints implements harness.Backend: host:port of the server.
func (b *Backend) Endpoints() []string { return []string{strings.TrimPrefix(b.url, "nats://")} }

// Close implements harness.Backend: stops the server it started. Safe to call twice.
func (b *Backend) Close() error { return b.Group.Close() }

// Restart implements harness.Crasher: the same port, with its store (keepData) or a
// new empty one, in which the bucket is created again (its sequence starts over).
func (b *Backend) Restart(ctx context.Context, i int, keepData bool) error {
	if err := b.Group.Restart(ctx, i, keepData); err != nil {
		return err
	}
	if !keepData {
		return b.createBucket(ctx)
	}
	return nil
}

// timedOut reports whether a connect failed on a timeout (not a refusal).
func timedOut(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() || errors.Is(err, natsgo.ErrTimeout)
}

// connectCeiling bounds how long a client's first connect is retried after timeouts.
const connectCeiling = 30 * time.Second

// NewLocker implements harness.Backend: a connection to addrs[0] only (a single
// server sends no other addresses to discover).
func (b *Backend) NewLocker(ctx context.Context, id int, addrs []string) (harness.Locker, error) {
	if len(addrs) != 1 {
		return nil, fmt.Errorf("%w: nats: want 1 address, got %d", harness.ErrNoEffect, len(addrs))
	}
	timeout := max(b.cfg.TTL, 500*time.Millisecond)
	connect := func() (*natsgo.Conn, error) {
		return natsgo.Connect("nats://"+addrs[0],
			natsgo.Name(fmt.Sprintf("fencecheck-client-%d", id)),
			natsgo.Timeout(timeout), natsgo.DontRandomize(), natsgo.IgnoreAuthErrorAbort(),
			// A stalled link is noticed by pings; the client keeps reconnecting to the
			// same (proxied) address for as long as the run lasts.
			natsgo.PingInterval(timeout), natsgo.MaxPingsOutstanding(2),
			natsgo.MaxReconnects(-1), natsgo.ReconnectWait(50*time.Millisecond),
		)
	}
	// The dial timeout is the TTL's, as the client's reconnects during the run should be;
	// the first connect is retried on a timeout up to a generous ceiling instead, so a
	// loaded machine's slow handshake is not a failed setup.
	nc, err := connect()
	for deadline := time.Now().Add(connectCeiling); err != nil && timedOut(err) && time.Now().Before(deadline) && ctx.Err() == nil; {
		nc, err = connect()
	}
	if err != nil {
		return nil, fmt.Errorf("%w: nats: connect %s: %w", harness.ErrNoEffect, addrs[0], err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("%w: nats: jetstream: %w", harness.ErrNoEffect, err)
	}
	// Setup, not the workload: the bucket's lookup and status wait out a loaded machine
	// (a client host's took over the TTL beside a CI run).
	kctx, cancel := context.WithTimeout(ctx, max(timeout, connectCeiling))
	defer cancel()
	kv, err := js.KeyValue(kctx, b.cfg.Bucket)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("%w: nats: bucket %s: %w", harness.ErrNoEffect, b.cfg.Bucket, err)
	}
	// The lease lasts what the bucket's MaxAge says (its status), not what was asked.
	st, err := kv.Status(kctx)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("%w: nats: bucket %s status: %w", harness.ErrNoEffect, b.cfg.Bucket, err)
	}
	ttl := st.TTL()
	if ttl <= 0 {
		ttl = b.cfg.TTL
	}
	return &Locker{cfg: b.cfg, nc: nc, kv: kv, timeout: timeout, ttl: ttl}, nil
}

// Locker is one harness client's lock client.
type Locker struct {
	cfg     Config
	nc      *natsgo.Conn
	kv      jetstream.KeyValue
	timeout time.Duration
	// ttl is the bucket's TTL as its status reports it (the TTL granted).
	ttl    time.Duration
	leases renewal.Set
}

var _ harness.Locker = (*Locker)(nil)

// Acquire implements harness.Locker: Create the key, polling every TTL/20 (at least
// 2 ms) while it exists. An attempt is not cut short by ctx (a Create whose reply was
// lost would be an unknown outcome); an error wraps harness.ErrNoEffect when the lock
// was definitely not taken.
func (l *Locker) Acquire(ctx context.Context) (harness.Lease, error) {
	poll := max(l.cfg.TTL/20, 2*time.Millisecond)
	value := randomValue()
	for {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%w: nats: lock busy until %w", harness.ErrNoEffect, err)
		}
		start := time.Now()
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.timeout)
		rev, err := l.kv.Create(actx, l.cfg.Key, value)
		cancel()
		switch {
		case err == nil:
			return l.newLease(value, rev, start), nil
		case errors.Is(err, jetstream.ErrKeyExists):
		case errors.Is(err, natsgo.ErrConnectionClosed):
			return nil, fmt.Errorf("%w: nats: acquire: %w", harness.ErrNoEffect, err)
		case errors.Is(err, natsgo.ErrNoResponders), errors.Is(err, jetstream.ErrNoStreamResponse):
			// No server took the request (the connection is down or reconnecting).
		default:
			return nil, fmt.Errorf("nats: acquire: %w", err)
		}
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%w: nats: lock busy until %w", harness.ErrNoEffect, ctx.Err())
		case <-t.C:
		}
	}
}

// randomValue is a grant's owner value: 16 random bytes, hex. An unknown renewal
// outcome is settled by finding it in the key.
func randomValue() []byte {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux
	return []byte(hex.EncodeToString(b[:]))
}

func (l *Locker) newLease(value []byte, rev uint64, start time.Time) *Lease {
	le := &Lease{Lease: renewal.NewLease(int64(rev), l.ttl, start.Add(l.ttl)), l: l, value: value, rev: rev}
	l.leases.Run(le.Keeper, le.renew)
	return le
}

// Close implements harness.Locker: stops the renewals of leases still held (their Lost
// channels close) and closes the connection. Safe to call twice.
func (l *Locker) Close() error {
	if l.leases.Close() {
		l.nc.Close()
	}
	return nil
}

// Lease is a granted nats lock. Its token is the key's revision at grant (its stream
// sequence). Lost closes when an Update is refused (the key expired, or another grant
// wrote it), when no Update succeeded for a TTL, or when the lease is released or its
// locker closed; ValidUntil is the start of the last confirmed Create or Update plus
// the TTL.
type Lease struct {
	renewal.Lease
	l        *Locker
	value    []byte
	released lease.Released

	mu        sync.Mutex
	rev       uint64 // the key's last revision written by this grant
	uncertain bool   // the last Update's outcome is unknown
}

var (
	_ harness.Lease    = (*Lease)(nil)
	_ harness.Expiring = (*Lease)(nil)
)

// renew is one Update with the last revision.
func (le *Lease) renew(ctx context.Context) (renewal.Result, time.Time) {
	le.mu.Lock()
	rev, uncertain := le.rev, le.uncertain
	le.mu.Unlock()
	if uncertain {
		// If the key holds this grant's value, its revision is ours.
		if e, err := le.l.kv.Get(ctx, le.l.cfg.Key); err == nil && string(e.Value()) == string(le.value) {
			rev = e.Revision()
		}
	}
	start := time.Now()
	next, err := le.l.kv.Update(ctx, le.l.cfg.Key, le.value, rev)
	var apiErr *jetstream.APIError
	le.mu.Lock()
	defer le.mu.Unlock()
	le.rev, le.uncertain = rev, false
	switch {
	case err == nil:
		le.rev = next
		return renewal.Renewed, start.Add(le.TTL())
	case errors.As(err, &apiErr) || errors.Is(err, jetstream.ErrKeyNotFound):
		return renewal.Refused, time.Time{} // the key expired, or another grant wrote it
	}
	le.uncertain = true
	return renewal.Unknown, time.Time{}
}

// Release implements harness.Lease: stop renewing and Delete the key if its last
// revision is still this grant's. A key already expired or taken over gives an error
// wrapping harness.ErrNoEffect; so does a second Release.
func (le *Lease) Release(ctx context.Context) error {
	if err := le.released.First("nats"); err != nil {
		return err
	}
	le.l.leases.Stop(le.Keeper)
	le.mu.Lock()
	rev := le.rev
	le.mu.Unlock()
	err := le.l.kv.Delete(ctx, le.l.cfg.Key, jetstream.LastRevision(rev))
	var apiErr *jetstream.APIError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &apiErr):
		return fmt.Errorf("%w: nats: key %s is no longer at this grant's revision %d: the lease expired before the release: %w", harness.ErrNoEffect, le.l.cfg.Key, rev, err)
	case errors.Is(err, natsgo.ErrConnectionClosed):
		return fmt.Errorf("%w: nats: release: %w", harness.ErrNoEffect, err)
	}
	return fmt.Errorf("nats: release: %w", err)
}

var _ harness.ServerVersioner = (*Backend)(nil)

// ServerVersion implements harness.ServerVersioner: the version in the server's INFO
// (nats.go's ConnectedServerVersion), started or external.
func (b *Backend) ServerVersion(ctx context.Context) (string, error) {
	timeout := 2 * time.Second
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	nc, err := natsgo.Connect(b.url, natsgo.Timeout(timeout), natsgo.NoReconnect(), natsgo.Name("fencecheck-version"))
	if err != nil {
		return "", fmt.Errorf("nats: INFO: %w", err)
	}
	defer nc.Close()
	v := nc.ConnectedServerVersion()
	if v == "" {
		return "", fmt.Errorf("nats: INFO has no version")
	}
	return "nats-server: v" + v, nil
}
