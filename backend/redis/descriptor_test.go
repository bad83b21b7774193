package redis_test

import (
	"testing"

	"github.com/fencecheck/fencecheck/backend/redis"
	"github.com/fencecheck/fencecheck/harness/proc/proctest"
	"github.com/fencecheck/fencecheck/harnesstest"
)

// The contract suite on each redis descriptor, started as a run starts it (redis-notoken
// skips the token check: it is harness.Tokenless with a reason).
func TestDescriptors(t *testing.T) {
	proctest.Skip(t, redis.ServerNeed)
	for _, d := range redis.Descriptors() {
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel() // each starts servers of its own
			harnesstest.Descriptor(t, d)
		})
	}
}
