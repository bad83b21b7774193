package redlock_test

import (
	"testing"

	"github.com/fencecheck/fencecheck/backend/redis"
	"github.com/fencecheck/fencecheck/harness/proc/proctest"

	"github.com/fencecheck/fencecheck/backend/redlock"
	"github.com/fencecheck/fencecheck/harnesstest"
)

// The contract suite on the redlock descriptor (3 servers), started as a run starts it;
// it is harness.Tokenless, so the token check skips.
func TestDescriptor(t *testing.T) {
	proctest.Skip(t, redis.ServerNeed)
	harnesstest.Descriptor(t, redlock.Descriptor())
}
