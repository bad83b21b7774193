package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/campaign"
	"github.com/fencecheck/fencecheck/harness/proc"
)

// One exit-code rule for every command: bad input, an unusable path, a named backend
// that cannot run here, an unknown completion shell, a TTL no run should take: exit 2,
// with one line saying what is wrong (and, for a usage mistake, a pointer to -h).
func TestExitCodeRule(t *testing.T) {
	// Every optional program but the ones named looks absent: redis is "missing".
	t.Setenv(proc.HideEnv, "redis-server")
	tmp := t.TempDir()
	file := filepath.Join(tmp, "a-file")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o644))
	readOnly := filepath.Join(tmp, "read-only")
	require.NoError(t, os.Mkdir(readOnly, 0o555))
	// root may write anywhere chmod forbids: the read-only rows need another user.
	probe, err := os.CreateTemp(readOnly, "probe")
	rootWrites := err == nil
	if rootWrites {
		probe.Close()
		require.NoError(t, os.Remove(probe.Name()))
	}
	// A kernel file system refuses a folder even to root, whom access(2) lets write.
	procRefuses := false
	if st, err := os.Stat("/proc"); err == nil && st.IsDir() {
		d, err := os.MkdirTemp("/proc", "probe")
		procRefuses = err != nil
		if err == nil {
			_ = os.Remove(d)
		}
	}
	hist := "testdata/concurrent-legal.json"
	out := t.TempDir()

	type row struct {
		class string
		args  []string
		want  string
	}
	var rows []row
	// Bad input: an unknown flag, on every command.
	for _, cmd := range []string{"run", "check", "list", "doctor", "matrix", "evaluate", "compare", "soak", "zoo", "explore", "merge", "report", "serve", "completion", "help"} {
		rows = append(rows, row{"bad input", []string{cmd, "--no-such-flag"}, "unknown flag --no-such-flag"})
	}
	// Unusable paths: every folder a command writes into, given as a file, under a
	// file, read-only or empty.
	writers := []struct {
		cmd  string
		flag string
		args []string
	}{
		{"run", "--out", []string{"--backend", "naive"}},
		{"matrix", "--out", []string{"--backend", "naive", "--fault", "pause"}},
		{"evaluate", "--out", []string{"--backend", "naive"}},
		{"compare", "--out", []string{"--backend", "naive"}},
		{"soak", "--out", []string{"--scenario", "naive-fenced-pause", "--runs", "1"}},
		{"zoo", "--out", []string{"--bug", "shedlock-132"}},
		{"explore", "--out", []string{"--backend", "naive", "--budget", "1s"}},
		{"merge", "--store", []string{out}},
		{"check", "--html", []string{hist}},
		{"report", "--out", []string{hist}},
	}
	for _, w := range writers {
		rows = append(rows,
			row{"a file as folder", append([]string{w.cmd, w.flag, file}, w.args...), w.flag + " " + `"` + file + `": ` + file + " is a file, not a folder"},
			row{"a folder under a file", append([]string{w.cmd, w.flag, filepath.Join(file, "sub")}, w.args...), file + " is a file, not a folder"})
		if procRefuses {
			rows = append(rows, row{"kernel file system", append([]string{w.cmd, w.flag, "/proc/sub"}, w.args...), w.flag + ` "/proc/sub": cannot write in /proc`})
		}
		if !rootWrites {
			rows = append(rows, row{"read-only folder", append([]string{w.cmd, w.flag, readOnly}, w.args...), "cannot write in " + readOnly + ": permission denied"})
		}
		// An empty --html or report --out means "none" and "beside the history", and an
		// empty soak or zoo --out a temporary folder (documented); elsewhere it is refused.
		if w.cmd != "check" && w.cmd != "report" && w.cmd != "soak" && w.cmd != "zoo" {
			rows = append(rows, row{"empty folder", append([]string{w.cmd, w.flag, ""}, w.args...), w.flag + " is empty: give a folder to write into"})
		}
	}
	// Paths to read that are not there.
	rows = append(rows,
		row{"missing input", []string{"check", "no-such.json"}, "no-such.json: no such file or directory"},
		row{"missing input", []string{"report", "no-such-dir"}, "no-such-dir: no such file or directory"},
		row{"missing input", []string{"serve", "no-such-dir"}, "no-such-dir: no such file or directory"},
		row{"missing input", []string{"serve", ""}, "the folder to serve is empty"},
		row{"missing input", []string{"merge", "--store", out, "no-such-dir"}, "no-such-dir: no such file or directory"},
	)
	// A named backend that cannot run here.
	const noRedis = "redis-server not found (hidden by FENCECHECK_HIDE_PROGRAMS): apt-get install redis-server"
	rows = append(rows,
		row{"missing backend", []string{"run", "--backend", "redis", "--out", out}, noRedis},
		row{"missing backend", []string{"matrix", "--backend", "redis", "--fault", "pause", "--out", out}, noRedis},
		row{"missing backend", []string{"evaluate", "--backend", "redis", "--out", out}, noRedis},
		row{"missing backend", []string{"compare", "--backend", "redis", "--out", out}, noRedis},
		row{"missing backend", []string{"soak", "--scenario", "redis-fenced-pause", "--out", out}, noRedis},
		row{"missing backend", []string{"zoo", "--bug", "redis-counter-restart", "--out", out}, noRedis},
	)
	// explore's own input, and a schedule file that cannot be replayed.
	badSchedule := filepath.Join(tmp, "bad-schedule.json")
	require.NoError(t, os.WriteFile(badSchedule, []byte(`{"format": "fencecheck.schedule/v1", "backend": "naive", "resource": "unfenced", "ttl": "500ms", "clients": 2, "seed": 1,
  "items": [{"at": "1s", "kind": "client-crash", "client": 0, "hold": "1s"}]}`), 0o644))
	rows = append(rows,
		row{"bad budget", []string{"explore", "--backend", "naive", "--budget", "0s", "--out", out}, "--budget must be positive, got 0s"},
		row{"bad budget", []string{"explore", "--backend", "naive", "--budget", "-1m", "--out", out}, "--budget must be positive, got -1m0s"},
		row{"no backend", []string{"explore", "--out", out}, "choose the backend to explore with --backend"},
		row{"unknown zoo entry", []string{"explore", "--bug", "etcd-1145", "--out", out}, `unknown zoo entry "etcd-1145"`},
		row{"zoo entry and backend", []string{"explore", "--bug", "etcd-11457", "--backend", "naive", "--out", out}, "give either --bug or --backend"},
		row{"control without entry", []string{"explore", "--backend", "naive", "--control", "--out", out}, "--control needs --bug"},
		row{"bad replays", []string{"explore", "--backend", "naive", "--replays", "0", "--out", out}, "--replays must be between 1 and 100, got 0"},
		row{"missing backend", []string{"explore", "--backend", "redis", "--out", out}, noRedis},
		row{"unknown fault", []string{"explore", "--backend", "naive", "--fault", "meteor", "--out", out}, `unknown fault "meteor"`},
		row{"bad schedule", []string{"run", "--schedule", badSchedule, "--out", out}, badSchedule + `: schedule item 1 (client-crash at 1s): fault "client-crash" kills a lock client`},
		row{"bad schedule", []string{"run", "--schedule", hist, "--out", out}, hist + `: not a schedule file: json: unknown field`},
		row{"bad schedule", []string{"run", "--schedule", "no-such.json", "--out", out}, "no-such.json: no such file or directory"},
		row{"bad schedule", []string{"run", "--schedule", badSchedule, "--fault", "pause", "--out", out}, "--fault cannot change it"},
	)
	// Completion shells it has no script for.
	rows = append(rows,
		row{"unknown shell", []string{"completion", "tcsh"}, "unknown shell tcsh: bash, zsh, fish or powershell"},
		row{"unknown shell", []string{"completion"}, "name a shell: bash, zsh, fish or powershell"},
		row{"unknown command", []string{"help", "no-such-command"}, `unknown help topic "no-such-command"`},
	)
	// A TTL no run should take (every wait of a run derives from it).
	for _, args := range [][]string{
		{"run", "--ttl", "1000h", "--fault", "pause"},
		{"evaluate", "--backend", "naive", "--ttl", "1000h"},
		{"compare", "--backend", "naive", "--ttl", "1000h"},
	} {
		rows = append(rows, row{"ttl too long", append(args, "--out", out), "ttl 1000h0m0s is too long: at most 1m0s for naive"})
	}

	for _, r := range rows {
		t.Run(r.class+"/"+r.args[0], func(t *testing.T) {
			code, stdout, stderr := run(t, r.args...)
			require.Equal(t, exitUsage, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			require.Contains(t, lines[0], r.want)
			require.True(t, strings.HasPrefix(lines[0], "fencecheck "), lines[0])
			// One line; a usage mistake adds where its help is.
			require.LessOrEqual(t, len(lines), 2, stderr)
			if len(lines) == 2 {
				require.Regexp(t, `^see 'fencecheck( [a-z]+)? -h'$`, lines[1])
			}
			require.NotContains(t, stdout, "running ", "refused before anything ran")
			require.NotContains(t, stdout+stderr, "warning", "refused, not warned about")
		})
	}
	for _, dir := range []string{readOnly, out} {
		left, err := os.ReadDir(dir)
		require.NoError(t, err)
		require.Empty(t, left, "a refused command wrote into %s", dir)
	}
}

// compare with a backend it was asked for that cannot run here compares the others, and
// is incomplete (exit 2), never complete with exit 0.
func TestCompareAskedBackendMissing(t *testing.T) {
	t.Setenv(proc.HideEnv, "redis-server")
	// One run per cell: what is asserted is the incomplete outcome, not the figures, and
	// the test runs alone (t.Setenv); at the default five it took half a minute.
	code, stdout, stderr := run(t, "compare", "--backend", "redis,naive", "--fault", "pause", "--runs", "1", "--json", "--out", t.TempDir())
	require.Equal(t, exitUsage, code, "stderr:\n%s", stderr)
	var doc struct {
		Outcome  string `json:"outcome"`
		Exit     int    `json:"exit"`
		Complete bool   `json:"complete"`
		TTLNanos int64  `json:"ttl_ns"`
		Skipped  []struct {
			Backend string `json:"backend"`
			Asked   bool   `json:"asked"`
		} `json:"skipped"`
		Services []struct {
			Name string `json:"name"`
		} `json:"services"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc), stdout)
	require.Equal(t, "incomplete", doc.Outcome)
	require.Equal(t, exitUsage, doc.Exit)
	require.False(t, doc.Complete)
	require.Equal(t, campaign.DefaultCompareTTL.Nanoseconds(), doc.TTLNanos, "without --ttl, the default TTL")
	require.Len(t, doc.Skipped, 1)
	require.Equal(t, "redis", doc.Skipped[0].Backend)
	require.True(t, doc.Skipped[0].Asked)
	require.Len(t, doc.Services, 1, "the backend that can run is compared")
	require.Contains(t, stderr, "fencecheck compare: redis was asked for and cannot run here, so the comparison is incomplete")
}
