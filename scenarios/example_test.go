package scenarios

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The example in testdata/ownlock is a module of its own that requires fencecheck (a
// replace points at this repository): it defines a lock backend outside fencecheck and
// runs the contract suite, a scenario and the evaluate scorecard on it in its go test.
func TestExampleModule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and tests another module")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	t.Parallel() // its faults heal on events, like the catalogue's
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, "test", "-count=1", "./...")
	cmd.Dir = filepath.Join("testdata", "ownlock")
	// Its own go.mod and go.sum, never a workspace's.
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go test in %s: %v\n%s", cmd.Dir, err, out)
	}
	if !strings.Contains(string(out), "ok  \texample.com/ownlock") {
		t.Fatalf("the example's tests did not run:\n%s", out)
	}
	t.Logf("%s", out)
}
