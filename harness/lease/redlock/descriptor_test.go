package redlock_test

import (
	"os/exec"
	"testing"

	"github.com/fencecheck/fencecheck/harness/harnesstest"
	"github.com/fencecheck/fencecheck/harness/lease/redlock"
)

// The contract suite on the redlock descriptor (3 servers), started as a run starts it;
// it is harness.Tokenless, so the token check skips.
func TestDescriptor(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server not installed (Debian package redis-server)")
	}
	harnesstest.Descriptor(t, redlock.Descriptor())
}
