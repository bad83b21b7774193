package zookeeper

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/harness"
)

// Backend is the "zookeeper" lock backend: servers it started (one standalone server
// or an ensemble), or an existing ensemble (Config.Servers).
type Backend struct {
	cfg       Config
	ens       *ensemble // nil for an external ensemble
	endpoints []string
	log       *slog.Logger

	mu      sync.Mutex   // serialises node faults
	stalled map[int]bool // servers Ensemble.StallNode stopped (guarded by mu)
	closeMu sync.Once
}

var (
	_ harness.Backend      = (*Backend)(nil)
	_ harness.ProcessNodes = (*Backend)(nil)
	_ harness.Crasher      = (*Backend)(nil)
)

// Start starts the servers cfg asks for (or checks the external ensemble answers) and
// returns the backend. Every server it started is stopped again if it fails.
func Start(ctx context.Context, cfg Config) (*Backend, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	b := &Backend{cfg: cfg, log: slog.New(slog.DiscardHandler)}
	if cfg.External() {
		b.endpoints = append([]string(nil), cfg.Servers...)
		if err := b.probe(ctx); err != nil {
			return nil, err
		}
		return b, nil
	}
	e, err := startEnsemble(ctx, cfg)
	if err != nil {
		return nil, err
	}
	b.ens = e
	for _, n := range e.nodes {
		b.endpoints = append(b.endpoints, n.clientAddr())
	}
	// One real session proves the servers grant the TTL asked for.
	if err := b.probe(ctx); err != nil {
		_ = e.Close()
		return nil, err
	}
	return b, nil
}

// probe opens and closes one session on the real addresses, checking the granted
// timeout, with a bound of its own.
func (b *Backend) probe(ctx context.Context) error {
	pctx, cancel := context.WithTimeout(ctx, max(5*time.Second, 4*b.cfg.TTL))
	defer cancel()
	// A plain dial first: "connection refused" says more than a session that never came.
	var dialErrs []error
	for _, a := range b.endpoints {
		var d net.Dialer
		c, err := d.DialContext(pctx, "tcp", a)
		if err != nil {
			dialErrs = append(dialErrs, err)
			continue
		}
		_ = c.Close()
	}
	if len(dialErrs) == len(b.endpoints) {
		return fmt.Errorf("zookeeper: no server answers at %v: %w", b.endpoints, dialErrs[0])
	}
	l := b.newLocker(b.endpoints)
	defer l.Close()
	s, err := l.open(pctx)
	if err != nil {
		return fmt.Errorf("zookeeper: %w", err)
	}
	l.drop(s)
	return nil
}

// ClockRate is how many times fast the started servers' clocks run (0: real time).
func (b *Backend) ClockRate() float64 {
	if b.ens == nil {
		return 0
	}
	return b.cfg.ClockRate
}

// Name implements harness.Backend: the backend's name for its token source.
func (b *Backend) Name() string {
	if b.cfg.Token == TokenSequence {
		return NameSequence
	}
	return Name
}

// Endpoints implements harness.Backend: the servers' client addresses.
func (b *Backend) Endpoints() []string { return append([]string(nil), b.endpoints...) }

// Config returns the configuration, defaults applied.
func (b *Backend) Config() Config { return b.cfg }

// NewLocker implements harness.Backend: a client whose sessions dial only addrs.
func (b *Backend) NewLocker(_ context.Context, _ int, addrs []string) (harness.Locker, error) {
	if len(addrs) != len(b.endpoints) {
		return nil, fmt.Errorf("%w: zookeeper: want %d addresses (one per server), got %d", harness.ErrNoEffect, len(b.endpoints), len(addrs))
	}
	return b.newLocker(addrs), nil
}

func (b *Backend) newLocker(addrs []string) *Locker {
	return &Locker{cfg: b.cfg, addrs: append([]string(nil), addrs...), log: b.log, sessions: map[*session]struct{}{}}
}

// Close implements harness.Backend: it stops every server it started. Safe to call
// twice.
func (b *Backend) Close() error {
	b.closeMu.Do(func() {
		if b.ens != nil {
			_ = b.ens.Close()
		}
	})
	return nil
}

func (b *Backend) node(i int) (*node, error) {
	if b.ens == nil {
		return nil, fmt.Errorf("zookeeper: the ensemble at %v is not one fencecheck started: node faults do not apply", b.endpoints)
	}
	if i < 0 || i >= len(b.ens.nodes) {
		return nil, fmt.Errorf("zookeeper: no node %d (of %d)", i, len(b.ens.nodes))
	}
	return b.ens.nodes[i], nil
}

// Nodes implements harness.ProcessNodes: the number of servers.
func (b *Backend) Nodes() int { return len(b.endpoints) }

// NodePID implements harness.ProcessNodes: node i's JVM (0 when fencecheck did not
// start it or it is down).
func (b *Backend) NodePID(i int) int {
	n, err := b.node(i)
	if err != nil {
		return 0
	}
	p := n.process()
	if p == nil {
		return 0
	}
	if exited, _ := p.Exited(); exited {
		return 0
	}
	return p.PID()
}

// PauseNode implements harness.ProcessNodes: SIGSTOP to node i's JVM.
func (b *Backend) PauseNode(_ context.Context, i int) error {
	n, err := b.node(i)
	if err != nil {
		return err
	}
	return n.process().Pause()
}

// ResumeNode implements harness.ProcessNodes: SIGCONT to node i's JVM.
func (b *Backend) ResumeNode(_ context.Context, i int) error {
	n, err := b.node(i)
	if err != nil {
		return err
	}
	return n.process().Resume()
}

// Crash implements harness.Crasher: SIGKILL to node i's JVM (its whole process
// group), waiting until it is gone.
func (b *Backend) Crash(_ context.Context, i int) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.node(i)
	if err != nil {
		return err
	}
	return n.process().Kill()
}

// Restart implements harness.Crasher: start node i again on the same ports and wait
// until it serves. keepData=false first deletes its snapshots and transaction logs
// (its myid stays): a server that lost its disk.
func (b *Backend) Restart(ctx context.Context, i int, keepData bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.node(i)
	if err != nil {
		return err
	}
	if p := n.process(); p != nil {
		if exited, _ := p.Exited(); !exited {
			return fmt.Errorf("zookeeper: node %d (pid %d) is still running", i, p.PID())
		}
	}
	if !keepData {
		if err := os.RemoveAll(filepath.Join(n.dir, "version-2")); err != nil {
			return err
		}
	}
	return n.start(ctx, b.cfg.Java, true)
}
