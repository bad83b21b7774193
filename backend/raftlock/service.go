package raftlock

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	hraft "github.com/hashicorp/raft"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/proc"
)

// Name is the backend's name as users type it.
const Name = "raft"

// Errors of the service's lifecycle.
var (
	ErrClosed = errors.New("raft lock: service closed")
	// ErrUnsafeRestart refuses Restart(i, keepData=false). A Raft node that lost its log
	// and vote and rejoins under the same identity can vote twice in a term and can help
	// elect a leader missing committed entries: the cluster may then lose committed
	// grants and hand out a token twice. The safe procedure is a membership change
	// (remove the old server, add a new one with a fresh ID), which this backend does not
	// model.
	ErrUnsafeRestart = errors.New("raft lock: restarting a node without its data is unsafe in Raft " +
		"(it may vote twice in a term and lose committed entries); only keepData=true is supported")
)

var (
	_ harness.Backend = (*service)(nil)
	_ harness.Cluster = (*service)(nil)
	_ harness.Crasher = (*service)(nil)
)

// service is a running raft lock service: N raft nodes in this process, each with a
// client API server on 127.0.0.1. It implements harness.Backend, harness.Cluster and
// harness.Crasher.
type service struct {
	cfg     config
	log     *logSetup
	nw      *network
	nodes   []*node
	ids     map[hraft.ServerID]int
	started time.Time

	life   sync.Mutex // serialises Crash, Restart and Close
	closed bool

	mu sync.RWMutex // guards node.inc

	closeOnce sync.Once
	closeErr  error

	evMu      sync.Mutex
	events    map[uint64]event
	conflicts []error
}

type node struct {
	idx     int
	logs    *hraft.InmemStore // log store and stable store: kept across crashes
	snaps   *hraft.InmemSnapshotStore
	apiAddr string
	inc     *incarnation // nil while crashed
	hold    io.Closer    // while crashed: keeps apiAddr's port (see proc.HoldPort)
}

// Start starts cfg.Nodes raft nodes, bootstraps them as one cluster and waits (until ctx
// ends) for a leader that has confirmed its leadership.
func Start(ctx context.Context, cfg config) (*service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	s := &service{
		cfg:     cfg,
		log:     newLogSetup(cfg),
		nw:      newNetwork(cfg.Nodes, cfg.RPCTimeout),
		ids:     make(map[hraft.ServerID]int, cfg.Nodes),
		events:  make(map[uint64]event),
		started: time.Now(),
	}
	var servers []hraft.Server
	lns := make([]net.Listener, cfg.Nodes)
	for i := range cfg.Nodes {
		ln, err := proc.ListenFree() // a restarted node binds it again
		if err != nil {
			for _, l := range lns[:i] {
				_ = l.Close()
			}
			return nil, fmt.Errorf("raft lock: listen: %w", err)
		}
		lns[i] = ln
		s.nodes = append(s.nodes, &node{
			idx:     i,
			logs:    hraft.NewInmemStore(),
			snaps:   hraft.NewInmemSnapshotStore(),
			apiAddr: ln.Addr().String(),
		})
		s.ids[nodeID(i)] = i
		servers = append(servers, hraft.Server{Suffrage: hraft.Voter, ID: nodeID(i), Address: nodeAddr(i)})
	}
	trans := make([]*faultTransport, cfg.Nodes)
	for i, n := range s.nodes {
		trans[i] = newFaultTransport(s.nw, i)
		err := hraft.BootstrapCluster(cfg.raftConfig(i, s.log), n.logs, n.logs, n.snaps, trans[i],
			hraft.Configuration{Servers: servers})
		if err != nil {
			for _, l := range lns {
				_ = l.Close()
			}
			return nil, fmt.Errorf("raft lock: bootstrap node %d: %w", i, err)
		}
	}
	for i := range trans {
		for j := range trans {
			if i != j {
				trans[i].inner.Connect(nodeAddr(j), trans[j].inner)
			}
		}
	}
	s.life.Lock()
	var startErr error
	for i := range s.nodes {
		if err := s.startNode(i, trans[i], lns[i]); err != nil {
			startErr = err
			for _, l := range lns[i+1:] {
				_ = l.Close()
			}
			break
		}
	}
	s.life.Unlock()
	if startErr != nil {
		_ = s.Close()
		return nil, startErr
	}
	leader, err := s.Leader(ctx)
	if err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("raft lock: no leader: %w", err)
	}
	s.log.slog.Info("raft lock service started", "nodes", cfg.Nodes, "leader", leader,
		"elapsed", time.Since(s.started), "endpoints", s.Endpoints())
	return s, nil
}

// startNode starts a new incarnation of node i on its stores, transport and listener.
// The caller holds s.life.
func (s *service) startNode(i int, tr *faultTransport, ln net.Listener) error {
	n := s.nodes[i]
	fsm := newFSM(func(ev event) { s.recordEvent(i, ev) })
	r, err := hraft.NewRaft(s.cfg.raftConfig(i, s.log), fsm, n.logs, n.logs, n.snaps, tr)
	if err != nil {
		_ = ln.Close()
		_ = tr.Close()
		return fmt.Errorf("raft lock: start node %d: %w", i, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	inc := &incarnation{
		svc:    s,
		idx:    i,
		raft:   r,
		fsm:    fsm,
		trans:  tr,
		clock:  s.cfg.nodeClock(i),
		ln:     ln,
		ctx:    ctx,
		cancel: cancel,
		served: make(chan struct{}),
	}
	inc.srv = &http.Server{
		Handler:           inc.handler(),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ErrorLog:          slog.NewLogLogger(s.log.slog.Handler(), slog.LevelDebug),
	}
	go func() {
		defer close(inc.served)
		_ = inc.srv.Serve(ln) // ErrServerClosed on stop
	}()
	s.mu.Lock()
	n.inc = inc
	s.mu.Unlock()
	return nil
}

// incarnation is one life of a node, from start to crash or close.
type incarnation struct {
	svc    *service
	idx    int
	raft   *hraft.Raft
	fsm    *fsm
	trans  *faultTransport
	clock  func() time.Time
	ln     net.Listener
	srv    *http.Server
	served chan struct{}
	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	stopping bool
	wg       sync.WaitGroup // API handlers and goroutines waiting on raft futures

	readyTerm atomic.Uint64 // the term in which a Barrier succeeded
}

// enter registers work on this incarnation; false once it is stopping.
func (inc *incarnation) enter() bool {
	inc.mu.Lock()
	defer inc.mu.Unlock()
	if inc.stopping {
		return false
	}
	inc.wg.Add(1)
	return true
}

func (inc *incarnation) leave() { inc.wg.Done() }

// await waits for a raft future until ctx ends. The future is waited on in a goroutine
// counted in inc.wg (the caller must be inside enter/leave): raft never answers some
// futures once it has shut down, so stop() lets every future resolve before shutdown.
func (inc *incarnation) await(ctx context.Context, f hraft.Future) error {
	ch := make(chan error, 1)
	inc.wg.Add(1)
	go func() {
		defer inc.wg.Done()
		ch <- f.Error()
	}()
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// stopFront makes the node unreachable for clients: no new work, handlers cancelled,
// API server closed.
func (inc *incarnation) stopFront() {
	inc.mu.Lock()
	inc.stopping = true
	inc.mu.Unlock()
	inc.cancel()
	_ = inc.srv.Close()
	<-inc.served
}

// drainTimeout bounds how long stopBack waits for pending raft futures; they resolve
// once the (now cut off) node steps down, i.e. within about LeaderLease.
const drainTimeout = 10 * time.Second

// stopBack lets pending raft futures resolve (the node must already be cut off from its
// peers), then shuts raft down.
func (inc *incarnation) stopBack() {
	lg := inc.svc.log.slog
	if !waitGroupTimeout(&inc.wg, drainTimeout) {
		lg.Warn("raft lock: pending raft futures did not resolve before shutdown", "node", inc.idx)
	}
	if err := inc.raft.Shutdown().Error(); err != nil {
		lg.Warn("raft lock: shutdown", "node", inc.idx, "err", err)
	}
	if !waitGroupTimeout(&inc.wg, drainTimeout) {
		lg.Error("raft lock: goroutines waiting on raft futures leaked", "node", inc.idx)
	}
}

func waitGroupTimeout(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// Name implements harness.Backend.
func (s *service) Name() string { return Name }

// Endpoints implements harness.Backend: node i's client API address (stable across
// crashes and restarts).
func (s *service) Endpoints() []string {
	out := make([]string, len(s.nodes))
	for i, n := range s.nodes {
		out[i] = n.apiAddr
	}
	return out
}

// Config returns the service's config with defaults applied.
func (s *service) Config() config { return s.cfg }

// NewLocker implements harness.Backend: a client for harness client id that reaches node
// i only through addrs[i].
func (s *service) NewLocker(_ context.Context, id int, addrs []string) (harness.Locker, error) {
	if len(addrs) != len(s.nodes) {
		return nil, fmt.Errorf("raft lock: NewLocker got %d addresses for %d nodes", len(addrs), len(s.nodes))
	}
	return NewLocker(s.cfg, id, addrs)
}

// Close implements harness.Backend: it stops every node and waits for every goroutine
// the service started. Safe to call twice.
func (s *service) Close() error {
	s.closeOnce.Do(func() {
		s.life.Lock()
		defer s.life.Unlock()
		s.closed = true
		s.mu.Lock()
		var incs []*incarnation
		for _, n := range s.nodes {
			if n.hold != nil {
				_ = n.hold.Close()
				n.hold = nil
			}
			if n.inc != nil {
				incs = append(incs, n.inc)
				n.inc = nil
			}
		}
		s.mu.Unlock()
		for _, inc := range incs {
			inc.stopFront()
		}
		s.nw.close() // every RPC fails: leaders step down and pending futures resolve
		var wg sync.WaitGroup
		for _, inc := range incs {
			wg.Go(inc.stopBack)
		}
		wg.Wait()
		s.log.slog.Info("raft lock service closed")
	})
	return s.closeErr
}

// Nodes implements harness.Cluster.
func (s *service) Nodes() int { return len(s.nodes) }

func (s *service) checkIndex(i int) error {
	if i < 0 || i >= len(s.nodes) {
		return fmt.Errorf("raft lock: node %d out of range 0..%d", i, len(s.nodes)-1)
	}
	return nil
}

func (s *service) incOf(i int) *incarnation {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.nodes[i].inc
}

func (s *service) liveIncs() []*incarnation {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []*incarnation
	for _, n := range s.nodes {
		if n.inc != nil {
			out = append(out, n.inc)
		}
	}
	return out
}

// Leader implements harness.Cluster: the index of a node that is leader and has just
// confirmed it with a quorum (VerifyLeader), waiting until ctx ends for one.
func (s *service) Leader(ctx context.Context) (int, error) {
	for {
		if i, ok := s.confirmedLeader(ctx); ok {
			return i, nil
		}
		s.life.Lock()
		closed := s.closed
		s.life.Unlock()
		if closed {
			return -1, ErrClosed
		}
		t := time.NewTimer(5 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return -1, fmt.Errorf("raft lock: waiting for a leader: %w", ctx.Err())
		case <-t.C:
		}
	}
}

func (s *service) confirmedLeader(ctx context.Context) (int, bool) {
	var cands []*incarnation
	for _, inc := range s.liveIncs() {
		if inc.raft.State() == hraft.Leader {
			cands = append(cands, inc)
		}
	}
	slices.SortFunc(cands, func(a, b *incarnation) int {
		return cmp.Compare(b.raft.CurrentTerm(), a.raft.CurrentTerm())
	})
	for _, inc := range cands {
		if !inc.enter() {
			continue
		}
		vctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
		err := inc.await(vctx, inc.raft.VerifyLeader())
		cancel()
		inc.leave()
		if err == nil {
			return inc.idx, true
		}
	}
	return -1, false
}

// Isolate implements harness.Cluster: every link between node i and the others drops
// messages, both ways.
func (s *service) Isolate(_ context.Context, i int) error {
	if err := s.checkIndex(i); err != nil {
		return err
	}
	s.nw.setNode(i, link{Kind: LinkDrop})
	s.log.slog.Info("raft lock: isolate", "node", i)
	return nil
}

// StallNode implements harness.Cluster: every message to and from node i is held until
// healed (or until the RPC's own timeout, Config.RPCTimeout).
func (s *service) StallNode(_ context.Context, i int) error {
	if err := s.checkIndex(i); err != nil {
		return err
	}
	s.nw.setNode(i, link{Kind: LinkStall})
	s.log.slog.Info("raft lock: stall", "node", i)
	return nil
}

// Heal implements harness.Cluster: every link passes again (crashed nodes stay down).
func (s *service) Heal(context.Context) error {
	s.nw.heal()
	s.log.slog.Info("raft lock: heal")
	return nil
}

// SetLink sets the mode of the directed link src -> dst.
func (s *service) SetLink(src, dst int, l link) error {
	if err := s.checkIndex(src); err != nil {
		return err
	}
	if err := s.checkIndex(dst); err != nil {
		return err
	}
	if l.Kind == LinkDelay && l.Delay <= 0 {
		return fmt.Errorf("raft lock: delay link needs a positive Delay")
	}
	s.nw.setLink(src, dst, l)
	return nil
}

// Partition drops every link between nodes of different groups (both ways) and lets
// links inside a group pass. Nodes in no group are isolated.
func (s *service) Partition(groups ...[]int) error {
	group := make([]int, len(s.nodes))
	for i := range group {
		group[i] = -1 - i // alone
	}
	for g, members := range groups {
		for _, i := range members {
			if err := s.checkIndex(i); err != nil {
				return err
			}
			group[i] = g
		}
	}
	s.nw.update(func() {
		for i := range s.nodes {
			for j := range s.nodes {
				if i == j || group[i] == group[j] {
					s.nw.links[i][j] = link{}
				} else {
					s.nw.links[i][j] = link{Kind: LinkDrop}
				}
			}
		}
	})
	return nil
}

// Links returns a copy of the link table: Links()[src][dst].
func (s *service) Links() [][]link { return s.nw.snapshot() }

// Crash implements harness.Crasher: node i stops at once. Its client API closes (clients
// see refused connections), its peers' messages fail, raft is shut down; its log,
// stable and snapshot stores are kept for Restart. Requests it was serving are answered
// "unknown" if at all.
func (s *service) Crash(_ context.Context, i int) error {
	if err := s.checkIndex(i); err != nil {
		return err
	}
	s.life.Lock()
	defer s.life.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.mu.Lock()
	inc := s.nodes[i].inc
	s.nodes[i].inc = nil
	s.mu.Unlock()
	if inc == nil {
		return fmt.Errorf("raft lock: node %d is already down", i)
	}
	inc.stopFront()
	s.nw.setDown(i, true)
	if h, err := proc.HoldPort(s.nodes[i].apiAddr); err != nil {
		s.log.slog.Warn("raft lock: cannot hold the crashed node's port", "node", i, "err", err)
	} else {
		s.nodes[i].hold = h
	}
	inc.stopBack()
	for _, other := range s.liveIncs() {
		other.trans.inner.Disconnect(nodeAddr(i))
	}
	s.log.slog.Info("raft lock: crashed", "node", i)
	return nil
}

// Restart implements harness.Crasher: node i starts again with the stores it had (a new
// raft.Raft, a new in-memory transport at the same raft address, and its client API on
// the same port). keepData=false is refused with ErrUnsafeRestart.
func (s *service) Restart(ctx context.Context, i int, keepData bool) error {
	if err := s.checkIndex(i); err != nil {
		return err
	}
	if !keepData {
		return fmt.Errorf("raft lock: restart node %d: %w", i, ErrUnsafeRestart)
	}
	s.life.Lock()
	defer s.life.Unlock()
	if s.closed {
		return ErrClosed
	}
	if s.incOf(i) != nil {
		return fmt.Errorf("raft lock: node %d is running; Crash it first", i)
	}
	n := s.nodes[i]
	ln, err := listenRetry(ctx, n.apiAddr)
	if err != nil {
		return fmt.Errorf("raft lock: restart node %d: %w", i, err)
	}
	if n.hold != nil {
		_ = n.hold.Close()
		n.hold = nil
	}
	tr := newFaultTransport(s.nw, i)
	for _, other := range s.liveIncs() {
		tr.inner.Connect(nodeAddr(other.idx), other.trans.inner)
		other.trans.inner.Connect(nodeAddr(i), tr.inner)
	}
	if err := s.startNode(i, tr, ln); err != nil {
		for _, other := range s.liveIncs() {
			other.trans.inner.Disconnect(nodeAddr(i))
		}
		return err
	}
	s.nw.setDown(i, false)
	s.log.slog.Info("raft lock: restarted", "node", i)
	return nil
}

// listenRetry listens on addr again, retrying briefly while the port is still busy.
func listenRetry(ctx context.Context, addr string) (net.Listener, error) {
	for {
		ln, err := net.Listen("tcp", addr)
		if err == nil {
			return ln, nil
		}
		t := time.NewTimer(20 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("listen on %s: %w (%v)", addr, ctx.Err(), err)
		case <-t.C:
		}
	}
}

func (s *service) recordEvent(node int, ev event) {
	s.evMu.Lock()
	defer s.evMu.Unlock()
	if old, ok := s.events[ev.Index]; ok {
		if old != ev {
			s.conflicts = append(s.conflicts, fmt.Errorf("index %d: node %d applied %+v, another node %+v",
				ev.Index, node, ev, old))
		}
		return
	}
	s.events[ev.Index] = ev
}

// Events returns every applied lock command seen by any node, in index order.
func (s *service) Events() []event {
	s.evMu.Lock()
	defer s.evMu.Unlock()
	out := make([]event, 0, len(s.events))
	for _, ev := range s.events {
		out = append(out, ev)
	}
	slices.SortFunc(out, func(a, b event) int { return cmp.Compare(a.Index, b.Index) })
	return out
}

// Grants returns every granted acquire, in token order.
func (s *service) Grants() []event {
	var out []event
	for _, ev := range s.Events() {
		if ev.Outcome == OutcomeGranted {
			out = append(out, ev)
		}
	}
	return out
}

// CheckSafety verifies that every node applied the same command at each index and that
// the applied commands obey the lock's rules (CheckEvents).
func (s *service) CheckSafety() error {
	s.evMu.Lock()
	conflicts := slices.Clone(s.conflicts)
	s.evMu.Unlock()
	return errors.Join(errors.Join(conflicts...), checkEvents(s.Events()))
}

// NodeState returns node i's local FSM state (possibly stale).
func (s *service) NodeState(i int) (state, error) {
	if err := s.checkIndex(i); err != nil {
		return state{}, err
	}
	inc := s.incOf(i)
	if inc == nil {
		return state{}, fmt.Errorf("raft lock: node %d is down", i)
	}
	return inc.fsm.State(), nil
}

// nodeStatus is a node's raft status.
type nodeStatus struct {
	Up           bool
	State        string // Follower, Candidate, Leader, Shutdown
	Term         uint64
	LastIndex    uint64
	CommitIndex  uint64
	AppliedIndex uint64
	// SnapshotIndex is the index of the node's latest snapshot (taken or installed).
	SnapshotIndex uint64
}

// Status returns node i's raft status.
func (s *service) Status(i int) (nodeStatus, error) {
	if err := s.checkIndex(i); err != nil {
		return nodeStatus{}, err
	}
	inc := s.incOf(i)
	if inc == nil {
		return nodeStatus{}, nil
	}
	r := inc.raft
	snap, _ := strconv.ParseUint(r.Stats()["last_snapshot_index"], 10, 64)
	return nodeStatus{Up: true, State: r.State().String(), Term: r.CurrentTerm(), LastIndex: r.LastIndex(),
		CommitIndex: r.CommitIndex(), AppliedIndex: r.AppliedIndex(), SnapshotIndex: snap}, nil
}

// Snapshot makes node i take a raft snapshot now (log compaction per TrailingLogs).
func (s *service) Snapshot(ctx context.Context, i int) error {
	if err := s.checkIndex(i); err != nil {
		return err
	}
	inc := s.incOf(i)
	if inc == nil || !inc.enter() {
		return fmt.Errorf("raft lock: node %d is down", i)
	}
	defer inc.leave()
	if err := inc.await(ctx, inc.raft.Snapshot()); err != nil {
		return fmt.Errorf("raft lock: snapshot node %d: %w", i, err)
	}
	return nil
}

// leaderHint is the node index r believes leads, or -1.
func (s *service) leaderHint(self int, r *hraft.Raft) int {
	_, id := r.LeaderWithID()
	i, ok := s.ids[id]
	if !ok || (i == self && r.State() != hraft.Leader) {
		return -1
	}
	return i
}
