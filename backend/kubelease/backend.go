package kubelease

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	etcdlock "github.com/fencecheck/fencecheck/backend/etcd"
	execlock "github.com/fencecheck/fencecheck/backend/execlock"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/proc"
)

// Where the lock lives on a cluster fencecheck starts: one Lease in the "default"
// namespace of a fresh etcd. On an existing cluster it is fencecheck-<run id> in the
// namespace given (default "default"), deleted when the run ends.
const (
	Namespace = "default"
	LeaseName = "fencecheck-lock"
)

// TokenKind is where a grant's fencing token comes from.
type TokenKind int

const (
	// TokenTransitions is the Lease's spec.leaseTransitions as the granting update
	// wrote it: client-go adds one whenever the holder changes.
	TokenTransitions TokenKind = iota
	// TokenResourceVersion is the Lease's metadata.resourceVersion after the granting
	// update: on an etcd-backed apiserver, etcd's revision of that write.
	TokenResourceVersion
)

// Timing is client-go's LeaderElectionConfig timing.
type Timing struct {
	// LeaseDuration is how long a candidate waits, from when it last saw the Lease
	// change, before it takes the lock over. The Lease stores it in whole seconds.
	LeaseDuration time.Duration
	// RenewDeadline is how long the leader retries a renewal before it stops leading.
	RenewDeadline time.Duration
	// RetryPeriod is the time between two attempts (acquire or renew), jittered by up
	// to JitterFactor while acquiring.
	RetryPeriod time.Duration
}

// JitterFactor is client-go's leaderelection.JitterFactor (kube-lease-client refuses
// to run when its client-go has another).
const JitterFactor = 1.2

// TimingFor is the timing for a lease of ttl in the proportions of client-go's usual
// 15 s / 10 s / 2 s: RenewDeadline = 2/3 and RetryPeriod = 2/15 of LeaseDuration.
func TimingFor(ttl time.Duration) Timing {
	return Timing{LeaseDuration: ttl, RenewDeadline: ttl * 2 / 3, RetryPeriod: ttl * 2 / 15}
}

// Validate checks client-go's rules (LeaseDuration > RenewDeadline > JitterFactor ×
// RetryPeriod > 0) and that LeaseDuration is whole seconds, as the Lease stores it:
// 1.5 s would be written as 1, and every other candidate would take over after 1 s.
func (t Timing) Validate() error {
	switch {
	case t.LeaseDuration < time.Second || t.LeaseDuration%time.Second != 0:
		return fmt.Errorf("kube-lease: lease duration %v must be whole seconds, at least 1s (the Lease's leaseDurationSeconds)", t.LeaseDuration)
	case t.RetryPeriod <= 0:
		return fmt.Errorf("kube-lease: retry period %v must be positive", t.RetryPeriod)
	case t.LeaseDuration <= t.RenewDeadline:
		return fmt.Errorf("kube-lease: lease duration %v must be longer than renew deadline %v (client-go)", t.LeaseDuration, t.RenewDeadline)
	case float64(t.RenewDeadline) <= JitterFactor*float64(t.RetryPeriod):
		return fmt.Errorf("kube-lease: renew deadline %v must be longer than %g × retry period %v (client-go)", t.RenewDeadline, JitterFactor, t.RetryPeriod)
	}
	return nil
}

// Config configures the kube-lease backend.
type Config struct {
	// TTL is the LeaseDuration; Timing, if set, overrides TimingFor(TTL).
	TTL    time.Duration
	Timing Timing
	Token  TokenKind
	// Binary is the kube-apiserver (default: FindAPIServer's); Client the
	// kube-lease-client (default: FindClient's).
	Binary string
	Client string
	// Dir holds etcd's data and the apiserver's files (required).
	Dir string
	// LogWriter receives the apiserver's output (nil: discarded); EtcdLog is the file
	// etcd's log is appended to ("": discarded).
	LogWriter io.Writer
	EtcdLog   string
	// Logger gets the lock clients' stderr: client-go's leader-election log lines (nil:
	// discarded).
	Logger *slog.Logger
	// Kubeconfig, if set, is an existing cluster's kubeconfig file (its current
	// context): nothing is started, and only client-side faults apply. The Lease is
	// fencecheck-<RunID> in Namespace; Close deletes it.
	Kubeconfig string
	Namespace  string
	RunID      string
	// name is the registry name the backend reports ("kube-lease", "kube-lease-rv").
	name string
}

func (c Config) withDefaults() Config {
	if c.Timing == (Timing{}) {
		c.Timing = TimingFor(c.TTL)
	}
	if c.name == "" {
		c.name = Name
	}
	if c.Namespace == "" {
		c.Namespace = Namespace
	}
	if c.RunID == "" {
		c.RunID = "run"
	}
	return c
}

// Validate checks the configuration.
func (c Config) Validate() error {
	c = c.withDefaults()
	if c.Timing.LeaseDuration != c.TTL {
		return fmt.Errorf("kube-lease: Timing.LeaseDuration %v differs from TTL %v", c.Timing.LeaseDuration, c.TTL)
	}
	if err := c.Timing.Validate(); err != nil {
		return err
	}
	if c.Dir == "" && c.Kubeconfig == "" {
		return errors.New("kube-lease: Dir is required to start a kube-apiserver")
	}
	return nil
}

// Backend is the kube-lease backend: an embedded etcd, one kube-apiserver process on it
// (node 0 of its proc.Group: ProcessNodes and Crasher), one Lease, and one
// kube-lease-client process per harness client, driven over the exec protocol by the
// exec backend's machinery (so a pause of a client is a real SIGSTOP of its process).
type Backend struct {
	proc.Group[*APIServer]
	cfg  Config
	etcd *etcdlock.Cluster
	// cmd reaches the cluster by its kubeconfig; target is the apiserver's host:port,
	// which each client reaches through its proxy.
	cmd     clientCmd
	target  string
	clients *execlock.Backend

	closeOnce  sync.Once
	closeError error
}

var (
	_ harness.Backend      = (*Backend)(nil)
	_ harness.ProcessNodes = (*Backend)(nil)
	_ harness.Crasher      = (*Backend)(nil)
	_ harness.Failing      = (*Backend)(nil)
)

// Start starts etcd and the kube-apiserver and creates the Lease with no holder, so
// that the first grant is transition 1 (a token above the resource's initial 0).
func Start(ctx context.Context, cfg Config) (_ *Backend, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if cfg.Kubeconfig == "" {
		if cfg.Binary, err = FindAPIServer(cfg.Binary); err != nil {
			return nil, err
		}
	}
	if cfg.Client, err = FindClient(cfg.Client); err != nil {
		return nil, err
	}
	if cfg.Kubeconfig != "" {
		return startExternal(ctx, cfg)
	}
	b := &Backend{Group: proc.Group[*APIServer]{Name: "kube-apiserver"}, cfg: cfg}
	defer func() {
		if err != nil {
			_ = b.Close()
		}
	}()
	if b.etcd, err = etcdlock.StartCluster(ctx, etcdlock.ClusterConfig{Dir: filepath.Join(cfg.Dir, "etcd"), LogPath: cfg.EtcdLog}); err != nil {
		return nil, fmt.Errorf("kube-lease: etcd: %w", err)
	}
	s, err := StartAPIServer(ctx, APIServerConfig{Binary: cfg.Binary, Dir: filepath.Join(cfg.Dir, "apiserver"), Etcd: b.etcd.Endpoints(), Log: cfg.LogWriter})
	if err != nil {
		return nil, err
	}
	b.Servers, b.target = []*APIServer{s}, s.Addr()
	// The clients check the apiserver's self-signed certificate (through their proxies,
	// against the server's address) and present its bearer token.
	kc := filepath.Join(cfg.Dir, "kubeconfig")
	if err := s.WriteKubeconfig(kc); err != nil {
		return nil, err
	}
	b.cmd = clientCmd{program: cfg.Client, kubeconfig: kc, namespace: cfg.Namespace, lease: LeaseName}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := b.cmd.createLease(cctx); err != nil {
		return nil, err
	}
	if err := b.startClients(ctx); err != nil {
		return nil, err
	}
	return b, nil
}

// clientProtocol is what kube-lease-client speaks beyond the exec protocol: it reports
// each grant's end by its clock (its leases are harness.Expiring) and takes cancels.
var clientProtocol = execlock.Config{Expiry: true, Cancel: true}

// startClients readies the clients' machinery (their processes start in NewLocker).
func (b *Backend) startClients(ctx context.Context) error {
	t := b.cfg.Timing
	cfg := clientProtocol
	cfg.Program, cfg.Args, cfg.Label = b.cfg.Client, b.cmd.serveArgs(t, b.cfg.Token), "kube-lease client"
	cfg.Dir, cfg.Endpoints, cfg.TTL, cfg.Logger = b.cfg.Dir, []string{b.target}, t.LeaseDuration, b.cfg.Logger
	// An acquire waits for the lock: the harness bounds it and cancels it.
	cfg.ReplyTimeout = max(execlock.DefaultReplyTimeout, 30*t.LeaseDuration)
	// A client's release on its way out is bounded by RenewDeadline.
	cfg.StopGrace = max(execlock.DefaultStopGrace, t.RenewDeadline+time.Second)
	clients, err := execlock.Start(ctx, cfg)
	if err != nil {
		return fmt.Errorf("kube-lease: %w", err)
	}
	b.clients = clients
	return nil
}

// Name implements harness.Backend.
func (b *Backend) Name() string { return b.cfg.name }

// Endpoints implements harness.Backend: the apiserver's host:port.
func (b *Backend) Endpoints() []string {
	if b.target == "" {
		return nil
	}
	return []string{b.target}
}

// Close implements harness.Backend: it ends the clients (each hands back a Lease it
// holds); on an existing cluster it deletes the run's Lease; otherwise it stops the
// apiserver, then etcd. Safe to call twice.
func (b *Backend) Close() error {
	b.closeOnce.Do(func() {
		if b.clients != nil {
			b.closeError = b.clients.Close()
		}
		if b.cfg.Kubeconfig != "" && b.target != "" {
			b.closeError = errors.Join(b.closeError, b.cmd.deleteLease())
		}
		b.closeError = errors.Join(b.closeError, b.Group.Close())
		if b.etcd != nil {
			b.closeError = errors.Join(b.closeError, b.etcd.Close())
		}
	})
	return b.closeError
}

// LeaseTTL implements registry.LeaseTimed: node-pause stops the apiserver for twice it.
func (b *Backend) LeaseTTL() time.Duration { return b.cfg.TTL }

// Failed implements harness.Failing: a client process that died or broke the protocol
// ends the run.
func (b *Backend) Failed() <-chan struct{} {
	if b.clients == nil {
		return nil
	}
	return b.clients.Failed()
}

// Err implements harness.Failing.
func (b *Backend) Err() error {
	if b.clients == nil {
		return nil
	}
	return b.clients.Err()
}

// BackendSettings implements harness.Configured: client-go's timing, recorded in the
// history's run object.
func (b *Backend) BackendSettings() map[string]any {
	t := b.cfg.Timing
	return map[string]any{
		"lease_duration_ms": t.LeaseDuration.Milliseconds(),
		"renew_deadline_ms": t.RenewDeadline.Milliseconds(),
		"retry_period_ms":   t.RetryPeriod.Milliseconds(),
		"jitter_factor":     JitterFactor,
		"release_on_cancel": true,
		"identity":          "one per grant (client-N-grant-M)",
		"client":            "one " + ClientName + " process per client",
		"lease":             b.cfg.Namespace + "/" + b.cmd.lease,
		"kube_apiserver":    APIServerVersion,
	}
}

// NewLocker implements harness.Backend: a kube-lease-client process dialling addrs[0]
// only.
func (b *Backend) NewLocker(ctx context.Context, id int, addrs []string) (harness.Locker, error) {
	if len(addrs) != 1 {
		return nil, fmt.Errorf("%w: kube-lease: want 1 address, got %d", harness.ErrNoEffect, len(addrs))
	}
	l, err := b.clients.NewLocker(ctx, id, addrs)
	if err != nil {
		return nil, fmt.Errorf("%w: kube-lease: %w", harness.ErrNoEffect, err)
	}
	return l, nil
}

// LeaseNames lists the Leases in the backend's namespace (what a run left behind).
func (b *Backend) LeaseNames(ctx context.Context) ([]string, error) {
	c := b.cmd
	c.lease = ""
	return c.leaseNames(ctx)
}
