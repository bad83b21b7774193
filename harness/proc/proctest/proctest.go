// Package proctest has test helpers for packages that start real server processes: a
// TestMain check that no goroutine and no child process outlives the tests.
package proctest

import (
	"flag"
	"fmt"
	"os"
	"strconv"
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

// BareStageEnv is set by CI's bare stage (.ci/run), every test of which its full stage
// runs again, with every program installed and the race detector.
const BareStageEnv = "FENCECHECK_CI_BARE_STAGE"

// SkipInBareStage skips t, a long test that uses no optional program, when BareStageEnv
// is set: the bare stage is there for the tests that need a program (that each skips
// without it), and the full stage runs t as it is anyway. Anywhere else t runs.
func SkipInBareStage(t testing.TB) {
	t.Helper()
	if os.Getenv(BareStageEnv) != "" {
		t.Skip("uses no optional program: left to CI's full stage (" + BareStageEnv + " is set)")
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

// Parallel lets n tests of the package run at once (-test.parallel) unless the command
// line chose: for packages whose tests mostly wait on faults, TTLs and servers starting
// rather than compute, where the default of one per CPU leaves the CPUs idle. A package
// that raises it bounds what its runs cost together itself. Call it from TestMain,
// before m.Run.
func Parallel(n int) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given && n > 0 {
		if err := flag.Set("test.parallel", strconv.Itoa(n)); err != nil {
			panic(fmt.Sprintf("proctest: %v", err))
		}
	}
}

// DeadAddr returns a 127.0.0.1 address where connections are refused until the test
// ends (proc.RefusingAddr): no other test's server can take it meanwhile.
func DeadAddr(t testing.TB) string {
	t.Helper()
	addr, c, err := proc.RefusingAddr()
	if err != nil {
		t.Fatalf("dead address: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return addr
}
