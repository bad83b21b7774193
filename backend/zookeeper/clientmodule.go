package zookeeper

import "github.com/fencecheck/fencecheck/harness"

var _ harness.ClientModuler = (*Backend)(nil)

// ClientModule implements harness.ClientModuler: the lock client is github.com/go-zookeeper/zk.
func (b *Backend) ClientModule() string { return "github.com/go-zookeeper/zk" }
