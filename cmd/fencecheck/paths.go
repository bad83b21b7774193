package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

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
