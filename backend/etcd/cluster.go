package etcd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/types"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/proc"
)

// ErrClosed is returned by a Cluster's methods after Close.
var ErrClosed = errors.New("etcd: cluster is closed")

// ClusterConfig configures an embedded etcd cluster.
type ClusterConfig struct {
	// Members is the number of members: 1 or 3. Zero means 1.
	Members int
	// Dir is the root of the members' data directories (required). Member i keeps its
	// data in Dir/m<i>, which must be absent or empty. Close removes nothing.
	Dir string
	// LogPath is the file etcd's zap logs are appended to; "" discards them. They never
	// go to the terminal.
	LogPath string
	// TickMs is the Raft heartbeat interval in milliseconds (default 10).
	TickMs int
	// ElectionMs is the Raft election timeout in milliseconds (default 100, at least
	// 5×TickMs).
	ElectionMs int
}

func (c ClusterConfig) withDefaults() ClusterConfig {
	if c.Members == 0 {
		c.Members = 1
	}
	if c.TickMs == 0 {
		c.TickMs = 10
	}
	if c.ElectionMs == 0 {
		c.ElectionMs = 100
	}
	return c
}

// Validate checks the configuration (after defaults: zero Members, TickMs, ElectionMs
// mean 1, 10 and 100).
func (c ClusterConfig) Validate() error {
	c = c.withDefaults()
	if c.Members != 1 && c.Members != 3 {
		return fmt.Errorf("etcd: cluster Members must be 1 or 3, got %d", c.Members)
	}
	if c.Dir == "" {
		return errors.New("etcd: cluster Dir is required (the data directory root, e.g. t.TempDir())")
	}
	if c.TickMs < 1 {
		return fmt.Errorf("etcd: TickMs must be positive, got %d", c.TickMs)
	}
	if c.ElectionMs < 5*c.TickMs {
		// embed rejects it too, with a less direct message.
		return fmt.Errorf("etcd: ElectionMs (%d) must be at least 5×TickMs (%d)", c.ElectionMs, 5*c.TickMs)
	}
	if c.ElectionMs > 50000 {
		return fmt.Errorf("etcd: ElectionMs must be at most 50000, got %d", c.ElectionMs)
	}
	return nil
}

// MinTTL is the shortest lease TTL the cluster's members grant: etcd raises any shorter
// TTL to ceil(1.5 × election timeout), in whole seconds.
func (c ClusterConfig) MinTTL() time.Duration {
	c = c.withDefaults()
	ms := (3*(c.ElectionMs/c.TickMs)/2)*c.TickMs + 999
	return time.Duration(ms/1000) * time.Second
}

// Cluster is an embedded etcd cluster on 127.0.0.1. It implements harness.Cluster and
// harness.Crasher. Node i is the member behind Endpoints()[i].
type Cluster struct {
	cfg    ClusterConfig
	token  string // InitialClusterToken, the same on every member
	logger *zap.Logger
	logf   *os.File

	mu      sync.Mutex
	members []*member
	// cut[[2]int{a, b}]: member a drops every message to (and stream message from) b.
	cut map[[2]int]bool
	// paused[a]: member a's transport is paused (PauseSending).
	paused map[int]bool
	closed bool

	closeOnce sync.Once
}

type member struct {
	name      string
	dir       string
	clientURL url.URL
	peerURL   url.URL
	e         *embed.Etcd // nil while crashed
	id        types.ID
}

var _ harness.Cluster = (*Cluster)(nil)
var _ harness.Crasher = (*Cluster)(nil)

// StartCluster starts an embedded etcd cluster on 127.0.0.1 ephemeral ports and waits
// until every member is ready and they agree on a leader, or ctx ends. Measured on a
// 2-core machine with -race: 1 member ready in 50–300ms, 3 members in 150–850ms
// (a few seconds when the machine is saturated); Close takes about 1s (etcd waits up
// to 1s for its peer HTTP server to drain).
//
// With the default 10ms tick and 100ms election timeout, a saturated machine can miss
// heartbeats and change leader spuriously; raise ElectionMs for long, loaded runs.
func StartCluster(ctx context.Context, cfg ClusterConfig) (*Cluster, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	c := &Cluster{cfg: cfg, cut: map[[2]int]bool{}, paused: map[int]bool{}}
	if err := c.openLog(); err != nil {
		return nil, err
	}
	for i := 0; i < cfg.Members; i++ {
		name := fmt.Sprintf("m%d", i)
		dir := filepath.Join(cfg.Dir, name)
		if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
			c.closeLog()
			return nil, fmt.Errorf("etcd: member data dir %s is not empty (give each cluster its own Dir)", dir)
		}
		c.members = append(c.members, &member{name: name, dir: dir})
	}
	// Reserved ports can be taken by someone else between the reservation and etcd's
	// bind; start again on fresh ports then.
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		err = c.start(ctx)
		if err == nil || !errors.Is(err, syscall.EADDRINUSE) || ctx.Err() != nil {
			break
		}
		for _, m := range c.members {
			_ = os.RemoveAll(m.dir) // ours: created by this attempt
		}
	}
	if err != nil {
		c.closeLog()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) openLog() error {
	if c.cfg.LogPath == "" {
		c.logger = zap.NewNop()
		return nil
	}
	f, err := os.OpenFile(c.cfg.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("etcd: open log file: %w", err)
	}
	enc := zap.NewProductionEncoderConfig()
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	core := zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.Lock(f), zap.InfoLevel)
	// Write errors (a late line after Close) must not reach the terminal either.
	c.logger = zap.New(core, zap.ErrorOutput(zapcore.AddSync(io.Discard)))
	c.logf = f
	return nil
}

func (c *Cluster) closeLog() {
	if c.logf != nil {
		_ = c.logger.Sync()
		_ = c.logf.Close()
	}
}

// start reserves ports, starts every member and waits for readiness.
func (c *Cluster) start(ctx context.Context) error {
	var b [8]byte
	_, _ = rand.Read(b[:])
	c.token = "fencecheck-" + hex.EncodeToString(b[:])
	ports, err := reservePorts(2 * len(c.members))
	if err != nil {
		return err
	}
	for i, m := range c.members {
		m.clientURL = url.URL{Scheme: "http", Host: ports[2*i]}
		m.peerURL = url.URL{Scheme: "http", Host: ports[2*i+1]}
	}
	// Start the members one after the other. A new member first asks its peers whether
	// it was bootstrapped already, waiting up to 1s (etcd's fixed BootstrapTimeout) for
	// each peer that listens but does not serve yet; a peer not yet listening refuses
	// at once, and one already started answers at once. StartEtcd returns once the
	// member serves, without waiting for a quorum, so sequential starts take
	// milliseconds where parallel ones take 2s.
	initial := c.initialCluster()
	for _, m := range c.members {
		e, err := embed.StartEtcd(c.embedConfig(m, embed.ClusterStateFlagNew, initial))
		if err != nil {
			c.closeMembers()
			return fmt.Errorf("etcd: start member %s: %w", m.name, err)
		}
		m.e = e
		m.id = e.Server.MemberID()
	}
	for _, m := range c.members {
		if err := waitReady(ctx, m); err != nil {
			c.closeMembers()
			return err
		}
	}
	if _, err := c.Leader(ctx); err != nil {
		c.closeMembers()
		return fmt.Errorf("etcd: cluster has no leader: %w", err)
	}
	return nil
}

func waitReady(ctx context.Context, m *member) error {
	select {
	case <-m.e.Server.ReadyNotify():
		return nil
	case err := <-m.e.Err():
		return fmt.Errorf("etcd: member %s failed while starting: %w", m.name, err)
	case <-ctx.Done():
		return fmt.Errorf("etcd: member %s not ready: %w", m.name, ctx.Err())
	}
}

func reservePorts(n int) ([]string, error) {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			_ = ln.Close()
		}
	}()
	addrs := make([]string, 0, n)
	for range n {
		// Below the ephemeral range: a member restarted after a crash binds its ports
		// again, and no outgoing connection may hold them by then.
		ln, err := proc.ListenFree()
		if err != nil {
			return nil, fmt.Errorf("etcd: reserve a port: %w", err)
		}
		lns = append(lns, ln)
		addrs = append(addrs, ln.Addr().String())
	}
	return addrs, nil
}

func (c *Cluster) initialCluster() string {
	parts := make([]string, len(c.members))
	for i, m := range c.members {
		parts[i] = m.name + "=" + m.peerURL.String()
	}
	return strings.Join(parts, ",")
}

func (c *Cluster) embedConfig(m *member, state, initial string) *embed.Config {
	cfg := embed.NewConfig()
	cfg.Name = m.name
	cfg.Dir = m.dir
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(c.logger.With(zap.String("member", m.name)))
	cfg.TickMs = uint(c.cfg.TickMs)
	cfg.ElectionMs = uint(c.cfg.ElectionMs)
	// Let clients ping every EmbeddedKeepAlive without being told to calm down: that is
	// how a client notices a member whose link stalls and moves to another member.
	cfg.GRPCKeepAliveMinTime = EmbeddedKeepAlive / 2
	cfg.ListenClientUrls = []url.URL{m.clientURL}
	cfg.AdvertiseClientUrls = []url.URL{m.clientURL}
	cfg.ListenPeerUrls = []url.URL{m.peerURL}
	cfg.AdvertisePeerUrls = []url.URL{m.peerURL}
	cfg.InitialCluster = initial
	cfg.InitialClusterToken = c.token
	cfg.ClusterState = state
	// Membership changes are ours alone (member replacement in Restart), and the strict
	// check refuses them until peers have been connected for 5s.
	cfg.StrictReconfigCheck = false
	return cfg
}

// stopMember stops a member abruptly: HardStop first (no leadership transfer, which
// would wait up to the request timeout on a cut leader), then Close for the listeners.
func stopMember(e *embed.Etcd) {
	e.Server.HardStop()
	e.Close()
}

// closeMembers stops every running member, in parallel.
func (c *Cluster) closeMembers() {
	var wg sync.WaitGroup
	for _, m := range c.members {
		if m.e == nil {
			continue
		}
		e := m.e
		m.e = nil
		wg.Go(func() { stopMember(e) })
	}
	wg.Wait()
}

// Close stops every member and closes the log file. Safe to call twice and
// concurrently (later callers wait for the first). It removes no files.
func (c *Cluster) Close() error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.closed = true
		c.closeMembers()
		c.closeLog()
	})
	return nil
}

// Endpoints returns each member's client address (host:port), in member order. They
// stay the same across Crash and Restart.
func (c *Cluster) Endpoints() []string {
	out := make([]string, len(c.members))
	for i, m := range c.members {
		out[i] = m.clientURL.Host
	}
	return out
}

// Config returns the cluster's configuration, defaults applied.
func (c *Cluster) Config() ClusterConfig { return c.cfg }

// Nodes implements harness.Cluster.
func (c *Cluster) Nodes() int { return len(c.members) }

// Leader implements harness.Cluster: it polls (every tick) until a running member
// claims leadership and a majority of all members name it, or ctx ends. An isolated
// old leader that still believes it leads is not returned once the others elected
// someone else.
func (c *Cluster) Leader(ctx context.Context) (int, error) {
	t := time.NewTicker(time.Duration(c.cfg.TickMs) * time.Millisecond)
	defer t.Stop()
	for {
		i, err := c.leaderNow()
		if err != nil || i >= 0 {
			return i, err
		}
		select {
		case <-ctx.Done():
			return -1, fmt.Errorf("etcd: no leader: %w", ctx.Err())
		case <-t.C:
		}
	}
}

func (c *Cluster) leaderNow() (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return -1, ErrClosed
	}
	votes := map[uint64]int{}
	for _, m := range c.members {
		if m.e != nil {
			if l := m.e.Server.Lead(); l != 0 {
				votes[l]++
			}
		}
	}
	quorum := len(c.members)/2 + 1
	for i, m := range c.members {
		if m.e == nil {
			continue
		}
		id := uint64(m.e.Server.MemberID())
		if m.e.Server.Lead() == id && votes[id] >= quorum {
			return i, nil
		}
	}
	return -1, nil
}

// WaitSettled polls (every tick) until the running members agree: all of them name the
// same leader, which claims leadership itself, and each has applied what the leader had
// committed, up to an entry of the leader's applied term; or until ctx ends. Call it
// after Heal when the next request must not meet the fault's aftermath.
//
// Heal alone is not enough: a leader isolated for less than its CheckQuorum step-down
// (an election timeout of ticks, longer on a loaded machine) still believes it leads
// when the links come back. A request it receives then is appended at its old term,
// is discarded when the new leader's term reaches it, and etcd never fails the waiting
// request: the client hangs until etcd's request timeout (5s + 2 × election timeout).
func (c *Cluster) WaitSettled(ctx context.Context) error {
	t := time.NewTicker(time.Duration(c.cfg.TickMs) * time.Millisecond)
	defer t.Stop()
	for {
		ok, err := c.settledNow()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("etcd: members did not settle on one leader: %w", ctx.Err())
		case <-t.C:
		}
	}
}

func (c *Cluster) settledNow() (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false, ErrClosed
	}
	var lead *member
	for _, m := range c.members {
		if m.e != nil && m.e.Server.Lead() == uint64(m.e.Server.MemberID()) {
			if lead != nil {
				return false, nil // two claim leadership: an old one has not stepped down
			}
			lead = m
		}
	}
	if lead == nil {
		return false, nil
	}
	// Read the leader's figures first: the others are then compared with a past state
	// of the leader, never a future one.
	id, term, commit := lead.e.Server.Lead(), lead.e.Server.Term(), lead.e.Server.CommittedIndex()
	for _, m := range c.members {
		if m.e == nil {
			continue
		}
		s := m.e.Server
		// Term is the term of the last applied entry: the leader's once the member has
		// applied the entry the leader appended when it took office.
		if s.Lead() != id || s.Term() != term || s.AppliedIndex() < commit {
			return false, nil
		}
	}
	return true, nil
}

func (c *Cluster) check(i int) error {
	if c.closed {
		return ErrClosed
	}
	if i < 0 || i >= len(c.members) {
		return fmt.Errorf("etcd: no node %d (cluster has %d)", i, len(c.members))
	}
	return nil
}

// Isolate implements harness.Cluster: every link between member i and the others is
// cut both ways (EtcdServer.CutPeer on i toward each other member and on each other
// member toward i). A cut link drops Raft messages; it does not hold them. Member i
// keeps running and serving its clients: as leader it believes it leads until
// CheckQuorum makes it step down (about an election timeout), and it can commit
// nothing. The cut outlives a Crash/Restart of either side until Heal.
func (c *Cluster) Isolate(_ context.Context, i int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.check(i); err != nil {
		return err
	}
	for j := range c.members {
		if j == i {
			continue
		}
		c.cutLocked(i, j)
		c.cutLocked(j, i)
	}
	return nil
}

// StallNode implements harness.Cluster as closely as etcd's in-process transport
// allows: member i's transport is paused (PauseSending: it sends nothing to any peer
// and drops what its stream readers receive), and every other member cuts its link
// toward i (CutPeer). What it does: the peers see silence from i, as from a paused
// process, and elect a new leader if i led. What it does not do: the messages are
// dropped, not held, so nothing stale is delivered when it resumes (Raft retransmits,
// so its outcome is the same as a held link); member i's own process keeps running —
// its clock, its lessor and its client API go on (a stalled leader still answers
// serializable reads and keeps client connections open until it steps down). A client
// link to i stalls only through the harness's client proxies, which is where a full
// node pause must also stall. Snapshot transfers (never needed in short runs) are not
// paused by etcd's Pause.
func (c *Cluster) StallNode(_ context.Context, i int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.check(i); err != nil {
		return err
	}
	c.paused[i] = true
	if m := c.members[i]; m.e != nil {
		m.e.Server.PauseSending()
	}
	for j := range c.members {
		if j != i {
			c.cutLocked(j, i)
		}
	}
	return nil
}

func (c *Cluster) cutLocked(a, b int) {
	c.cut[[2]int{a, b}] = true
	if m := c.members[a]; m.e != nil {
		m.e.Server.CutPeer(c.members[b].id)
	}
}

// Heal implements harness.Cluster: every cut and pause is undone on the running
// members (a crashed member is not restarted).
func (c *Cluster) Heal(context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	for k := range c.cut {
		if m := c.members[k[0]]; m.e != nil {
			m.e.Server.MendPeer(c.members[k[1]].id)
		}
	}
	for i := range c.paused {
		if m := c.members[i]; m.e != nil {
			m.e.Server.ResumeSending()
		}
	}
	clear(c.cut)
	clear(c.paused)
	return nil
}

// faultedLocked reports whether a link fault involves member i.
func (c *Cluster) faultedLocked(i int) bool {
	if c.paused[i] {
		return true
	}
	for k := range c.cut {
		if k[0] == i || k[1] == i {
			return true
		}
	}
	return false
}

// reapplyLocked re-applies the link faults that involve member i after it restarted
// (its transport is new, and a replaced member has a new ID the others must cut).
func (c *Cluster) reapplyLocked(i int) {
	for k := range c.cut {
		if k[0] == i || k[1] == i {
			c.cutLocked(k[0], k[1])
		}
	}
	if c.paused[i] {
		c.members[i].e.Server.PauseSending()
	}
}

// Crash implements harness.Crasher: member i is stopped at once (HardStop, no
// leadership transfer), its listeners are closed and its client connections dropped.
// Its data dir stays (Restart decides whether to keep it).
func (c *Cluster) Crash(_ context.Context, i int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.check(i); err != nil {
		return err
	}
	m := c.members[i]
	if m.e == nil {
		return fmt.Errorf("etcd: node %d is already crashed", i)
	}
	e := m.e
	m.e = nil
	stopMember(e)
	return nil
}

// Restart implements harness.Crasher: member i starts again with the same name and
// ports and waits until it is ready (or ctx ends). Link faults (Isolate, StallNode)
// that involve member i outlive the crash and are applied again; a member cut off
// that way cannot publish itself, so Restart then returns as soon as it has started
// and it becomes ready (serves clients) after Heal.
//
// keepData=true reuses its data dir: it rejoins with its WAL and catches up.
//
// keepData=false wipes its data dir. In a 1-member cluster the member starts a brand
// new cluster: every key and revision is lost and revisions restart at 1 (so fencing
// tokens are reused — the "data loss" hazard). In a 3-member cluster etcd cannot
// restart a voting member with an empty log in place (Raft panics with "tocommit is
// out of range", which would kill this process), so the member is replaced the way
// an operator must: MemberRemove + MemberAdd through the running members, then started
// with an empty dir and cluster state "existing". It gets a new member ID, the same
// name and addresses, and the cluster's data survives on the quorum.
func (c *Cluster) Restart(ctx context.Context, i int, keepData bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.check(i); err != nil {
		return err
	}
	m := c.members[i]
	if m.e != nil {
		return fmt.Errorf("etcd: node %d is running; Crash it first", i)
	}
	state := embed.ClusterStateFlagNew
	if !keepData {
		if len(c.members) > 1 {
			if err := c.replaceLocked(ctx, i); err != nil {
				return err
			}
			state = embed.ClusterStateFlagExisting
		}
		if err := os.RemoveAll(m.dir); err != nil {
			return fmt.Errorf("etcd: wipe %s: %w", m.dir, err)
		}
	}
	e, err := embed.StartEtcd(c.embedConfig(m, state, c.initialCluster()))
	if err != nil {
		return fmt.Errorf("etcd: restart node %d: %w", i, err)
	}
	m.e = e
	if state != embed.ClusterStateFlagExisting && c.faultedLocked(i) {
		// Cut off, it cannot publish itself, so it would not be ready before Heal.
		m.id = e.Server.MemberID()
		c.reapplyLocked(i)
		return nil
	}
	if err := waitReady(ctx, m); err != nil {
		m.e = nil
		stopMember(e)
		return err
	}
	if state == embed.ClusterStateFlagExisting {
		// A member that joined with an empty dir keeps "remote" entries in its
		// transport, and etcd v3.7.3 panics (close of closed channel) when such a
		// member is stopped after CutPeer paused them. Restart it once from the WAL it
		// just wrote: a member restarting from its WAL has no remotes.
		m.e = nil
		stopMember(e)
		if e, err = embed.StartEtcd(c.embedConfig(m, embed.ClusterStateFlagNew, c.initialCluster())); err != nil {
			return fmt.Errorf("etcd: restart replaced node %d from its WAL: %w", i, err)
		}
		m.e = e
		if err := waitReady(ctx, m); err != nil {
			m.e = nil
			stopMember(e)
			return err
		}
	}
	m.id = e.Server.MemberID()
	c.reapplyLocked(i)
	return nil
}

// replaceLocked removes member i from the membership and adds a fresh member with the
// same peer URL, through a client of the running members.
func (c *Cluster) replaceLocked(ctx context.Context, i int) error {
	var eps []string
	for j, m := range c.members {
		if j != i && m.e != nil {
			eps = append(eps, m.clientURL.Host)
		}
	}
	if len(eps) == 0 {
		return fmt.Errorf("etcd: cannot replace node %d: no other member is running", i)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return fmt.Errorf("etcd: replace node %d: %w", i, err)
	}
	defer cli.Close()
	m := c.members[i]
	if _, err := cli.MemberRemove(ctx, uint64(m.id)); err != nil {
		return fmt.Errorf("etcd: replace node %d: remove member %s: %w", i, m.id, err)
	}
	resp, err := cli.MemberAdd(ctx, []string{m.peerURL.String()})
	if err != nil {
		return fmt.Errorf("etcd: replace node %d: add member: %w (the member is now removed)", i, err)
	}
	m.id = types.ID(resp.Member.ID)
	return nil
}
