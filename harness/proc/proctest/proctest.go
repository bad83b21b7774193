// Package proctest has test helpers for packages that start real server processes: a
// TestMain check that no goroutine and no child process outlives the tests.
package proctest

import (
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fencecheck/fencecheck/harness/proc"
)

// VerifyNoLeaks runs the tests, then waits (up to 15 s, for a loaded machine) until no
// goroutine is left (goleak) and no process started by the tests is alive. It returns
// the exit code for os.Exit.
func VerifyNoLeaks(m *testing.M) int {
	code := m.Run()
	if code != 0 {
		return code
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		gerr := goleak.Find()
		kids := proc.Descendants(os.Getpid())
		if gerr == nil && len(kids) == 0 {
			return 0
		}
		if time.Now().After(deadline) {
			if gerr != nil {
				fmt.Fprintf(os.Stderr, "goleak: %v\n", gerr)
			}
			if len(kids) > 0 {
				fmt.Fprintf(os.Stderr, "processes left behind by the tests: %v\n", kids)
			}
			return 1
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Skip skips t, in one line naming what is missing and how to get it, unless every need
// is there.
func Skip(t testing.TB, needs ...proc.Need) {
	t.Helper()
	if why := proc.Missing(needs...); why != "" {
		t.Skip(why)
	}
}
