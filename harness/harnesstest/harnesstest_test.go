package harnesstest

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/lease/etcd"
	"github.com/fencecheck/fencecheck/harness/lease/etcd/etcdtest"
	"github.com/fencecheck/fencecheck/harness/lease/naive"
	raftlock "github.com/fencecheck/fencecheck/harness/lease/raft"
	"github.com/fencecheck/fencecheck/harness/registry"
)

func TestMain(m *testing.M) { os.Exit(etcdtest.VerifyNoLeaks(m)) }

// Every built-in backend meets the contract.
func TestBuiltinBackends(t *testing.T) {
	for _, d := range append(naive.Descriptors()[:1], etcd.Descriptor(), raftlock.Descriptor()) {
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			Descriptor(t, d)
		})
	}
}

// bypass dials the real servers whatever addresses it is given: faults cannot reach it.
type bypass struct{ harness.Backend }

func (b bypass) NewLocker(ctx context.Context, id int, _ []string) (harness.Locker, error) {
	return b.Backend.NewLocker(ctx, id, b.Endpoints())
}

// frozen hands out the same token on every grant.
type frozen struct{ harness.Locker }

func (f frozen) Acquire(ctx context.Context) (harness.Lease, error) {
	l, err := f.Locker.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	return frozenLease{l}, nil
}

type frozenLease struct{ harness.Lease }

func (frozenLease) Token() int64 { return 7 }

// The checks can fail: a client that bypasses its addresses and tokens that do not
// increase are caught.
func TestChecksCatchBrokenBackends(t *testing.T) {
	d := naive.Descriptors()[0]
	cfg := Config{TTL: 500e6, Start: func(ctx context.Context, t *testing.T) (harness.Backend, error) {
		b, err := d.Start(ctx, envFor(t, 500e6))
		if err != nil {
			return nil, err
		}
		return bypass{b}, nil
	}}
	f := start(t, cfg)
	ctx := context.Background()
	err := f.checkDials(ctx, cfg)
	if err == nil || !strings.Contains(err.Error(), "no connection through the proxies") {
		t.Fatalf("a bypassing client: got %v, want the no-connection error", err)
	}

	g := start(t, Config{TTL: 500e6, Start: func(ctx context.Context, t *testing.T) (harness.Backend, error) {
		return d.Start(ctx, envFor(t, 500e6))
	}})
	a, _ := g.mustLocker(ctx, 0)
	b, _ := g.mustLocker(ctx, 1)
	err = checkTokens(ctx, frozen{a}, frozen{b})
	if err == nil || !strings.Contains(err.Error(), "must strictly increase") {
		t.Fatalf("frozen tokens: got %v, want the strictly-increase error", err)
	}
}

// A Shape that states other capabilities than the started values have is caught, with
// every differing field on one line.
func TestShapeMustAgree(t *testing.T) {
	d := naive.Descriptors()[0]
	f := start(t, Config{TTL: 500e6, Start: func(ctx context.Context, t *testing.T) (harness.Backend, error) {
		return d.Start(ctx, envFor(t, 500e6))
	}})
	ctx := context.Background()
	if err := f.checkShape(ctx, d.ShapeOf(registry.Settings{Members: 1}), 1); err != nil {
		t.Fatalf("naive's own Shape: %v", err)
	}
	err := f.checkShape(ctx, registry.Shape{}, 1)
	if err == nil {
		t.Fatal("an empty Shape for naive's started values was not caught")
	}
	for _, want := range []string{"Crasher: Shape false, started true", "KeyedLocker: Shape false, started true", "Expiring: Shape false, started true"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v: does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "Cluster:") {
		t.Errorf("%v: want one line naming only the differing fields", err)
	}
}
