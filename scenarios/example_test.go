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
			"github.com/hashicorp/raft", "github.com/fencecheck/fencecheck/builtin",
			"github.com/fencecheck/fencecheck/backend/",
		} {
			if strings.HasPrefix(p, banned) {
				t.Errorf("the example module links %s (a backend it does not use)", p)
			}
		}
	}
}

// Every Go snippet of docs/go-api.md is code of the example module, line for line (the
// indentation aside): TestExampleModule compiles and runs it, so a snippet a user
// copies compiles.
func TestGoAPISnippets(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "go-api.md"))
	if err != nil {
		t.Fatal(err)
	}
	var code []string // the example's .go files, each as trimmed lines joined by "\n"
	files, err := filepath.Glob(filepath.Join("testdata", "ownlock", "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("the example's files: %v (%d)", err, len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		code = append(code, trimLines(string(b)))
	}
	snippets := strings.Split(string(doc), "```go\n")[1:]
	if len(snippets) == 0 {
		t.Fatal("docs/go-api.md has no Go snippet")
	}
	for i, s := range snippets {
		end := strings.Index(s, "```")
		if end < 0 {
			t.Fatalf("snippet %d is not closed", i+1)
		}
		want := trimLines(s[:end])
		found := false
		for _, c := range code {
			found = found || strings.Contains("\n"+c+"\n", "\n"+want+"\n")
		}
		if !found {
			t.Errorf("docs/go-api.md's Go snippet %d is not code of testdata/ownlock (add it to the example's code, or make it match):\n%s", i+1, s[:end])
		}
	}
}

// trimLines is s with each line's surrounding white space removed and blank lines
// dropped.
func trimLines(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
