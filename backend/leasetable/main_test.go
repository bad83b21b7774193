package leasetable

import (
	"os"
	"runtime"
	"testing"

	"github.com/fencecheck/fencecheck/harness/proc/proctest"
)

// TestMain lets two runs per CPU go at once unless -parallel is given: the careful skew
// scenarios spend most of their 40 s waiting on a 20 s TTL, not on the CPU.
func TestMain(m *testing.M) {
	proctest.Parallel(2 * runtime.GOMAXPROCS(0))
	os.Exit(proctest.VerifyNoLeaks(m))
}
