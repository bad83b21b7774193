// Package runner runs one workload: it wires every client to the backend and the
// resource through its own fault-proxy links, lets the nemesis strike, stops the clients,
// heals everything, takes the final reads and returns the recorded history.
package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/harness/nemesis"
	"github.com/fencecheck/fencecheck/harness/nemesis/proxy"
)

// Config is one run. Backend and Resource are started by the caller, who also closes them.
type Config struct {
	// Run is recorded as the history's "run" object.
	Run      history.Run
	Backend  harness.Backend
	Resource harness.Resource
	// Lockers, when set, makes the clients' lockers instead of Backend (client hosts:
	// Backend's own lockers run as processes of their own); it may fail the run like
	// Backend (harness.Failing).
	Lockers harness.Backend
	// Clients is the number of harness clients (default 3).
	Clients int
	// Duration is the least time the workload runs. The run goes on until every fault
	// has fired and healed, plus Tail, and until MinGrants acquires were granted, but
	// never past Duration+Limit after the clients' first answer (the first op that
	// returned: a lock client's start-up, an interpreter's or a JVM's, which a loaded
	// machine stretches, does not count against the ceiling), and never past
	// Duration+2×Limit in all.
	Duration time.Duration
	Tail     time.Duration
	Limit    time.Duration
	// MinGrants bounds the workload by events rather than by the machine's speed: a run
	// that needs so many grants (a counter that must wrap, figures over enough grants)
	// goes on until they were made, however slow the machine (0: no such bound).
	MinGrants int
	// MaxOps, if set, ends the workload as soon as that many operations were called
	// and every fault has fired and healed, before Duration and without Tail.
	MaxOps int
	Faults []nemesis.ClientFault
	// OpTimeout bounds each read, write and release; AcquireTimeout each acquire.
	OpTimeout      time.Duration
	AcquireTimeout time.Duration
	// Think is the longest pause between one client's critical sections.
	Think time.Duration
	// Careful clients check their lease by their own clock (ClientNow) with Margin to
	// spare before each write.
	Careful bool
	Margin  time.Duration
	// Heeding clients skip a write once their lease's Lost signal has closed.
	Heeding   bool
	ClientNow func(client int) time.Time
	Logger    *slog.Logger
	// Keys > 1: each critical section picks one of Keys independent locks and register
	// cells (harness.KeyedLocker, harness.KeyedResourceClient; others refuse).
	Keys int
	// ValueTag is appended to every written value (harness.Worker.ValueTag).
	ValueTag string
	// Spill, when its Head is set, writes a long history to disk as it goes, as a
	// segmented history at Spill.Head (history.Spill): then Run returns a history with
	// its run and faults but nil Ops, and the ops are read from the head.
	Spill history.Spill
}

func (c *Config) defaults() error {
	if c.Backend == nil || c.Resource == nil {
		return errors.New("runner: a backend and a resource are required")
	}
	if c.Clients == 0 {
		c.Clients = 3
	}
	if c.Clients < 1 || c.Clients > 64 {
		return fmt.Errorf("runner: clients must be between 1 and 64, got %d", c.Clients)
	}
	if c.Duration <= 0 {
		return fmt.Errorf("runner: duration must be positive, got %v", c.Duration)
	}
	if c.MinGrants < 0 {
		return fmt.Errorf("runner: min grants must not be negative, got %d", c.MinGrants)
	}
	if c.OpTimeout <= 0 {
		c.OpTimeout = 5 * time.Second
	}
	if c.AcquireTimeout <= 0 {
		c.AcquireTimeout = 5 * time.Second
	}
	if c.Limit <= 0 {
		c.Limit = 30 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Run runs the workload and returns its history.
func Run(ctx context.Context, cfg Config) (*history.History, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	// A backend whose clients can break (harness.Failing) ends the run at once.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lockers := cfg.Backend
	if cfg.Lockers != nil {
		lockers = cfg.Lockers
	}
	var fails []harness.Failing
	for _, b := range []harness.Backend{cfg.Backend, cfg.Lockers} {
		if f, ok := b.(harness.Failing); ok && b != nil {
			fails = append(fails, f)
		}
	}
	for _, f := range fails {
		go func() {
			select {
			case <-f.Failed():
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	rec := history.NewRecorder()
	if cfg.Spill.Head != "" {
		rec.SpillTo(cfg.Spill, cfg.Run)
	}
	if r, ok := cfg.Resource.(interface{ RecordEffects(*history.Recorder) }); ok {
		r.RecordEffects(rec) // side effects (outbox/direct resources) go into the history
	}
	nem, err := nemesis.New(rec, cfg.Faults...)
	if err != nil {
		return nil, err
	}
	var grants, answered atomic.Int64 // answered: the run time of the first op that returned
	rec.Watch(func(op history.Op) {
		if op.Kind == history.Acquire && op.Status == history.OK {
			grants.Add(1)
		}
		if op.Return != nil {
			answered.CompareAndSwap(0, max(*op.Return, 1))
		}
	})
	var links []*proxy.Link
	defer func() {
		for _, l := range links {
			_ = l.Close()
		}
	}()
	proxied := func(client int, toLock bool, targets []string) ([]string, error) {
		addrs := make([]string, len(targets))
		for i, t := range targets {
			l, err := proxy.New(t)
			if err != nil {
				return nil, err
			}
			links = append(links, l)
			nem.AddLinks(client, toLock, l)
			addrs[i] = l.Addr()
		}
		return addrs, nil
	}

	workers := make([]*harness.Worker, cfg.Clients)
	defer func() {
		for _, w := range workers {
			if w == nil {
				continue
			}
			if w.Locker != nil {
				_ = w.Locker.Close()
			}
			if w.Resource != nil {
				_ = w.Resource.Close()
			}
		}
	}()
	for i := range workers {
		lockAddrs, err := proxied(i, true, cfg.Backend.Endpoints())
		if err != nil {
			return nil, fmt.Errorf("client %d: %w", i, err)
		}
		resAddrs, err := proxied(i, false, cfg.Resource.Endpoints())
		if err != nil {
			return nil, fmt.Errorf("client %d: %w", i, err)
		}
		w := &harness.Worker{
			ID: i, Gate: nem.Gate(i), Rec: rec,
			OpTimeout: cfg.OpTimeout, AcquireTimeout: cfg.AcquireTimeout,
			Think:   cfg.Think,
			Careful: cfg.Careful, Margin: cfg.Margin, Heeding: cfg.Heeding,
			// Each client's think times come from the seed, so the workload is reproducible.
			Rand: rand.New(rand.NewPCG(uint64(cfg.Run.Seed), uint64(i))),
			Keys: cfg.Keys, ValueTag: cfg.ValueTag,
		}
		if cfg.MaxOps > 0 {
			w.Done = func() bool { return rec.Ops() >= cfg.MaxOps && !nem.Pending() && !nem.Active() }
		}
		if cfg.ClientNow != nil {
			w.Now = func() time.Time { return cfg.ClientNow(i) }
		}
		workers[i] = w
		if w.Locker, err = lockers.NewLocker(ctx, i, lockAddrs); err != nil {
			return nil, fmt.Errorf("client %d: lock client: %w", i, err)
		}
		nem.AddLocker(i, w.Locker)
		if w.Resource, err = cfg.Resource.NewClient(ctx, i, resAddrs, w.Gate); err != nil {
			return nil, fmt.Errorf("client %d: resource client: %w", i, err)
		}
		if cfg.Keys > 1 {
			if err := harness.CheckKeyed(cfg.Backend.Name(), w.Locker, cfg.Resource.Name(), w.Resource); err != nil {
				return nil, fmt.Errorf("runner: --keys %d: %w", cfg.Keys, err)
			}
		}
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.Run(ctx, stop)
		}()
	}
	cfg.Logger.Info("workload started", "clients", cfg.Clients, "duration", cfg.Duration, "min_grants", cfg.MinGrants)
	waitForEnd(ctx, cfg, nem, grants.Load, func() time.Duration { return time.Duration(answered.Load()) }, time.Duration(rec.Now()), rec.Ops)
	close(stop)
	nem.Heal()
	wg.Wait()

	// Final reads, after every fault has healed, so a late stale write is seen.
	for _, w := range workers {
		w.FinalRead(ctx)
	}
	h, spilled, err := rec.Finish(cfg.Run)
	cfg.Logger.Info("run finished", "ops", rec.Ops(), "faults", len(h.Faults), "spilled", spilled, "elapsed", time.Duration(rec.Now()))
	if err != nil {
		return h, fmt.Errorf("writing the history: %w", err)
	}
	for _, f := range fails {
		if f.Err() != nil {
			return h, f.Err()
		}
	}
	return h, ctx.Err()
}

// waitForEnd returns once the workload has run for Duration, every fault has fired and
// healed, Tail has passed since, and grants() has reached MinGrants; or at the ceiling,
// Duration+Limit after the first answer (answered: its run time, 0 while none; begun: the
// workload's start in run time), at most Limit in; or when ctx ends.
// With MaxOps, it returns once ops() has reached it with every fault healed.
func waitForEnd(ctx context.Context, cfg Config, nem *nemesis.Nemesis, grants func() int64, answered func() time.Duration, begun time.Duration, ops func() int) {
	start := time.Now()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var quietSince time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		el := time.Since(start)
		first := cfg.Limit // no answer yet: the ceiling's clock starts at Limit at the latest
		if a := answered(); a > 0 {
			first = min(max(a-begun, 0), cfg.Limit)
		}
		if el >= first+cfg.Duration+cfg.Limit {
			if g := grants(); g < int64(cfg.MinGrants) {
				cfg.Logger.Warn("run hit its time limit before its grants were made", "grants", g, "min_grants", cfg.MinGrants)
			} else {
				cfg.Logger.Warn("run hit its time limit with faults pending or active")
			}
			return
		}
		if nem.Pending() || nem.Active() {
			quietSince = time.Time{}
			continue
		}
		if cfg.MaxOps > 0 && ops() >= cfg.MaxOps {
			return
		}
		if quietSince.IsZero() {
			quietSince = time.Now()
		}
		if el >= cfg.Duration && time.Since(quietSince) >= cfg.Tail && grants() >= int64(cfg.MinGrants) {
			return
		}
	}
}
