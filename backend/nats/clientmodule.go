package nats

import "github.com/fencecheck/fencecheck/harness"

var _ harness.ClientModuler = (*Backend)(nil)

// ClientModule implements harness.ClientModuler: the lock client is github.com/nats-io/nats.go.
func (b *Backend) ClientModule() string { return "github.com/nats-io/nats.go" }
