package redis

import "github.com/fencecheck/fencecheck/harness"

var _ harness.ClientModuler = (*Backend)(nil)

// ClientModule implements harness.ClientModuler: the lock client is github.com/gomodule/redigo.
func (b *Backend) ClientModule() string { return "github.com/gomodule/redigo" }
