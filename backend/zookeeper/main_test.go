package zookeeper_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/fencecheck/fencecheck/harness/proc"
)

// TestMain fails the package when a goroutine or a server process outlives the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	if left := proc.Descendants(os.Getpid()); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "processes left behind: %v\n", left)
		code = 1
	}
	os.Exit(code)
}
