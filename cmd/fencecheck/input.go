package main

// What the user typed, and how it is refused: one line that says what is wrong and
// where, with the name they most likely meant, and exit 2 (badInput, usageError). The
// checks every command shares live here, so that each refuses the same way.

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/fencecheck/fencecheck/internal/editdist"
	"github.com/fencecheck/fencecheck/models"
)

// exitError ends a command with an exit code. A message, if any, is printed as one line
// "fencecheck CMD: message"; a usage error adds a line pointing at the command's help.
type exitError struct {
	code  int
	msg   string
	usage bool
}

func (e *exitError) Error() string { return e.msg }

// usageError is a usage mistake (exit 2, with a pointer to -h).
func usageError(format string, args ...any) error {
	return &exitError{code: exitUsage, msg: fmt.Sprintf(format, args...), usage: true}
}

// badInput is input that cannot run as given (exit 2), said in one line.
func badInput(format string, args ...any) error {
	return &exitError{code: exitUsage, msg: fmt.Sprintf(format, args...)}
}

// trimList trims the names of a list flag and drops empty ones.
func trimList(in []string) []string {
	var out []string
	for _, s := range in {
		for _, p := range strings.Split(s, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// checkParallel refuses a --parallel outside 1..8.
func checkParallel(n int) error {
	if n < 1 || n > 8 {
		return badInput("--parallel must be between 1 and 8, got %d", n)
	}
	return nil
}

// parseFailOn parses --fail-on: properties.
func parseFailOn(list []string) ([]models.Property, error) {
	var out []models.Property
	var known []string
	for _, p := range models.AllProperties {
		known = append(known, string(p))
	}
	for _, part := range trimList(list) {
		found := false
		for _, p := range models.AllProperties {
			if string(p) == part {
				out = append(out, p)
				found = true
			}
		}
		if !found {
			hint := didYouMean(part, known)
			return nil, badInput("--fail-on: unknown property %q%s (want some of %s)", part, hint, strings.Join(known, ", "))
		}
	}
	return out, nil
}

// checkName refuses a name that is not known, suggesting the nearest.
func checkName(what, name string, known []string) error {
	for _, k := range known {
		if k == name {
			return nil
		}
	}
	return badInput("unknown %s %q%s (see 'fencecheck list')", what, name, didYouMean(name, known))
}

// checkNames checks each of names; an empty list is an error.
func checkNames(what string, names, known []string) error {
	if len(names) == 0 {
		return badInput("no %s given", what)
	}
	for _, n := range names {
		if err := checkName(what, n, known); err != nil {
			return err
		}
	}
	return nil
}

// suggest returns the known name a mistyped one most likely meant ("" when none is
// close): a name a few edits away (naive-unfenced-paus), one it begins (zoo), or one it
// abbreviates (zk: zookeeper).
func suggest(input string, known []string) string {
	type cand struct {
		name       string
		kind, dist int
	}
	var cs []cand
	in := strings.ToLower(input)
	for _, k := range known {
		lk := strings.ToLower(k)
		d := editdist.Levenshtein(in, lk)
		switch {
		case in == lk:
			return k
		case d <= max(2, len(in)/4):
			cs = append(cs, cand{k, 0, d})
		case len(in) >= 2 && strings.HasPrefix(lk, in):
			cs = append(cs, cand{k, 1, d})
		case len(in) >= 2 && in[0] == lk[0] && subsequence(in, lk):
			cs = append(cs, cand{k, 2, d})
		}
	}
	if len(cs) == 0 {
		return ""
	}
	best := slices.MinFunc(cs, func(a, b cand) int {
		return cmp.Or(cmp.Compare(a.kind, b.kind), cmp.Compare(a.dist, b.dist), cmp.Compare(len(a.name), len(b.name)), strings.Compare(a.name, b.name))
	})
	return best.name
}

// didYouMean is `; did you mean "x"?` for the suggestion, or "".
func didYouMean(input string, known []string) string {
	if s := suggest(input, known); s != "" && s != input {
		return fmt.Sprintf("; did you mean %q?", s)
	}
	return ""
}

// subsequence reports whether every byte of a appears in b in order.
func subsequence(a, b string) bool {
	i := 0
	for j := 0; j < len(b) && i < len(a); j++ {
		if a[i] == b[j] {
			i++
		}
	}
	return i == len(a)
}

// wOK and xOK are access(2)'s W_OK and X_OK: may write, may enter.
const wOK, xOK = 0x2, 0x1

// writableDir refuses a folder a command is to write into (a results store, --html,
// --out) that cannot be one, before anything runs: empty, a file, under a file, or where
// nothing may be written (permissions, a read-only mount). Such a path is the user's to
// change (exit 2), not fencecheck's failure. The folder itself need not exist yet: the
// nearest folder that does is checked, and nothing is left behind. Access(2) says yes to
// root everywhere, and a kernel file system (/proc, /sys) refuses what its permissions
// allow, so the folder is also asked by making a folder in it and removing it at once.
func writableDir(flag, dir string) error {
	if strings.TrimSpace(dir) == "" {
		return badInput("%s is empty: give a folder to write into", flag)
	}
	for p := filepath.Clean(dir); ; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		switch {
		case err == nil && !st.IsDir():
			return badInput("%s %q: %s is a file, not a folder", flag, dir, p)
		case err == nil:
			// access(2) also answers EROFS for a read-only mount, even to root.
			if err := syscall.Access(p, wOK|xOK); err != nil {
				return badInput("%s %q: cannot write in %s: %s", flag, dir, p, pathReason(err))
			}
			probe, err := os.MkdirTemp(p, ".fencecheck-probe-")
			if err != nil {
				return badInput("%s %q: cannot write in %s: %s", flag, dir, p, pathReason(err))
			}
			_ = os.Remove(probe)
			return nil
		case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
			return badInput("%s %q: %s", flag, dir, pathReason(err))
		}
		if parent := filepath.Dir(p); parent == p {
			return nil
		}
	}
}

// pathReason is why a path cannot be used, in words (the errno's text without the
// operation and path Go puts before it).
func pathReason(err error) string {
	var errno syscall.Errno
	switch {
	case errors.Is(err, syscall.EROFS):
		return "a read-only file system"
	case errors.Is(err, fs.ErrPermission):
		return "permission denied"
	case errors.As(err, &errno):
		return errno.Error()
	}
	return err.Error()
}
