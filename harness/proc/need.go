package proc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// HideEnv names the variable that makes optional programs look absent, so that a machine
// with every package installed can test what a bare one does: "all" hides every Need, a
// comma-separated list hides the Needs it names (by program, file or module name, or by
// package: "redis-server,zookeeper").
const HideEnv = "FENCECHECK_HIDE_PROGRAMS"

// SystemPython is Debian's interpreter, the one Debian's python3-* modules load under.
const SystemPython = "/usr/bin/python3"

// Need is something from the machine that fencecheck can use but a bare machine lacks: a
// program, a file or a Python module of Debian's interpreter, and how to get it. Every
// lookup of such a thing goes through a Need, so that HideEnv reaches all of them.
type Need struct {
	// Program is a program looked up in PATH (a bare name) or a path.
	Program string
	// File is a path that must exist; a glob pattern finds the first match (e.g.
	// "/usr/lib/*/faketime/libfaketime.so.1", whatever the machine's multiarch triplet).
	File string
	// PythonModule must import under SystemPython.
	PythonModule string
	// Package is the Debian package that provides it.
	Package string
	// Build, when no package provides it, is the command that builds it.
	Build string
	// Lookup, if set, finds it instead of PATH or File (a binary with an override
	// variable and a cache folder); it returns "" when it is not there.
	Lookup func() string
}

// Or returns n with program as its Program when program is set (a binary the user
// chose), else n.
func (n Need) Or(program string) Need {
	if program != "" {
		n.Program, n.File, n.PythonModule, n.Lookup = program, "", "", nil
	}
	return n
}

// Name is what the need is called in messages and in HideEnv.
func (n Need) Name() string {
	switch {
	case n.Program != "":
		return filepath.Base(n.Program)
	case n.File != "":
		return filepath.Base(n.File)
	case n.PythonModule != "":
		return "python3-module " + n.PythonModule
	}
	return n.Package
}

// Hint is how to get it: "apt-get install redis-server", or the build command.
func (n Need) Hint() string {
	if n.Build != "" {
		return "build it with " + n.Build
	}
	if n.Package != "" {
		return "apt-get install " + n.Package
	}
	return "install it"
}

// ErrHidden marks a need that HideEnv makes look absent; it also matches ErrNotFound.
var ErrHidden = fmt.Errorf("%w (hidden by %s)", ErrNotFound, HideEnv)

// Find returns the program's or file's path (the interpreter for a Python module). The
// error wraps ErrNotFound and says in one line what is missing and how to get it.
func (n Need) Find() (string, error) {
	if Hidden(n) {
		return "", n.missing(ErrHidden)
	}
	if n.Lookup != nil {
		if p := n.Lookup(); p != "" {
			return p, nil
		}
		return "", n.missing(ErrNotFound)
	}
	switch {
	case n.Program != "":
		if p, err := exec.LookPath(n.Program); err == nil {
			return p, nil
		}
		// Debian puts servers in sbin, which a non-root PATH leaves out.
		if !strings.Contains(n.Program, "/") {
			for _, dir := range []string{"/usr/sbin", "/sbin", "/usr/local/sbin"} {
				if p, err := exec.LookPath(filepath.Join(dir, n.Program)); err == nil {
					return p, nil
				}
			}
		}
		return "", n.missing(ErrNotFound)
	case n.File != "":
		matches, _ := filepath.Glob(n.File)
		for _, m := range matches {
			if _, err := os.Stat(m); err == nil {
				return m, nil
			}
		}
		return "", n.missing(ErrNotFound)
	case n.PythonModule != "":
		if err := exec.Command(SystemPython, "-c", "import "+n.PythonModule).Run(); err != nil {
			return "", n.missing(ErrNotFound)
		}
		return SystemPython, nil
	}
	return "", fmt.Errorf("proc: a Need names no program, file or module")
}

// missingError is a need that is not there; its message is one line.
type missingError struct {
	need Need
	err  error
}

func (e missingError) Error() string {
	what := e.need.Name()
	if e.need.PythonModule != "" {
		what = fmt.Sprintf("%s cannot import %s", SystemPython, e.need.PythonModule)
	} else {
		what += " not found"
	}
	if errors.Is(e.err, ErrHidden) {
		what += " (hidden by " + HideEnv + ")"
	}
	return what + ": " + e.need.Hint()
}

func (e missingError) Unwrap() error { return e.err }

func (n Need) missing(err error) error { return missingError{n, err} }

// Missing returns "" when every need is there, else the first missing one's line.
func Missing(needs ...Need) string {
	for _, n := range needs {
		if _, err := n.Find(); err != nil {
			return err.Error()
		}
	}
	return ""
}

// InstallLine is the one command that installs what is missing of needs: an apt-get line
// for the packages and the build commands, "" when nothing is missing.
func InstallLine(needs ...Need) string {
	var pkgs, builds []string
	for _, n := range needs {
		if _, err := n.Find(); err == nil {
			continue
		}
		switch {
		case n.Build != "" && !slices.Contains(builds, n.Build):
			builds = append(builds, n.Build)
		case n.Package != "" && !slices.Contains(pkgs, n.Package):
			pkgs = append(pkgs, n.Package)
		}
	}
	var parts []string
	if len(pkgs) > 0 {
		parts = append(parts, "apt-get install "+strings.Join(pkgs, " "))
	}
	parts = append(parts, builds...)
	return strings.Join(parts, " && ")
}

// Hidden reports whether HideEnv makes n look absent.
func Hidden(n Need) bool {
	v := strings.TrimSpace(os.Getenv(HideEnv))
	if v == "" {
		return false
	}
	names := []string{n.Package, n.PythonModule}
	if n.Program != "" {
		names = append(names, filepath.Base(n.Program))
	}
	if n.File != "" {
		names = append(names, filepath.Base(n.File))
	}
	for _, h := range strings.Split(v, ",") {
		h = strings.TrimSpace(h)
		if h == "all" || (h != "" && slices.Contains(names, h)) {
			return true
		}
	}
	return false
}

func (n Need) isZero() bool {
	return n.Program == "" && n.File == "" && n.PythonModule == "" && n.Package == "" && n.Build == "" && n.Lookup == nil
}

// hiddenByName reports whether HideEnv names program itself. A program started by path
// rather than as a Need (a user's lock client) is not optional: "all" leaves it alone.
func hiddenByName(program string) bool {
	base := filepath.Base(program)
	for _, h := range strings.Split(os.Getenv(HideEnv), ",") {
		if strings.TrimSpace(h) == base {
			return true
		}
	}
	return false
}

// Libfaketime is Debian's libfaketime, which fencecheck preloads into a server process
// whose clock must run fast (a JVM's or mariadbd's; Go programs do not go through libc).
var Libfaketime = Need{File: "/usr/lib/*/faketime/libfaketime.so.1", Package: "faketime"}
