package kubelease

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/fencecheck/fencecheck/harness"
)

// startExternal reaches the cluster of cfg.Kubeconfig and creates the run's Lease there.
func startExternal(ctx context.Context, cfg Config) (_ *Backend, err error) {
	rc, err := clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kube-lease: kubeconfig %s: %w", cfg.Kubeconfig, err)
	}
	u, err := url.Parse(rc.Host)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("kube-lease: kubeconfig %s: server %q is not a URL", cfg.Kubeconfig, rc.Host)
	}
	if rc.Proxy != nil {
		// Each client's traffic must go through its own fault proxy and nothing else.
		return nil, fmt.Errorf("kube-lease: kubeconfig %s: a proxy-url is not supported (fencecheck's fault proxy must be the clients' only hop)", cfg.Kubeconfig)
	}
	host := u.Host
	if u.Port() == "" {
		port := "443"
		if u.Scheme == "http" {
			port = "80"
		}
		host = net.JoinHostPort(u.Hostname(), port)
	}
	if !rc.Insecure && rc.ServerName == "" {
		// Clients dial 127.0.0.1:<proxy port>; the certificate is the server's.
		rc.ServerName = u.Hostname()
	}
	b := &Backend{cfg: cfg, base: rc, target: host, url: &url.URL{Scheme: u.Scheme, Host: host, Path: u.Path}, lease: "fencecheck-" + cfg.RunID}
	if err := b.createLease(ctx); err != nil {
		return nil, err
	}
	return b, nil
}

// deleteLease removes the run's Lease from an existing cluster.
func (b *Backend) deleteLease() error {
	c, hc, err := b.client(b.target)
	if err != nil {
		return err
	}
	defer hc.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Leases(b.cfg.Namespace).Delete(ctx, b.lease, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("kube-lease: delete Lease %s/%s at %s: %w", b.cfg.Namespace, b.lease, b.url.Host, err)
	}
	return nil
}

const externalWords = "an existing cluster (--" + OptionKubeconfig + ")"

// external is the backend on a cluster fencecheck did not start: the plain Backend
// methods only, so that no node fault reaches it.
type external struct{ b *Backend }

var (
	_ harness.External   = external{}
	_ harness.Configured = external{}
)

func (e external) Name() string        { return e.b.Name() }
func (e external) Endpoints() []string { return e.b.Endpoints() }
func (e external) NewLocker(ctx context.Context, id int, addrs []string) (harness.Locker, error) {
	return e.b.NewLocker(ctx, id, addrs)
}
func (e external) Close() error                    { return e.b.Close() }
func (e external) BackendSettings() map[string]any { return e.b.BackendSettings() }

// External implements harness.External.
func (external) External() string { return externalWords }
