// Package harnesstest is the contract every lock backend must meet before fencecheck's
// verdicts about it mean anything. Call Backend (or Descriptor, or DescriptorWith for
// settings of its own) from a backend's own tests, including a user's backend in
// another module:
//
//   - tokens strictly increase across grants (unless the backend is harness.Tokenless);
//   - a client's Acquire honours its ctx while another client holds the lock;
//   - a client dials only the addresses it is given, so the harness's fault proxies are
//     in the way of every byte (a client that reaches the server some other way would
//     shrug off every fault);
//   - Lost closes when the lease is gone: the holder is cut off past its TTL, another
//     client takes the lock, and once the holder can talk again it notices;
//   - Close is safe twice, on a Locker and on the Backend;
//   - (Descriptor) the descriptor's Shape states the capabilities the started values
//     have: plans made before anything starts offer the faults that can run.
//
// and the rules the harness's faults punish later (rules.go), where they apply:
//
//   - a harness.Crasher crashed and restarted with its data (a cluster: its leader) goes
//     on with greater tokens — or, when the backend declares TokensResetOnCrash, really
//     goes back;
//   - a lease that is harness.Expiring says, by ValidUntil, that it has ended by the
//     time a silent holder's lock is given to another client, and does not move while
//     nothing is confirmed;
//   - a harness.Cluster of 3 or more with its leader cut off grants nothing to a client
//     of that member alone, goes on granting with greater tokens through the majority,
//     and after a follower lost its data (where the cluster accepts such a restart).
package harnesstest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/nemesis/proxy"
	"github.com/fencecheck/fencecheck/harness/registry"
)

// Config is what the suite runs against.
type Config struct {
	// Start starts a fresh backend for one subtest; the suite closes it (twice).
	Start func(ctx context.Context, t *testing.T) (harness.Backend, error)
	// TTL is the lease TTL the backend grants (it bounds the suite's waits).
	TTL time.Duration
	// TokensResetOnCrash: the backend says its token counter is lost when its server
	// crashes (registry.Backend.TokensResetOnCrash). The crash rule then requires the
	// tokens to go back after a crash instead of increasing.
	TokensResetOnCrash bool
	// StartCluster, if set, starts the backend as a cluster of 3 or more members for
	// the cluster rules (nil: Start; they apply when it starts a cluster).
	StartCluster func(ctx context.Context, t *testing.T) (harness.Backend, error)

	// declared and declaredCluster are a descriptor's capabilities for Start and
	// StartCluster (nil: read from the started value), so that a rule that cannot apply
	// skips without starting anything.
	declared, declaredCluster *registry.Caps
}

// Descriptor runs the suite on a registry descriptor, started as a run would start it
// (its default TTL and members, no options given — an option with an Env reads its
// environment variable —, a temporary directory, logs discarded): DescriptorWith with
// zero settings.
func Descriptor(t *testing.T, d registry.Backend) {
	t.Helper()
	DescriptorWith(t, d, registry.Settings{})
}

// DescriptorWith runs the suite on a registry descriptor started with settings s, as a
// run with them would start it: s.TTL and s.Members (0: the descriptor's TTL and
// Members) and s.Options, the descriptor's own options by name as fencecheck.Config's
// Options gives them (an option not given reads its Env variable). The suite sets the
// clients itself; s's other fields are not used.
func DescriptorWith(t *testing.T, d registry.Backend, s registry.Settings) {
	t.Helper()
	ttl := s.TTL
	if ttl == 0 {
		ttl = d.TTL
	}
	if ttl == 0 {
		ttl = registry.DefaultTTL
	}
	members := s.Members
	if members == 0 {
		members = max(d.Members, 1)
	}
	settings := func(members int) registry.Settings {
		return registry.Settings{TTL: ttl, Members: members, Clients: 2, Options: s.Options}
	}
	startWith := func(members int) func(ctx context.Context, t *testing.T) (harness.Backend, error) {
		return func(ctx context.Context, t *testing.T) (harness.Backend, error) {
			env := envFor(t, ttl)
			env.Settings = settings(members).WithOptions(d.Options)
			if err := d.CheckSettings(env.Settings); err != nil {
				return nil, err
			}
			return d.Start(ctx, env)
		}
	}
	declared := func(members int) *registry.Caps {
		c := d.PlanCaps(settings(members))
		return &c
	}
	cfg := Config{TTL: ttl, Start: startWith(members), TokensResetOnCrash: d.TokensResetOnCrash, declared: declared(members), declaredCluster: declared(members)}
	// The cluster rules run at the size node faults run at (matrix, evaluate).
	if cm := max(members, d.NodeFaultMembers); cm >= 3 && cm != members {
		cfg.StartCluster, cfg.declaredCluster = startWith(cm), declared(cm)
	}
	t.Run("shape", func(t *testing.T) {
		shapeAgrees(t, cfg, d.ShapeOf(settings(members)), members, d.ShapeMissing(settings(members)))
	})
	Backend(t, cfg)
}

// envFor is the Env a descriptor starts in: two clients on time.Now, a temporary
// directory, logs discarded.
func envFor(t *testing.T, ttl time.Duration) registry.Env {
	return registry.Env{
		Settings:    registry.Settings{TTL: ttl, Members: 1, Clients: 2},
		RunID:       "run-harnesstest",
		ClientClock: func(int) func() time.Time { return time.Now },
		TempDir:     func() (string, error) { return t.TempDir(), nil },
		LogFile:     func(string) (io.Writer, string, error) { return io.Discard, "", nil },
	}
}

// Backend runs the contract suite.
func Backend(t *testing.T, cfg Config) {
	t.Helper()
	if cfg.TTL <= 0 {
		t.Fatal("harnesstest: Config.TTL must be positive")
	}
	t.Run("tokens-increase", func(t *testing.T) { tokensIncrease(t, cfg) })
	t.Run("acquire-honours-ctx", func(t *testing.T) { honoursCtx(t, cfg) })
	t.Run("dials-only-given-addresses", func(t *testing.T) { dialsOnlyGiven(t, cfg) })
	t.Run("lost-closes", func(t *testing.T) { lostCloses(t, cfg) })
	t.Run("tokens-across-crash", func(t *testing.T) { tokensAcrossCrash(t, cfg) })
	t.Run("valid-until-before-takeover", func(t *testing.T) { validUntilBeforeTakeover(t, cfg) })
	t.Run("cluster-isolation", func(t *testing.T) { clusterIsolation(t, cfg) })
	t.Run("cluster-wipe", func(t *testing.T) { clusterWipe(t, cfg) })
}

// ceiling is a generous bound on anything that should take about a TTL, for a loaded
// machine.
func (c Config) ceiling() time.Duration { return 10*c.TTL + 10*time.Second }

// fixture is one started backend with a proxied locker per client.
type fixture struct {
	t       *testing.T
	backend harness.Backend
	links   [][]*proxy.Link
}

// startCeiling bounds a backend's start: a server's setup (PostgreSQL's initdb, a JVM)
// does not scale with the TTL, and several rules start one each at once on a loaded
// machine (initdb took over 15 s beside a CI run).
const startCeiling = 3 * time.Minute

func start(t *testing.T, cfg Config) *fixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), max(cfg.ceiling(), startCeiling))
	defer cancel()
	b, err := cfg.Start(ctx, t)
	if err != nil {
		t.Fatalf("start the backend: %v", err)
	}
	f := &fixture{t: t, backend: b}
	t.Cleanup(func() {
		for _, ls := range f.links {
			for _, l := range ls {
				_ = l.Close()
			}
		}
		if err := b.Close(); err != nil {
			t.Errorf("Backend.Close: %v", err)
		}
		if err := b.Close(); err != nil {
			t.Errorf("Backend.Close a second time: %v (it must be safe to call twice)", err)
		}
	})
	if len(b.Endpoints()) == 0 {
		t.Fatal("Backend.Endpoints is empty: clients must reach the service over the network, through the harness's proxies")
	}
	return f
}

// locker returns a client dialling only through fresh proxy links to every endpoint.
func (f *fixture) locker(ctx context.Context, id int) (harness.Locker, []*proxy.Link, error) {
	var links []*proxy.Link
	var addrs []string
	for _, ep := range f.backend.Endpoints() {
		l, err := proxy.New(ep)
		if err != nil {
			f.t.Fatalf("proxy to %s: %v", ep, err)
		}
		links = append(links, l)
		addrs = append(addrs, l.Addr())
	}
	f.links = append(f.links, links)
	lk, err := f.backend.NewLocker(ctx, id, addrs)
	if err != nil {
		return nil, links, err
	}
	f.t.Cleanup(func() {
		if err := lk.Close(); err != nil {
			f.t.Errorf("Locker.Close: %v", err)
		}
		if err := lk.Close(); err != nil {
			f.t.Errorf("Locker.Close a second time: %v (it must be safe to call twice)", err)
		}
	})
	return lk, links, nil
}

func (f *fixture) mustLocker(ctx context.Context, id int) (harness.Locker, []*proxy.Link) {
	f.t.Helper()
	lk, links, err := f.locker(ctx, id)
	if err != nil {
		f.t.Fatalf("NewLocker(%d): %v", id, err)
	}
	return lk, links
}

func tokensIncrease(t *testing.T, cfg Config) {
	f := start(t, cfg)
	// Tokenless with a reason: no tokens; an empty reason is a variant that has them.
	if tl, ok := f.backend.(harness.Tokenless); ok && tl.NoFencingToken() != "" {
		t.Skipf("backend has no fencing tokens: %s", tl.NoFencingToken())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*cfg.ceiling())
	defer cancel()
	a, _ := f.mustLocker(ctx, 0)
	b, _ := f.mustLocker(ctx, 1)
	if err := checkTokens(ctx, t.Logf, a, b); err != nil {
		t.Error(err)
	}
}

// checkTokens takes the lock 6 times, alternating between two clients, and fails when
// a token is not greater than the one before. A release that is not confirmed is logged,
// not failed: some libraries bound their release by a timer (client-go's by its renew
// deadline), which a loaded machine can outrun; the next grant then waits for the
// lease to end, and its token must still be greater.
func checkTokens(ctx context.Context, logf func(string, ...any), a, b harness.Locker) error {
	var prev int64
	for i := range 6 {
		l := []harness.Locker{a, b}[i%2]
		lease, err := l.Acquire(ctx)
		if err != nil {
			return fmt.Errorf("grant %d: Acquire: %w", i+1, err)
		}
		if i > 0 && lease.Token() <= prev {
			_ = lease.Release(ctx)
			return fmt.Errorf("grant %d: token %d is not greater than the previous grant's %d: tokens must strictly increase across grants", i+1, lease.Token(), prev)
		}
		prev = lease.Token()
		if err := lease.Release(ctx); err != nil {
			logf("grant %d: Release was not confirmed (%v); the next grant waits for the lease to end", i+1, err)
		}
	}
	return nil
}

func honoursCtx(t *testing.T, cfg Config) {
	f := start(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*cfg.ceiling())
	defer cancel()
	a, _ := f.mustLocker(ctx, 0)
	b, _ := f.mustLocker(ctx, 1)
	held, err := a.Acquire(ctx)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	defer func() { _ = held.Release(ctx) }()
	// Well inside the holder's TTL: the lock is surely still held.
	wait := max(cfg.TTL/2, 50*time.Millisecond)
	bctx, bcancel := context.WithTimeout(ctx, wait)
	defer bcancel()
	began := time.Now()
	lease, err := b.Acquire(bctx)
	took := time.Since(began)
	switch {
	case err == nil:
		_ = lease.Release(ctx)
		t.Fatalf("a second client got the lock (token %d) while the first held it (token %d)", lease.Token(), held.Token())
	case took > wait+cfg.ceiling()/2:
		t.Errorf("Acquire returned %v after its ctx ended (%v): it must honour ctx", took-wait, wait)
	case !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled):
		t.Logf("Acquire with an ended ctx returned %v (not wrapping ctx.Err(); accepted)", err)
	}
}

func dialsOnlyGiven(t *testing.T, cfg Config) {
	f := start(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*cfg.ceiling())
	defer cancel()
	if err := f.checkDials(ctx, cfg); err != nil {
		t.Error(err)
	}
}

// checkDials fails when a grant does not go through the client's given addresses, or
// when a client cut off from all of them still gets the lock.
func (f *fixture) checkDials(ctx context.Context, cfg Config) error {
	a, links := f.mustLocker(ctx, 0)
	lease, err := a.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("acquire: %w", err)
	}
	// Accepted is counted before the proxy dials the server (bytes are counted after
	// they are written, possibly after the answer is back).
	var through int64
	for _, l := range links {
		through += l.Stats().Accepted
	}
	if err := lease.Release(ctx); err != nil {
		// Not what this check is about, and some libraries bound their release by a
		// timer a loaded machine can outrun. Wait for the lease to end, so that the
		// cut-off client below would get a free lock if it reached the service.
		f.t.Logf("release was not confirmed (%v); waiting up to the TTL for the lease to end", err)
		select {
		case <-lease.Lost():
		case <-time.After(cfg.TTL):
		case <-ctx.Done():
		}
	}
	if through == 0 {
		return errors.New("the grant did not go through the given addresses (no connection through the proxies): the client must dial only them")
	}
	// Cut a new client off before it starts: it must not get the lock some other way.
	b, blinks, err := f.locker(ctx, 1)
	for _, l := range blinks {
		l.Blackhole()
	}
	if err != nil {
		return nil // refusing to start without its servers is fine
	}
	wait := max(2*cfg.TTL, time.Second)
	bctx, bcancel := context.WithTimeout(ctx, wait)
	defer bcancel()
	if got, err := b.Acquire(bctx); err == nil {
		_ = got.Release(ctx)
		return fmt.Errorf("a client whose every given address was cut off still got the lock (token %d): it reaches the service some other way, so faults cannot reach it", got.Token())
	}
	return nil
}

func lostCloses(t *testing.T, cfg Config) {
	f := start(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 4*cfg.ceiling())
	defer cancel()
	a, alinks := f.mustLocker(ctx, 0)
	b, _ := f.mustLocker(ctx, 1)
	held, err := a.Acquire(ctx)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	// The holder goes silent: its renewals stall, its lease expires on the service.
	for _, l := range alinks {
		l.Stall()
	}
	bctx, bcancel := context.WithTimeout(ctx, cfg.ceiling())
	defer bcancel()
	next, err := AcquireRetrying(bctx, t, b)
	if err != nil {
		for _, l := range alinks {
			l.Pass()
		}
		t.Fatalf("another client could not take the lock while the holder was cut off for %v: %v (the lease must expire)", cfg.ceiling(), err)
	}
	// The holder can talk again: it must find out that its lease is gone.
	for _, l := range alinks {
		l.Pass()
	}
	select {
	case <-held.Lost():
	case <-time.After(cfg.ceiling()):
		t.Errorf("Lost did not close within %v of the holder reconnecting, though client 1 holds the lock now (token %d): a careful client could not tell", cfg.ceiling(), next.Token())
	}
	_ = next.Release(ctx)
	_ = held.Release(ctx) // may fail: the lease is gone
}
