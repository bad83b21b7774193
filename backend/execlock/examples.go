package execlock

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/harness/proc"
)

// examples are the shipped example clients. A run writes them to a folder of its own and
// names it in $FENCECHECK_EXAMPLES, so that a command can use one wherever fencecheck
// runs from (`python3 "$FENCECHECK_EXAMPLES/naive_http.py"`: the catalogue does).
//
//go:embed examples/*.py examples/*.sh examples/*.java
var examples embed.FS

// ExamplesEnv is the environment variable that names the examples' folder.
const ExamplesEnv = "FENCECHECK_EXAMPLES"

// writeExamples copies the examples into dir.
func writeExamples(dir string) error {
	entries, err := fs.ReadDir(examples, "examples")
	if err != nil {
		return err
	}
	for _, e := range entries {
		b, err := examples.ReadFile("examples/" + e.Name())
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o755); err != nil {
			return fmt.Errorf("exec: write example %s: %w", e.Name(), err)
		}
	}
	return nil
}

// JavaLib is where Debian installs the jars curator_lock.sh puts on its class path.
const JavaLib = "/usr/share/java"

// CuratorNeeds are what examples/curator_lock.sh runs with: a JDK (it compiles
// CuratorLock.java once) and Curator's, ZooKeeper's, Guava's and SLF4J's jars.
func CuratorNeeds() []proc.Need {
	jdk := "openjdk-17-jdk-headless"
	return []proc.Need{
		{Program: "java", Package: jdk},
		{Program: "javac", Package: jdk},
		{File: JavaLib + "/curator-recipes.jar", Package: "libcurator-recipes-java"},
		{File: JavaLib + "/curator-framework.jar", Package: "libcurator-recipes-java"},
		{File: JavaLib + "/curator-client.jar", Package: "libcurator-recipes-java"},
		{File: JavaLib + "/zookeeper.jar", Package: "libzookeeper-java"},
		{File: JavaLib + "/zookeeper-jute.jar", Package: "libzookeeper-java"},
		{File: JavaLib + "/guava.jar", Package: "libguava-java"},
		{File: JavaLib + "/slf4j-api.jar", Package: "libslf4j-java"},
		{File: JavaLib + "/slf4j-simple.jar", Package: "libslf4j-java"},
	}
}

// systemPython is Debian's interpreter, the one Debian's python3-* libraries load under.
var systemPython = proc.Need{Program: proc.SystemPython, Package: "python3"}

// ExampleNeeds are what the shipped examples that the client command cmd runs need,
// found by their file names in cmd: a command of the user's own needs what they know.
func ExampleNeeds(cmd string) []proc.Need {
	var needs []proc.Need
	for _, e := range []struct {
		file  string
		needs []proc.Need
	}{
		{"naive_http.py", []proc.Need{{Program: "python3", Package: "python3"}}},
		{"naive_http.sh", []proc.Need{{Program: "curl", Package: "curl"}}},
		{"redis_lock.py", []proc.Need{systemPython, {PythonModule: "redis", Package: "python3-redis"}}},
		{"kazoo_lock.py", []proc.Need{systemPython, {PythonModule: "kazoo", Package: "python3-kazoo"}}},
		{"curator_lock.sh", CuratorNeeds()},
	} {
		if strings.Contains(cmd, e.file) {
			needs = append(needs, e.needs...)
		}
	}
	return needs
}

// prepareExamples readies the examples cmd runs before its clients start: the Curator
// example compiles once (`curator_lock.sh --prepare`), so that javac's seconds do not
// count against the run's first answers.
func prepareExamples(ctx context.Context, dir, cmd string) error {
	if !strings.Contains(cmd, "curator_lock.sh") {
		return nil
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(pctx, "sh", filepath.Join(dir, "curator_lock.sh"), "--prepare").CombinedOutput()
	if err != nil {
		return fmt.Errorf("exec: curator_lock.sh --prepare: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}
