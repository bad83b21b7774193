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
// runs the contract suite, a scenario and the evaluate scorecard on it in its go test,
// through the fencecheck package.
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
	goCmd := func(args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, goBin, args...)
		cmd.Dir = filepath.Join("testdata", "ownlock")
		// Its own go.mod and go.sum, never a workspace's.
		cmd.Env = append(os.Environ(), "GOWORK=off")
		return cmd
	}
	cmd := goCmd("test", "-count=1", "./...")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go test in %s: %v\n%s", cmd.Dir, err, out)
	}
	if !strings.Contains(string(out), "ok  \texample.com/ownlock") {
		t.Fatalf("the example's tests did not run:\n%s", out)
	}
	t.Logf("%s", out)

	// A user's module links no backend it does not register: no built-in backend, none
	// of their clients, servers or drivers.
	deps, err := goCmd("list", "-deps", "-test", "./...").Output()
	if err != nil {
		t.Fatalf("go list -deps -test: %v", err)
	}
	for _, p := range strings.Fields(string(deps)) {
		for _, banned := range []string{
			"k8s.io/", "go.etcd.io/", "github.com/redis/", "github.com/go-redsync/", "github.com/nats-io/",
			"github.com/jackc/", "modernc.org/sqlite", "github.com/go-sql-driver/", "github.com/go-zookeeper/",
			"github.com/hashicorp/raft", "github.com/fencecheck/fencecheck/harness/builtin",
			"github.com/fencecheck/fencecheck/harness/lease/",
		} {
			if strings.HasPrefix(p, banned) {
				t.Errorf("the example module links %s (a backend it does not use)", p)
			}
		}
	}
}
