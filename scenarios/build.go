package scenarios

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/history"
	etcdlock "github.com/fencecheck/fencecheck/harness/lease/etcd"
	"github.com/fencecheck/fencecheck/harness/lease/naive"
	raftlock "github.com/fencecheck/fencecheck/harness/lease/raft"
	"github.com/fencecheck/fencecheck/harness/resource/etcdtxn"
	"github.com/fencecheck/fencecheck/harness/resource/register"
	"github.com/fencecheck/fencecheck/nemesis"
)

// env is a started backend and resource, and what to close when the run ends.
type env struct {
	backend  harness.Backend
	resource harness.Resource
	closers  []func() error
	// clocks fencecheck owns: the lock server's (naive) or each node's (raft, FSM
	// stamps), and each client's.
	serverClock *nemesis.Clock
	nodeClocks  []*nemesis.Clock
	clientClock []*nemesis.Clock
	ttl         time.Duration
}

// clientNow reads client i's clock.
func (e *env) clientNow(i int) time.Time { return e.clientClock[i].Monotonic() }

// Close closes everything in reverse order of creation. Safe to call twice.
func (e *env) Close() error {
	var errs []error
	for i := len(e.closers) - 1; i >= 0; i-- {
		errs = append(errs, e.closers[i]())
	}
	e.closers = nil
	return errors.Join(errs...)
}

// build starts the spec's backend and resource. Lock-service logs go to outDir (if set).
func build(ctx context.Context, s Spec, outDir string) (_ *env, err error) {
	e := &env{serverClock: nemesis.NewClock(), ttl: s.TTL}
	for range s.Clients {
		e.clientClock = append(e.clientClock, nemesis.NewClock())
	}
	defer func() {
		if err != nil {
			_ = e.Close()
		}
	}()
	logFile := func(name string) (io.Writer, string, error) {
		if outDir == "" {
			return io.Discard, "", nil
		}
		path := filepath.Join(outDir, name)
		f, err := os.Create(path)
		if err != nil {
			return nil, "", err
		}
		e.closers = append(e.closers, f.Close)
		return f, path, nil
	}
	tempDir := func() (string, error) {
		dir, err := os.MkdirTemp("", "fencecheck-*")
		if err != nil {
			return "", err
		}
		e.closers = append(e.closers, func() error { return os.RemoveAll(dir) })
		return dir, nil
	}

	switch {
	case s.Backend == "naive" || strings.HasPrefix(s.Backend, "naive-"):
		cfg := naive.Config{
			TTL: s.TTL, Variant: naive.Variant(strings.TrimPrefix(strings.TrimPrefix(s.Backend, "naive"), "-")),
			Now: e.serverClock.Now, Mono: e.serverClock.Monotonic, ClientNow: e.clientNow,
		}
		if cfg.Variant == naive.Persisted {
			if cfg.Dir, err = tempDir(); err != nil {
				return nil, err
			}
		}
		b, err := naive.New(cfg)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrSpec, err)
		}
		e.backend = b
	case s.Backend == "etcd" && len(s.EtcdEndpoints) > 0:
		b, err := etcdlock.New(ctx, etcdlock.Config{Endpoints: s.EtcdEndpoints, TTL: s.TTL})
		if err != nil {
			// A bad or unreachable endpoint is the user's input.
			return nil, fmt.Errorf("%w: %w", ErrSpec, err)
		}
		e.backend = b
	case s.Backend == "etcd":
		dir, err := tempDir()
		if err != nil {
			return nil, err
		}
		_, logPath, err := logFile("etcd.log")
		if err != nil {
			return nil, err
		}
		cfg := etcdlock.Config{TTL: s.TTL}
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		b, err := etcdlock.StartBackend(cctx, etcdlock.ClusterConfig{Members: s.Members, Dir: dir, LogPath: logPath}, cfg)
		if err != nil {
			return nil, err
		}
		e.backend = b
	case s.Backend == "raft":
		w, _, err := logFile("raft.log")
		if err != nil {
			return nil, err
		}
		for range s.Members {
			e.nodeClocks = append(e.nodeClocks, nemesis.NewClock())
		}
		cfg := raftlock.Config{
			Nodes: s.Members, TTL: s.TTL, LogWriter: w,
			NodeClock:   func(i int) func() time.Time { return e.nodeClocks[i].Monotonic },
			ClientClock: func(i int) func() time.Time { return e.clientClock[i].Monotonic },
		}
		if err := cfg.Validate(); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrSpec, err)
		}
		b, err := raftlock.Start(ctx, cfg)
		if err != nil {
			return nil, err
		}
		e.backend = b
	case isService(s.Backend): // build_services.go (temporary wiring)
		b, err := buildService(ctx, s, logFile, tempDir)
		if err != nil {
			return nil, err
		}
		e.backend = b
	default:
		return nil, fmt.Errorf("%w: unknown backend %q", ErrSpec, s.Backend)
	}
	e.closers = append(e.closers, e.backend.Close)
	if t, ok := e.backend.(harness.Tokenless); ok && t.NoFencingToken() != "" && s.Resource != "unfenced" {
		return nil, fmt.Errorf("%w: backend %s with resource %s: %s", ErrSpec, s.Backend, s.Resource, t.NoFencingToken())
	}

	switch s.Resource {
	case "fenced", "unfenced", "toctou":
		r, err := register.New(register.Kind(s.Resource), s.Fence)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrSpec, err)
		}
		e.resource = r
	case "etcd-txn":
		e.resource = etcdtxn.New(e.backend.Endpoints())
	default: // the database resources (build_db.go); any other name is unknown
		if e.resource, err = buildDatabase(ctx, s, tempDir); err != nil {
			return nil, err
		}
	}
	e.closers = append(e.closers, e.resource.Close)
	return e, nil
}

// nodeFaults builds the node-level fault actions for a run's backend and clocks.
type nodeFaults struct {
	backend harness.Backend
	env     *env
}

func (n nodeFaults) action(name string) nemesis.Action {
	cluster, _ := n.backend.(harness.Cluster)
	crasher, _ := n.backend.(harness.Crasher)
	if pn, ok := n.backend.(harness.ProcessNodes); ok && cluster == nil {
		if a, ok := processAction(name, pn, crasher, n.env.ttl); ok { // build_services.go
			return a
		}
	}
	leader := func(ctx context.Context) (int, error) {
		if cluster == nil {
			return 0, nil // a single server
		}
		lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		return cluster.Leader(lctx)
	}
	node := func(i int) string { return fmt.Sprintf("node-%d", i) }
	switch name {
	case "leader-isolation":
		return nemesis.Action{
			Kind: name,
			Start: func(ctx context.Context, _ *nemesis.Nemesis, _ int) (string, string, error) {
				if cluster == nil {
					return "lock service", "", fmt.Errorf("backend %s is not a cluster fencecheck controls", n.backend.Name())
				}
				i, err := leader(ctx)
				if err != nil {
					return "lock service", "", err
				}
				return node(i), fmt.Sprintf("leader node %d cut off from every other node, both ways", i), cluster.Isolate(ctx, i)
			},
			Heal: func(ctx context.Context) error { return cluster.Heal(ctx) },
		}
	case "node-pause":
		var stalled []nemesis.Link
		return nemesis.Action{
			Kind: name,
			Start: func(ctx context.Context, nem *nemesis.Nemesis, _ int) (string, string, error) {
				if cluster == nil {
					return "lock service", "", fmt.Errorf("backend %s is not a cluster fencecheck controls", n.backend.Name())
				}
				i, err := leader(ctx)
				if err != nil {
					return "lock service", "", err
				}
				if err := cluster.StallNode(ctx, i); err != nil {
					return node(i), "", err
				}
				stalled = nem.NodeLinks(i)
				for _, l := range stalled {
					l.Stall()
				}
				return node(i), fmt.Sprintf("leader node %d paused: its peer links and all %d client links stall", i, len(stalled)), nil
			},
			Heal: func(ctx context.Context) error {
				for _, l := range stalled {
					l.Pass()
				}
				return cluster.Heal(ctx)
			},
		}
	case "crash":
		var crashed int
		_, single := n.backend.(*naive.Backend)
		return nemesis.Action{
			Kind: name,
			Start: func(ctx context.Context, _ *nemesis.Nemesis, _ int) (string, string, error) {
				if crasher == nil {
					return "lock service", "", fmt.Errorf("backend %s cannot be crashed by fencecheck", n.backend.Name())
				}
				i, err := leader(ctx)
				if err != nil {
					return "lock service", "", err
				}
				crashed = i
				if err := crasher.Crash(ctx, i); err != nil {
					return node(i), "", err
				}
				if single {
					// The only server: restart at once, so the lock is available again
					// while the holder is still paused — with whatever it kept on disk.
					if err := crasher.Restart(ctx, i, true); err != nil {
						return node(i), "", err
					}
					return node(i), "lock server crashed and restarted at once: the lease it held in memory is gone (and an in-memory counter with it)", nil
				}
				return node(i), fmt.Sprintf("leader node %d crashed; it restarts with its data when the pause heals", i), nil
			},
			Heal: func(ctx context.Context) error {
				if single || crasher == nil {
					return nil
				}
				return crasher.Restart(ctx, crashed, true)
			},
		}
	case "cluster-crash":
		return nemesis.Action{
			Kind: name,
			Start: func(ctx context.Context, _ *nemesis.Nemesis, _ int) (string, string, error) {
				if crasher == nil || cluster == nil {
					return "lock service", "", fmt.Errorf("backend %s cannot be crashed by fencecheck", n.backend.Name())
				}
				for i := range cluster.Nodes() {
					if err := crasher.Crash(ctx, i); err != nil {
						return node(i), "", err
					}
				}
				// Restart at once, so the lock is available again while the holder is
				// still paused; every node comes back with its log and snapshot.
				for i := range cluster.Nodes() {
					if err := crasher.Restart(ctx, i, true); err != nil {
						return node(i), "", err
					}
				}
				return "lock service", fmt.Sprintf("all %d nodes crashed and restarted with their data", cluster.Nodes()), nil
			},
		}
	case "skew":
		var skewed *nemesis.Clock
		return nemesis.Action{
			Kind: name,
			Start: func(ctx context.Context, _ *nemesis.Nemesis, _ int) (string, string, error) {
				target := "lock server"
				skewed = n.env.serverClock
				if len(n.env.nodeClocks) > 0 {
					i, err := leader(ctx)
					if err != nil {
						return "lock service", "", err
					}
					target, skewed = node(i), n.env.nodeClocks[i]
				}
				if err := skewed.SetRate(skewRate); err != nil {
					return target, "", err
				}
				return target, fmt.Sprintf("%s's clock runs %gx fast (its leases expire %gx early in real time)", target, skewRate, skewRate), nil
			},
			Heal: func(context.Context) error {
				skewed.Reset(false) // runs at the right speed again; like a slewing NTP, it keeps the lead it gained
				return nil
			},
		}
	case "clock-jump":
		c := n.env.serverClock
		wallTokens := n.backend.Name() == "naive-wallclock"
		return nemesis.Action{
			Kind: name,
			Start: func(_ context.Context, nem *nemesis.Nemesis, client int) (string, string, error) {
				if !wallTokens {
					c.Jump(-time.Hour)
					return "lock server", "wall clock stepped back 1h (tokens from a counter and expiry on the monotonic clock do not notice)", nil
				}
				prev, held, ok := lastTokens(nem.History(), client)
				if !ok || held-prev < 2 {
					c.Jump(-time.Hour)
					return "lock server", "wall clock stepped back 1h (no room between the last two grants to land in)", nil
				}
				at := time.Unix(0, prev+(held-prev)/2)
				c.Freeze(at)
				return "lock server", fmt.Sprintf("wall clock stepped back %v, to %s (between the last two grants, tokens %d and %d), and stands still",
					time.Duration(time.Now().UnixNano()-at.UnixNano()).Round(time.Millisecond), at.Format(time.RFC3339Nano), prev, held), nil
			},
			Heal: func(context.Context) error {
				c.Reset(true)
				return nil
			},
		}
	}
	return nemesis.Action{Kind: name, Start: func(context.Context, *nemesis.Nemesis, int) (string, string, error) {
		return "", "", fmt.Errorf("unknown node fault %q", name)
	}}
}

// skewRate is how much faster a skewed lock-service clock runs.
const skewRate = 20.0

// lastTokens returns the struck client's last granted token and the token its last read
// saw stored (the previous holder's): the two grants a stepped-back clock lands between.
func lastTokens(h *history.History, client int) (prev, held int64, ok bool) {
	var haveAcq, haveRead bool
	for i := len(h.Ops) - 1; i >= 0 && !(haveAcq && haveRead); i-- {
		o := h.Ops[i]
		if o.Client != client || o.Status != history.OK {
			continue
		}
		switch {
		case o.Kind == history.Read && !haveRead && !haveAcq:
			prev, haveRead = o.Token, true
		case o.Kind == history.Acquire && !haveAcq:
			held, haveAcq = o.Token, true
		}
	}
	return prev, held, haveAcq && haveRead
}
