package harnesstest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/registry"
)

// The rules below are what the harness's node faults later punish: a crash (the crash
// fault restarts a server with its data at once), a stalled holder that a careful
// client must see expire, and a cluster's leader cut off from its peers. Each failure
// says which rule broke and what to do about it.

// grants takes the lock n times, alternating between lockers, and returns the last
// token; every token must exceed the previous one (and after, when after > 0).
func grants(ctx context.Context, n int, after int64, ls ...harness.Locker) (int64, error) {
	prev := after
	for i := range n {
		lease, err := ls[i%len(ls)].Acquire(ctx)
		if err != nil {
			return prev, fmt.Errorf("grant %d: Acquire: %w", i+1, err)
		}
		tok := lease.Token()
		if err := lease.Release(ctx); err != nil {
			return tok, fmt.Errorf("grant %d: Release: %w", i+1, err)
		}
		if (i > 0 || after > 0) && tok <= prev {
			return tok, fmt.Errorf("grant %d: token %d is not greater than the previous grant's %d: tokens must strictly increase across grants", i+1, tok, prev)
		}
		prev = tok
	}
	return prev, nil
}

// acquireSoon takes the lock through a service that has just restarted or changed
// leader: an attempt may fail with an unknown outcome (sent on a connection the crash
// broke), so it tries again until the ceiling. It returns the last error with the time.
func acquireSoon(ctx context.Context, cfg Config, l harness.Locker) (harness.Lease, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.ceiling())
	defer cancel()
	var last error
	for ctx.Err() == nil {
		lease, err := l.Acquire(ctx)
		if err == nil {
			return lease, nil
		}
		last = err
		sleepCtx(ctx, cfg.TTL/10)
	}
	return nil, fmt.Errorf("no grant within %v: %w", cfg.ceiling(), errors.Join(last, ctx.Err()))
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(max(d, 10*time.Millisecond))
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// crashTarget is the node the crash fault strikes: a cluster's leader, else node 0.
func crashTarget(ctx context.Context, svc harness.Backend) (int, error) {
	cl, ok := svc.(harness.Cluster)
	if !ok {
		return 0, nil
	}
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return cl.Leader(lctx)
}

func tokensAcrossCrash(t *testing.T, cfg Config) {
	if cfg.declared != nil && cfg.declared.NoToken != "" {
		t.Skipf("backend has no fencing tokens: %s", cfg.declared.NoToken)
	}
	if cfg.declared != nil && !cfg.declared.Crasher {
		if cfg.TokensResetOnCrash {
			t.Skip("the backend declares TokensResetOnCrash but cannot be crashed (not a harness.Crasher): the reset cannot be shown")
		}
		t.Skip("not a harness.Crasher: the crash fault does not apply")
	}
	f := start(t, cfg)
	svc := registry.Service(f.backend)
	if _, ok := svc.(harness.Crasher); !ok {
		if cfg.TokensResetOnCrash {
			t.Skip("the backend declares TokensResetOnCrash but cannot be crashed (not a harness.Crasher): the reset cannot be shown")
		}
		t.Skip("not a harness.Crasher: the crash fault does not apply")
	}
	if tl, ok := f.backend.(harness.Tokenless); ok && tl.NoFencingToken() != "" {
		t.Skipf("backend has no fencing tokens: %s", tl.NoFencingToken())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*cfg.ceiling())
	defer cancel()
	a, _ := f.mustLocker(ctx, 0)
	b, _ := f.mustLocker(ctx, 1)
	if err := f.checkCrash(ctx, cfg, a, b); err != nil {
		t.Error(err)
	}
}

// checkCrash takes the lock a few times, crashes the service's node (a cluster's
// leader) and restarts it with its data, as the crash fault does, and checks the next
// token against the last one before the crash: greater, unless the backend declares
// that its counter is lost (then it must really go back).
func (f *fixture) checkCrash(ctx context.Context, cfg Config, a, b harness.Locker) error {
	svc := registry.Service(f.backend)
	crasher := svc.(harness.Crasher)
	before, err := grants(ctx, 3, 0, a, b)
	if err != nil {
		return fmt.Errorf("before the crash: %w", err)
	}
	i, err := crashTarget(ctx, svc)
	if err != nil {
		return fmt.Errorf("find the leader to crash: %w", err)
	}
	if err := crasher.Crash(ctx, i); err != nil {
		return fmt.Errorf("Crash(node %d): %w", i, err)
	}
	if err := crasher.Restart(ctx, i, true); err != nil {
		return fmt.Errorf("Restart(node %d, keepData=true) after Crash: %w (the crash fault restarts the server at once with its data)", i, err)
	}
	lease, err := acquireSoon(ctx, cfg, b)
	if err != nil {
		return fmt.Errorf("after Crash+Restart(keepData) of node %d: %w: the service must grant again once it is back", i, err)
	}
	after := lease.Token()
	_ = lease.Release(ctx)
	switch {
	case cfg.TokensResetOnCrash && after > before:
		return fmt.Errorf("tokens-reset-on-crash: the backend declares TokensResetOnCrash, but after Crash+Restart(keepData) of node %d the token went on: %d after %d — drop the declaration (the expected verdicts derived from it say tokens go back after a crash)", i, after, before)
	case !cfg.TokensResetOnCrash && after <= before:
		return fmt.Errorf("tokens-survive-crash: tokens went back after Crash+Restart(keepData) of node %d: token %d after %d — persist the token counter (fsync) before granting, or, if the service really loses it, declare TokensResetOnCrash in the descriptor", i, after, before)
	}
	return nil
}

func validUntilBeforeTakeover(t *testing.T, cfg Config) {
	if cfg.declared != nil && !cfg.declared.ClientExpiry {
		t.Skip("its leases are not harness.Expiring: they do not say when they end")
	}
	f := start(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 4*cfg.ceiling())
	defer cancel()
	switch err := f.checkExpiry(ctx, cfg); {
	case errors.Is(err, errNotExpiring):
		t.Skip("its leases are not harness.Expiring: they do not say when they end")
	case err != nil:
		t.Error(err)
	}
}

// errNotExpiring: the backend's leases do not say when they end, so the expiry rule
// does not apply.
var errNotExpiring = errors.New("not a harness.Expiring lease")

// checkExpiry stalls a holder (no renewal can be confirmed) until another client gets
// the lock, and checks the holder's ValidUntil against that grant: a careful client
// trusts ValidUntil, so it must have passed by the time the service gave the lock away,
// and it must not move while nothing is confirmed.
func (f *fixture) checkExpiry(ctx context.Context, cfg Config) error {
	a, alinks := f.mustLocker(ctx, 0)
	b, _ := f.mustLocker(ctx, 1)
	held, err := a.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("Acquire: %w", err)
	}
	defer func() { _ = held.Release(ctx) }()
	exp, ok := held.(harness.Expiring)
	switch {
	case !ok && cfg.declared != nil:
		return fmt.Errorf("expiring-lease: the descriptor's Shape.Lease is a harness.Expiring but the lease %T has no ValidUntil: implement it, or give Shape.Lease the type Acquire returns", held)
	case !ok:
		return errNotExpiring
	}
	for _, l := range alinks {
		l.Stall()
	}
	defer func() {
		for _, l := range alinks {
			l.Pass()
		}
	}()
	bctx, bcancel := context.WithTimeout(ctx, cfg.ceiling())
	next, err := b.Acquire(bctx)
	bcancel()
	if err != nil {
		return fmt.Errorf("expiring-lease: another client could not take the lock within %v of the holder going silent: %w (the lease must expire)", cfg.ceiling(), err)
	}
	took := time.Now()
	defer func() { _ = next.Release(ctx) }()
	until := exp.ValidUntil()
	if until.After(took) {
		return fmt.Errorf("expiring-lease: the silent holder's ValidUntil (%s) was still %v ahead when another client's grant (token %d) returned: a careful client would write with a lease the service had already given away — take ValidUntil from the start (send time) of the last confirmed grant or renewal plus the TTL",
			until.Format(time.RFC3339Nano), until.Sub(took).Round(time.Millisecond), next.Token())
	}
	sleepCtx(ctx, cfg.TTL)
	if later := exp.ValidUntil(); later.After(until) {
		return fmt.Errorf("expiring-lease: ValidUntil moved from %s to %s while the holder was cut off: it must advance only on a confirmed renewal",
			until.Format(time.RFC3339Nano), later.Format(time.RFC3339Nano))
	}
	return nil
}

// clusterRules say, for each rule on a cluster, what it needs a majority left for: its
// skip says it when the backend is no cluster of 3 nodes or more.
var clusterRules = map[string]string{
	"cluster-isolation": "no member to cut off with a majority left",
	"cluster-wipe":      "no follower to restart without its data with a majority left",
}

// notCluster is why a cluster rule does not apply to a backend that is no harness.Cluster
// of 3 nodes or more.
func notCluster(rule string) string {
	return "not a harness.Cluster of 3 nodes or more: " + clusterRules[rule]
}

// clusterFixture starts the backend as a cluster (Config.StartCluster) for rule (a key
// of clusterRules) and returns its Cluster, or skips when it is not a cluster of at
// least 3 nodes.
func clusterFixture(t *testing.T, cfg Config, rule string) (*fixture, harness.Cluster) {
	t.Helper()
	if cfg.declaredCluster != nil && (!cfg.declaredCluster.Cluster || cfg.declaredCluster.Nodes < 3) {
		t.Skip(notCluster(rule))
	}
	ccfg := cfg
	if cfg.StartCluster != nil {
		ccfg.Start = cfg.StartCluster
	}
	f := start(t, ccfg)
	cl, ok := registry.Service(f.backend).(harness.Cluster)
	if !ok || cl.Nodes() < 3 {
		t.Skip(notCluster(rule))
	}
	if tl, ok := f.backend.(harness.Tokenless); ok && tl.NoFencingToken() != "" {
		t.Skipf("backend has no fencing tokens: %s", tl.NoFencingToken())
	}
	return f, cl
}

func clusterIsolation(t *testing.T, cfg Config) {
	f, cl := clusterFixture(t, cfg, "cluster-isolation")
	ctx, cancel := context.WithTimeout(context.Background(), 6*cfg.ceiling())
	defer cancel()
	if err := f.checkIsolation(ctx, cfg, cl); err != nil {
		t.Error(err)
	}
}

// checkIsolation cuts the leader off from its peers (the leader-isolation fault) and
// checks the two rules of a majority: a client that reaches only the cut-off member
// gets no lock, and one that reaches every member does, with a greater token; after
// the heal tokens go on increasing.
func (f *fixture) checkIsolation(ctx context.Context, cfg Config, cl harness.Cluster) error {
	a, _ := f.mustLocker(ctx, 0)
	b, _ := f.mustLocker(ctx, 1)
	before, err := grants(ctx, 2, 0, a, b)
	if err != nil {
		return fmt.Errorf("before the isolation: %w", err)
	}
	lctx, lcancel := context.WithTimeout(ctx, 30*time.Second)
	leader, err := cl.Leader(lctx)
	lcancel()
	if err != nil {
		return fmt.Errorf("find the leader: %w", err)
	}
	if err := cl.Isolate(ctx, leader); err != nil {
		return fmt.Errorf("Isolate(node %d): %w", leader, err)
	}
	healed := false
	heal := func() error {
		if healed {
			return nil
		}
		healed = true
		return cl.Heal(ctx)
	}
	defer func() { _ = heal() }()

	// A client of the cut-off member only: its links to every other member are cut.
	m, mlinks, err := f.locker(ctx, 2)
	for j, l := range mlinks {
		if j != leader {
			l.Blackhole()
		}
	}
	if err == nil {
		wait := max(2*cfg.TTL, time.Second)
		mctx, mcancel := context.WithTimeout(ctx, wait)
		got, err := m.Acquire(mctx)
		mcancel()
		if err == nil {
			_ = got.Release(ctx)
			return fmt.Errorf("cluster-isolation: a client that reaches only node %d, the leader cut off from every other member, got the lock (token %d): a member without a majority must not grant — commit every grant through a quorum and serve it only from a leader that has confirmed it still leads (linearizable reads)", leader, got.Token())
		}
	}

	lease, err := acquireSoon(ctx, cfg, b)
	if err != nil {
		return fmt.Errorf("cluster-isolation: with node %d (the leader) cut off, a client that reaches every member: %w — the majority must elect a new leader and go on granting", leader, err)
	}
	during := lease.Token()
	_ = lease.Release(ctx)
	if during <= before {
		return fmt.Errorf("cluster-isolation: token %d after %d once leader node %d was cut off: tokens went back across the leader change — take tokens from the replicated state (a committed counter or revision), not from the leader's memory", during, before, leader)
	}
	if err := heal(); err != nil {
		return fmt.Errorf("heal the cluster: %w", err)
	}
	lease, err = acquireSoon(ctx, cfg, a)
	if err != nil {
		return fmt.Errorf("cluster-isolation: after the heal: %w", err)
	}
	after := lease.Token()
	_ = lease.Release(ctx)
	if after <= during {
		return fmt.Errorf("cluster-isolation: token %d after %d once node %d rejoined: tokens went back when the old leader came back — it must catch up from the new leader before it serves", after, during, leader)
	}
	return nil
}

func clusterWipe(t *testing.T, cfg Config) {
	f, cl := clusterFixture(t, cfg, "cluster-wipe")
	crasher, ok := registry.Service(f.backend).(harness.Crasher)
	if !ok {
		t.Skip("the cluster is not a harness.Crasher: a member cannot lose its data")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*cfg.ceiling())
	defer cancel()
	if err := f.checkWipe(ctx, t, cfg, cl, crasher); err != nil {
		t.Error(err)
	}
}

// checkWipe crashes a follower and restarts it without its data (a member that lost
// its disk): the quorum kept the state, so tokens must go on increasing. A cluster that
// refuses such a restart (Restart returns an error) says it does not survive it: the
// member is restarted with its data and the rule is skipped.
func (f *fixture) checkWipe(ctx context.Context, t *testing.T, cfg Config, cl harness.Cluster, crasher harness.Crasher) error {
	a, _ := f.mustLocker(ctx, 0)
	b, _ := f.mustLocker(ctx, 1)
	before, err := grants(ctx, 2, 0, a, b)
	if err != nil {
		return fmt.Errorf("before the wipe: %w", err)
	}
	lctx, lcancel := context.WithTimeout(ctx, 30*time.Second)
	leader, err := cl.Leader(lctx)
	lcancel()
	if err != nil {
		return fmt.Errorf("find the leader: %w", err)
	}
	i := (leader + 1) % cl.Nodes()
	if err := crasher.Crash(ctx, i); err != nil {
		return fmt.Errorf("Crash(node %d): %w", i, err)
	}
	if rerr := crasher.Restart(ctx, i, false); rerr != nil {
		if err := crasher.Restart(ctx, i, true); err != nil {
			return fmt.Errorf("node %d: a restart without its data was refused (%v), and one with its data failed: %w", i, rerr, err)
		}
		t.Skipf("the cluster refuses a member without its data (Restart(node %d, keepData=false): %v): it does not claim to survive a wipe", i, rerr)
	}
	lease, err := acquireSoon(ctx, cfg, b)
	if err != nil {
		return fmt.Errorf("cluster-wipe: after node %d lost its data and restarted: %w — the quorum must go on granting", i, err)
	}
	after := lease.Token()
	_ = lease.Release(ctx)
	if after <= before {
		return fmt.Errorf("cluster-wipe: tokens went back after node %d lost its data (Crash+Restart(keepData=false)): token %d after %d — a member that lost its disk must rejoin as a new member and catch up from the quorum before it serves", i, after, before)
	}
	return nil
}
