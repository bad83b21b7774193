package execlock

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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
