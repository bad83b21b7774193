package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// version says which fencecheck this is, from the build information the Go toolchain
// records: the module version (v1.2.3 when installed with go install ...@v1.2.3,
// "(devel)" from a checkout), the VCS revision and time, whether the tree was modified,
// and the Go version.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "fencecheck (no build information), " + runtime.Version()
	}
	return versionOf(bi)
}

// versionOf is the version line of a build.
func versionOf(bi *debug.BuildInfo) string {
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, at string
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	parts := []string{"fencecheck " + v}
	if rev != "" {
		r := "revision " + rev
		if at != "" {
			r += " (" + at + ")"
		}
		if modified {
			r += ", modified"
		}
		parts = append(parts, r)
	}
	parts = append(parts, fmt.Sprintf("%s %s/%s", bi.GoVersion, runtime.GOOS, runtime.GOARCH))
	return strings.Join(parts, ", ")
}
