package nats_test

import (
	"os/exec"
	"testing"

	"github.com/fencecheck/fencecheck/harness/harnesstest"
	"github.com/fencecheck/fencecheck/harness/lease/nats"
)

// The contract suite on the nats descriptor, started as a run starts it.
func TestDescriptor(t *testing.T) {
	if _, err := exec.LookPath("nats-server"); err != nil {
		t.Skip("nats-server not installed (Debian package nats-server)")
	}
	harnesstest.Descriptor(t, nats.Descriptor())
}
