package proc

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Descendants lists the live processes below pid (its children, their children, ...),
// read from /proc. Tests use it to prove a run leaves no process behind; elsewhere it
// returns nil.
func Descendants(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	parent := map[int]int{}
	for _, e := range entries {
		id, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// The command name may hold spaces and parentheses: fields start after the last ')'.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 || f[0] == "Z" { // a zombie is dead, only not yet reaped
			continue
		}
		ppid, err := strconv.Atoi(f[1])
		if err != nil {
			continue
		}
		parent[id] = ppid
	}
	var out []int
	frontier := []int{pid}
	for len(frontier) > 0 {
		p := frontier[0]
		frontier = frontier[1:]
		for id, pp := range parent {
			if pp == p {
				out = append(out, id)
				frontier = append(frontier, id)
			}
		}
	}
	return out
}

// startTime is the process's start time (field 22 of /proc/PID/stat, in clock ticks
// since boot).
func startTime(pid int) (string, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return "", false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return "", false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 { // fields after the name start at 3 (state): 22 is f[19]
		return "", false
	}
	return f[19], true
}
