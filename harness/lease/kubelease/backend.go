package kubelease

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"

	"github.com/fencecheck/fencecheck/harness"
	etcdlock "github.com/fencecheck/fencecheck/harness/lease/etcd"
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
	// to leaderelection.JitterFactor while acquiring.
	RetryPeriod time.Duration
}

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
	case float64(t.RenewDeadline) <= leaderelection.JitterFactor*float64(t.RetryPeriod):
		return fmt.Errorf("kube-lease: renew deadline %v must be longer than %g × retry period %v (client-go)", t.RenewDeadline, leaderelection.JitterFactor, t.RetryPeriod)
	}
	return nil
}

// Config configures the kube-lease backend.
type Config struct {
	// TTL is the LeaseDuration; Timing, if set, overrides TimingFor(TTL).
	TTL    time.Duration
	Timing Timing
	Token  TokenKind
	// Binary is the kube-apiserver (default: FindAPIServer's).
	Binary string
	// Dir holds etcd's data and the apiserver's files (required).
	Dir string
	// LogWriter receives the apiserver's output (nil: discarded); EtcdLog is the file
	// etcd's log is appended to ("": discarded).
	LogWriter io.Writer
	EtcdLog   string
	// Logger gets client-go's leader-election log lines (nil: discarded).
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
// (node 0 of its proc.Group: ProcessNodes and Crasher), and one Lease.
type Backend struct {
	proc.Group[*APIServer]
	cfg  Config
	etcd *etcdlock.Cluster
	// base is what every client of the apiserver shares (credentials, TLS); target is
	// its host:port, reached through each client's proxy, and url its scheme and path.
	base       *rest.Config
	target     string
	url        *url.URL
	lease      string
	closeOnce  sync.Once
	closeError error
}

var (
	_ harness.Backend      = (*Backend)(nil)
	_ harness.ProcessNodes = (*Backend)(nil)
	_ harness.Crasher      = (*Backend)(nil)
)

// Start starts etcd and the kube-apiserver and creates the Lease with no holder, so
// that the first grant is transition 1 (a token above the resource's initial 0).
func Start(ctx context.Context, cfg Config) (_ *Backend, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if cfg.Kubeconfig != "" {
		return startExternal(ctx, cfg)
	}
	if cfg.Binary, err = FindAPIServer(cfg.Binary); err != nil {
		return nil, err
	}
	b := &Backend{Group: proc.Group[*APIServer]{Name: "kube-apiserver"}, cfg: cfg, lease: LeaseName}
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
	b.url = &url.URL{Scheme: "https", Host: s.Addr()}
	// The apiserver's self-signed certificate, on loopback through the proxy.
	b.base = &rest.Config{BearerToken: s.Token(), TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	if err := b.createLease(ctx); err != nil {
		return nil, err
	}
	return b, nil
}

func (b *Backend) createLease(ctx context.Context) error {
	c, hc, err := b.client(b.target)
	if err != nil {
		return err
	}
	defer hc.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	none, one, zero := "", int32(1), int32(0)
	_, err = c.Leases(b.cfg.Namespace).Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: b.lease, Namespace: b.cfg.Namespace},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &none, LeaseDurationSeconds: &one, LeaseTransitions: &zero},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("kube-lease: create Lease %s/%s at %s: %w", b.cfg.Namespace, b.lease, b.url.Host, err)
	}
	return nil
}

// client is a coordination/v1 client of the apiserver at addr (a proxied address) with
// an HTTP client of its own: its own connections, which the fault proxy sees, and which
// CloseIdleConnections ends.
func (b *Backend) client(addr string) (*coordclient.CoordinationV1Client, *http.Client, error) {
	d := &net.Dialer{Timeout: b.cfg.Timing.RenewDeadline}
	rc := rest.CopyConfig(b.base)
	u := *b.url
	u.Host = addr
	rc.Host = u.String()
	// A Dial of our own also keeps client-go from sharing one transport between
	// clients (it caches transports only without one).
	rc.Dial = d.DialContext
	// No client-side rate limit: a candidate polls every RetryPeriod.
	rc.QPS, rc.WarningHandler = -1, rest.NoWarnings{}
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		return nil, nil, fmt.Errorf("kube-lease: client: %w", err)
	}
	c, err := coordclient.NewForConfigAndClient(rc, hc)
	if err != nil {
		return nil, nil, fmt.Errorf("kube-lease: client: %w", err)
	}
	return c, hc, nil
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

// Close implements harness.Backend: on an existing cluster it deletes the run's Lease;
// otherwise it stops the apiserver, then etcd. Safe to call twice.
func (b *Backend) Close() error {
	b.closeOnce.Do(func() {
		if b.cfg.Kubeconfig != "" && b.base != nil {
			b.closeError = b.deleteLease()
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

// BackendSettings implements harness.Configured: client-go's timing, recorded in the
// history's run object.
func (b *Backend) BackendSettings() map[string]any {
	t := b.cfg.Timing
	return map[string]any{
		"lease_duration_ms": t.LeaseDuration.Milliseconds(),
		"renew_deadline_ms": t.RenewDeadline.Milliseconds(),
		"retry_period_ms":   t.RetryPeriod.Milliseconds(),
		"jitter_factor":     leaderelection.JitterFactor,
		"release_on_cancel": true,
		"identity":          "one per grant (client-N-grant-M)",
		"lease":             b.cfg.Namespace + "/" + b.lease,
		"kube_apiserver":    APIServerVersion,
	}
}

// NewLocker implements harness.Backend: a client of addrs[0] only.
func (b *Backend) NewLocker(_ context.Context, id int, addrs []string) (harness.Locker, error) {
	if len(addrs) != 1 {
		return nil, fmt.Errorf("%w: kube-lease: want 1 address, got %d", harness.ErrNoEffect, len(addrs))
	}
	l := &Locker{b: b, id: id, log: logr.Discard(), namespace: b.cfg.Namespace, lease: b.lease}
	if b.cfg.Logger != nil {
		l.log = logr.FromSlogHandler(b.cfg.Logger.With("client", id).Handler())
	}
	c, hc, err := b.client(addrs[0])
	if err != nil {
		return nil, fmt.Errorf("%w: %w", harness.ErrNoEffect, err)
	}
	l.leases, l.http = c, hc
	return l, nil
}

// LeaseNames lists the Leases in the backend's namespace (what a run left behind).
func (b *Backend) LeaseNames(ctx context.Context) ([]string, error) {
	c, hc, err := b.client(b.target)
	if err != nil {
		return nil, err
	}
	defer hc.CloseIdleConnections()
	l, err := c.Leases(b.cfg.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("kube-lease: list Leases: %w", err)
	}
	names := make([]string, len(l.Items))
	for i, it := range l.Items {
		names[i] = it.Name
	}
	return names, nil
}
