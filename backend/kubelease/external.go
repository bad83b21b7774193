package kubelease

import (
	"context"

	"github.com/fencecheck/fencecheck/harness"
)

// startExternal reaches the cluster of cfg.Kubeconfig and creates the run's Lease there.
// kube-lease-client reads the kubeconfig (client-go's clientcmd, as kubectl does); each
// lock client dials its proxy and checks the certificate against the server's name in
// the kubeconfig.
func startExternal(ctx context.Context, cfg Config) (_ *Backend, err error) {
	b := &Backend{cfg: cfg, cmd: clientCmd{program: cfg.Client, kubeconfig: cfg.Kubeconfig, namespace: cfg.Namespace, lease: "fencecheck-" + cfg.RunID}}
	target, err := b.cmd.endpoint(ctx)
	if err != nil {
		return nil, err
	}
	if err := b.cmd.createLease(ctx); err != nil {
		return nil, err
	}
	b.target = target // from now on Close deletes the Lease
	if err := b.startClients(ctx); err != nil {
		_ = b.Close()
		return nil, err
	}
	return b, nil
}

const externalWords = "an existing cluster (--" + OptionKubeconfig + ")"

// external is the backend on a cluster fencecheck did not start: the plain Backend
// methods only, so that no node fault reaches it.
type external struct{ b *Backend }

var (
	_ harness.External   = external{}
	_ harness.Configured = external{}
	_ harness.Failing    = external{}
)

func (e external) Name() string        { return e.b.Name() }
func (e external) Endpoints() []string { return e.b.Endpoints() }
func (e external) NewLocker(ctx context.Context, id int, addrs []string) (harness.Locker, error) {
	return e.b.NewLocker(ctx, id, addrs)
}
func (e external) Close() error                    { return e.b.Close() }
func (e external) BackendSettings() map[string]any { return e.b.BackendSettings() }
func (e external) Failed() <-chan struct{}         { return e.b.Failed() }
func (e external) Err() error                      { return e.b.Err() }

// External implements harness.External.
func (external) External() string { return externalWords }
