package nats_test

import (
	"testing"

	"github.com/fencecheck/fencecheck/backend/nats"
	"github.com/fencecheck/fencecheck/harness/proc/proctest"
	"github.com/fencecheck/fencecheck/harnesstest"
)

// The contract suite on the nats descriptor, started as a run starts it.
func TestDescriptor(t *testing.T) {
	proctest.Skip(t, nats.ServerNeed)
	harnesstest.Descriptor(t, nats.Descriptor())
}
