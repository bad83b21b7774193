package proc

import (
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"time"
)

// Version runs the needed program with args (e.g. "--version") and returns the first
// line it prints, or "" when the program is missing or says nothing within 10 s. For a
// compare page's record of what ran; never an error a run depends on.
func Version(ctx context.Context, n Need, args ...string) string {
	path, err := n.Find()
	if err != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, path, args...).CombinedOutput()
	for _, line := range strings.Split(string(out), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			return line
		}
	}
	return ""
}

// versionInName matches a version number in a file name (zookeeper-3.8.0.jar).
var versionInName = regexp.MustCompile(`\d+(\.\d+)+`)

// FileVersion returns the version in the name of the needed file or of the files next
// to it that name the same thing with a version (Debian links zookeeper-3.8.0.jar to
// zookeeper.jar), or "".
func FileVersion(n Need) string {
	path, err := n.Find()
	if err != nil {
		return ""
	}
	if v := versionInName.FindString(filepath.Base(path)); v != "" {
		return v
	}
	stem := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	matches, _ := filepath.Glob(filepath.Join(filepath.Dir(path), stem+"-[0-9]*"+filepath.Ext(path)))
	for _, m := range matches {
		if v := versionInName.FindString(strings.TrimPrefix(filepath.Base(m), stem+"-")); v != "" && strings.HasPrefix(filepath.Base(m), stem+"-"+v) {
			return v
		}
	}
	return ""
}

// ModuleVersion is the version of a Go module linked into this program (e.g.
// "github.com/hashicorp/raft" → "v1.7.3"), or "" when it is not linked or the build
// records none.
func ModuleVersion(path string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, m := range bi.Deps {
		if m.Path == path {
			if m.Replace != nil && m.Replace.Version != "" {
				return m.Replace.Version
			}
			return m.Version
		}
	}
	if bi.Main.Path == path {
		return bi.Main.Version
	}
	return ""
}

// Embedded names a service linked into fencecheck with its module's version: "name
// v1.2.3 (embedded)", or "name (embedded)" where the build records no versions (a test
// binary).
func Embedded(name, module string) string {
	if v := ModuleVersion(module); v != "" {
		return name + " " + v + " (embedded)"
	}
	return name + " (embedded)"
}
