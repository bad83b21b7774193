package etcd

import "github.com/fencecheck/fencecheck/harness"

var _ harness.ClientModuler = (*Backend)(nil)

// ClientModule implements harness.ClientModuler: the lock client is go.etcd.io/etcd/client/v3.
func (b *Backend) ClientModule() string { return "go.etcd.io/etcd/client/v3" }
