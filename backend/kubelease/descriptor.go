package kubelease

import (
	"context"
	"fmt"
	"os"
	"time"

	execlock "github.com/fencecheck/fencecheck/backend/execlock"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/proc"
	"github.com/fencecheck/fencecheck/harness/registry"
)

// Names of the backends as users type them: one per token source.
const (
	Name   = "kube-lease"
	NameRV = "kube-lease-rv"
)

// Options of the backends: the kube-apiserver binary to start (default: the cached
// build), or an existing cluster's kubeconfig and the namespace to take the Lease in.
const (
	OptionAPIServer  = "kube-apiserver"
	OptionClient     = "kube-lease-client"
	OptionKubeconfig = "kubeconfig"
	OptionNamespace  = "kube-namespace"
)

// DefaultTTL is the default LeaseDuration: the Lease stores whole seconds.
const DefaultTTL = time.Second

// Descriptors returns the registry entries: kube-lease (token = leaseTransitions) and
// kube-lease-rv (token = the granting write's resourceVersion).
func Descriptors() []registry.Backend {
	d := func(name string, tok TokenKind, meaning, token string) registry.Backend {
		return registry.Backend{
			Name:    name,
			Meaning: meaning,
			Token:   token,
			Options: []registry.Option{{
				Name: OptionAPIServer, Env: EnvAPIServer,
				Usage: "the kube-apiserver binary for the kube-lease backends (default: the build " + BuildScript + " caches in " + CachePath() + ")",
			}, {
				Name: OptionClient, Env: EnvClient,
				Usage: "the kube-lease-client binary, the kube-lease backends' lock client (default: the build " + BuildScript + " caches in " + ClientCachePath() + ")",
			}, {
				Name: OptionKubeconfig, External: true, Secret: true,
				Usage: "kubeconfig of an existing Kubernetes cluster for the kube-lease backends (its current context; the run takes Lease fencecheck-<run id> and deletes it; client-side faults only)",
			}, {
				Name:  OptionNamespace,
				Usage: "namespace of the run's Lease on an existing cluster (--kubeconfig; default \"default\")",
			}},
			Facts: registry.Facts{
				TTL:           DefaultTTL,
				Configuration: "client-go's LeaseDuration, RenewDeadline and RetryPeriod as tested (leaseDurationSeconds is whole seconds, and a leader stops only after RenewDeadline without a renewal)",
			},
			Lifecycle: registry.Lifecycle{
				Version: func(_ context.Context, s registry.Settings) string {
					if s.Option(OptionKubeconfig) != "" {
						return ""
					}
					return "kube-apiserver " + APIServerVersion
				},
				Check: func(s registry.Settings) error {
					if k := s.Option(OptionKubeconfig); k != "" {
						if _, err := os.Stat(k); err != nil {
							return fmt.Errorf("--%s: %w", OptionKubeconfig, err)
						}
					} else if s.Option(OptionNamespace) != "" {
						return fmt.Errorf("--%s is for an existing cluster (--%s); the cluster fencecheck starts uses %q", OptionNamespace, OptionKubeconfig, Namespace)
					}
					if p := s.Option(OptionAPIServer); p != "" {
						if _, err := FindAPIServer(p); err != nil {
							return err
						}
					}
					if p := s.Option(OptionClient); p != "" {
						if _, err := FindClient(p); err != nil {
							return err
						}
					}
					return TimingFor(s.TTL).Validate()
				},
				Shape: func(s registry.Settings) registry.Shape {
					sh := registry.Shape{Backend: (*Backend)(nil)}
					sh.Locker, sh.Lease = execlock.ClientShape(clientProtocol)
					if s.Option(OptionKubeconfig) != "" {
						sh.Backend = external{}
					}
					return sh
				},
				Setup: func(s registry.Settings) string {
					if k := s.Option(OptionKubeconfig); k != "" {
						return "an existing Kubernetes cluster (kubeconfig " + k + "); client-go leaderelection with a LeaseLock, RenewDeadline = 2/3 and RetryPeriod = 2/15 of LeaseDuration"
					}
					return "kube-apiserver " + APIServerVersion + " (built from the Go module proxy) on an embedded etcd; client-go leaderelection with a LeaseLock, RenewDeadline = 2/3 and RetryPeriod = 2/15 of LeaseDuration"
				},
				// The lock client always (kube-lease-client: --kube-lease-client, its variable,
				// else the build); the kube-apiserver to start (--kube-apiserver, its variable,
				// else the build) but on an existing cluster.
				Needs: func(s registry.Settings) []proc.Need {
					client := ClientNeed.Or(s.Option(OptionClient))
					if s.Option(OptionKubeconfig) != "" {
						return []proc.Need{client}
					}
					return []proc.Need{client, APIServerNeed.Or(s.Option(OptionAPIServer))}
				},
				Start: func(ctx context.Context, env registry.Env) (harness.Backend, error) {
					return start(ctx, env, name, tok)
				},
			},
			Listing: registry.Listing{
				// leaseTransitions is the API's own count of holders; the resourceVersion is
				// opaque by the API's contract, whatever it is on etcd.
				Service:     Name,
				Recommended: tok == TokenTransitions,
			},
		}
	}
	return []registry.Backend{
		d(Name, TokenTransitions,
			"client-go leaderelection (LeaseLock) against a real kube-apiserver on embedded etcd; token = the Lease's spec.leaseTransitions written by the granting update",
			"the Lease's spec.leaseTransitions at grant (client-go adds 1 per change of holder)"),
		d(NameRV, TokenResourceVersion,
			"kube-lease with token = the Lease's metadata.resourceVersion after the granting update (etcd's revision of that write)",
			"the Lease's resourceVersion after the granting update (opaque by the API's contract; etcd's revision here)"),
	}
}

func start(ctx context.Context, env registry.Env, name string, tok TokenKind) (harness.Backend, error) {
	client, err := FindClient(env.Option(OptionClient))
	if err != nil {
		return nil, registry.Input(err)
	}
	if k := env.Option(OptionKubeconfig); k != "" {
		cfg := Config{TTL: env.TTL, Token: tok, Client: client, Kubeconfig: k, Namespace: env.Option(OptionNamespace), RunID: env.RunID, Logger: env.Logger, name: name}
		if err := cfg.Validate(); err != nil {
			return nil, registry.Input(err)
		}
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		b, err := Start(sctx, cfg)
		if err != nil {
			return nil, registry.Input(err) // the user's cluster, or their kubeconfig
		}
		return external{b}, nil
	}
	bin, err := FindAPIServer(env.Option(OptionAPIServer))
	if err != nil {
		return nil, registry.Input(err)
	}
	dir, err := env.TempDir()
	if err != nil {
		return nil, err
	}
	w, _, err := env.LogFile("kube-apiserver.log")
	if err != nil {
		return nil, err
	}
	_, etcdLog, err := env.LogFile("etcd.log")
	if err != nil {
		return nil, err
	}
	cfg := Config{TTL: env.TTL, Token: tok, Binary: bin, Client: client, Dir: dir, LogWriter: w, EtcdLog: etcdLog, Logger: env.Logger, name: name}
	if err := cfg.Validate(); err != nil {
		return nil, registry.Input(err)
	}
	sctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	return Start(sctx, cfg)
}
