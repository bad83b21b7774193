package harnesstest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/backend/etcd"
	"github.com/fencecheck/fencecheck/backend/etcd/etcdtest"
	"github.com/fencecheck/fencecheck/backend/naive"
	raftlock "github.com/fencecheck/fencecheck/backend/raftlock"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/registry"
)

func TestMain(m *testing.M) { os.Exit(etcdtest.VerifyNoLeaks(m)) }

// The built-in backends meet the contract (the others run it in their own packages).
func TestBuiltinBackends(t *testing.T) {
	for _, d := range append(naive.Descriptors()[:3], etcd.Descriptor(), raftlock.Descriptor()) { // not naive-32bit: it wraps by design
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
	err = checkTokens(ctx, t.Logf, frozen{a}, frozen{b})
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
func memlockConfig(persist, lie, declared bool) Config {
	const ttl = 300 * time.Millisecond
	return Config{TTL: ttl, TokensResetOnCrash: declared, Start: func(context.Context, *testing.T) (harness.Backend, error) {
		return startMemlock(ttl, persist, lie)
	}}
}

// The crash rule: a counter lost on a restart fails, and says so; a declaration of
// that loss must be true.
func TestCrashRule(t *testing.T) {
	for _, tc := range []struct {
		name              string
		persist, declared bool
		want              []string // "" : passes
	}{
		{"in-memory counter", false, false, []string{"tokens-survive-crash", "tokens went back after Crash+Restart(keepData)", "persist the token counter (fsync) before granting"}},
		{"persisted counter", true, false, nil},
		{"in-memory counter, declared", false, true, nil},
		{"persisted counter, declared lost", true, true, []string{"tokens-reset-on-crash", "declares TokensResetOnCrash", "drop the declaration"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := memlockConfig(tc.persist, false, tc.declared)
			f := start(t, cfg)
			ctx, cancel := context.WithTimeout(context.Background(), cfg.ceiling())
			defer cancel()
			a, _ := f.mustLocker(ctx, 0)
			b, _ := f.mustLocker(ctx, 1)
			err := f.checkCrash(ctx, cfg, a, b)
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			for _, w := range tc.want {
				require.Contains(t, err.Error(), w)
			}
			t.Log(err)
		})
	}
}

// The expiry rule: a lease whose ValidUntil outlives its grant on the service fails,
// and says what to fix.
func TestExpiryRule(t *testing.T) {
	for _, lie := range []bool{false, true} {
		t.Run(fmt.Sprintf("lie=%v", lie), func(t *testing.T) {
			cfg := memlockConfig(true, lie, false)
			f := start(t, cfg)
			ctx, cancel := context.WithTimeout(context.Background(), 2*cfg.ceiling())
			defer cancel()
			err := f.checkExpiry(ctx, cfg)
			if !lie {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, "a careful client would write with a lease the service had already given away")
			t.Log(err)
		})
	}
}

// A user's backend that keeps its counter passes the whole suite (the cluster rules
// skip: it is no cluster).
func TestWholeSuiteOnAUserBackend(t *testing.T) {
	Backend(t, memlockConfig(true, false, false))
}

// brokenEnv makes TestBrokenUserBackend run: the suite on a backend that loses its
// counter on a restart, in a child test process (TestSuiteFailsOnALostCounter).
const brokenEnv = "FENCECHECK_HARNESSTEST_BROKEN"

func TestBrokenUserBackend(t *testing.T) {
	if os.Getenv(brokenEnv) == "" {
		t.Skip("run by TestSuiteFailsOnALostCounter in a child process")
	}
	Backend(t, memlockConfig(false, false, false))
}

// A backend whose token counter resets on restart fails the suite, and the failure
// says so: the whole suite in a child test process, as a user's `go test` runs it.
func TestSuiteFailsOnALostCounter(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestBrokenUserBackend$", "-test.count=1")
	cmd.Env = append(os.Environ(), brokenEnv+"=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "the suite passed a backend that loses its counter:\n%s", out)
	require.Contains(t, string(out), "--- FAIL: TestBrokenUserBackend/tokens-across-crash")
	require.Contains(t, string(out), "tokens went back after Crash+Restart(keepData) of node 0: token 1 after 3 — persist the token counter (fsync) before granting")
	require.NotContains(t, string(out), "--- FAIL: TestBrokenUserBackend/tokens-increase", "only the crash rule may fail")
}

// WaitRenewed returns at the first renewal confirmed after it was called: the lease's
// end has moved on, and the lease is still held.
func TestWaitRenewed(t *testing.T) {
	m, err := startMemlock(300*time.Millisecond, false, false)
	require.NoError(t, err)
	defer func() { require.NoError(t, m.Close()) }()
	le := Acquire(t, NewLocker(t, m, 0, m.Endpoints()...))
	was := le.(harness.Expiring).ValidUntil()
	WaitRenewed(t, le)
	require.True(t, le.(harness.Expiring).ValidUntil().After(was))
	select {
	case <-le.Lost():
		t.Fatal("lost while renewed")
	default:
	}
	ReleaseOnce(t, le)
}

// clusterRulesEnv makes TestClusterRulesOnAUserBackend run, in a child process with -v
// (TestClusterSkipsSayTheirRule), so that its skip messages can be read.
const clusterRulesEnv = "FENCECHECK_HARNESSTEST_CLUSTER_SKIPS"

func TestClusterRulesOnAUserBackend(t *testing.T) {
	if os.Getenv(clusterRulesEnv) == "" {
		t.Skip("run by TestClusterSkipsSayTheirRule in a child process")
	}
	Backend(t, memlockConfig(true, false, false))
}

// Each cluster rule a backend that is no cluster skips says what that rule needs a
// majority for, not another rule's reason.
func TestClusterSkipsSayTheirRule(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestClusterRulesOnAUserBackend$/^cluster-", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), clusterRulesEnv+"=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, tc := range []struct{ rule, want, not string }{
		{"cluster-isolation", "no member to cut off with a majority left", "restart without its data"},
		{"cluster-wipe", "no follower to restart without its data with a majority left", "cut off"},
	} {
		name := "TestClusterRulesOnAUserBackend/" + tc.rule
		require.Contains(t, string(out), "--- SKIP: "+name+" ", "%s did not skip", tc.rule)
		// The subtest's own lines follow its RUN line, indented.
		m := regexp.MustCompile(`=== RUN   ` + regexp.QuoteMeta(name) + `\n((?:    .*\n)*)`).FindStringSubmatch(string(out))
		require.NotNil(t, m, "%s:\n%s", tc.rule, out)
		require.Contains(t, m[1], "not a harness.Cluster of 3 nodes or more: "+tc.want, tc.rule)
		require.NotContains(t, m[1], tc.not, tc.rule)
	}
}

// DescriptorWith starts the descriptor with the settings given: its options by name
// (and, not given, from their environment variables, as in a run) and its TTL.
func TestDescriptorWith(t *testing.T) {
	const ttl = 300 * time.Millisecond
	var (
		mu   sync.Mutex
		seen []string
	)
	d := registry.Backend{
		Name:    "memlock",
		Meaning: "a user's lock",
		Options: []registry.Option{{Name: "memlock-mode", Usage: "a setting of the user's", Env: "FENCECHECK_TEST_MEMLOCK_MODE"}},
		Lifecycle: registry.Lifecycle{
			Shape: func(registry.Settings) registry.Shape {
				return registry.Shape{Backend: (*memlock)(nil), Locker: (*memLocker)(nil), Lease: (*memLease)(nil)}
			},
			Start: func(_ context.Context, env registry.Env) (harness.Backend, error) {
				mu.Lock()
				seen = append(seen, fmt.Sprintf("%s %v", env.Option("memlock-mode"), env.TTL))
				mu.Unlock()
				return startMemlock(env.TTL, true, false)
			},
		},
	}
	took := func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := slices.Compact(slices.Clone(seen))
		seen = nil
		return out
	}
	t.Run("given", func(t *testing.T) {
		DescriptorWith(t, d, registry.Settings{TTL: ttl, Options: map[string]string{"memlock-mode": "given"}})
	})
	require.Equal(t, []string{"given 300ms"}, took())
	t.Setenv("FENCECHECK_TEST_MEMLOCK_MODE", "from-env")
	t.Run("environment", func(t *testing.T) {
		DescriptorWith(t, d, registry.Settings{TTL: ttl})
	})
	require.Equal(t, []string{"from-env 300ms"}, took())
}
