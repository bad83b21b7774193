package redis_test

import (
	"os/exec"
	"testing"

	"github.com/fencecheck/fencecheck/harness/harnesstest"
	"github.com/fencecheck/fencecheck/harness/lease/redis"
)

// The contract suite on each redis descriptor, started as a run starts it (redis-notoken
// skips the token check: it is harness.Tokenless with a reason).
func TestDescriptors(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server not installed (Debian package redis-server)")
	}
	for _, d := range redis.Descriptors() {
		t.Run(d.Name, func(t *testing.T) { harnesstest.Descriptor(t, d) })
	}
}
