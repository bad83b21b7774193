package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/harness/proc"
	"github.com/fencecheck/fencecheck/reports"
)

// cli is the fencecheck binary the tests run, built once for all of them (a link of
// it takes seconds of a loaded machine's CPU) by buildCLI, and removed by TestMain.
var cli struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

// buildCLI builds the fencecheck binary, once per test binary, with its VCS information
// when there is some (TestVersion reads it; the other tests do not mind).
func buildCLI(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	cli.once.Do(func() {
		cli.dir, cli.err = os.MkdirTemp("", "fencecheck-cli-")
		if cli.err != nil {
			return
		}
		cli.bin = filepath.Join(cli.dir, "fencecheck")
		build := exec.Command("go", "build", "-o", cli.bin, ".")
		build.Env = append(os.Environ(), "GOFLAGS=-buildvcs=auto")
		if out, err := build.CombinedOutput(); err != nil {
			cli.err = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	require.NoError(t, cli.err)
	return cli.bin
}

// removeCLI removes what buildCLI built, if it built anything.
func removeCLI() {
	if cli.dir != "" {
		_ = os.RemoveAll(cli.dir)
	}
}

// SIGTERM (what CI runners, Docker and Kubernetes stop a job with) and SIGHUP (a closed
// terminal) end a run as Ctrl-C does: its servers and clients stopped, its temp dirs
// removed, the history so far written with a note that says why, exit 2.
func TestRunStoppedBySignal(t *testing.T) {
	bin := buildCLI(t)
	t.Parallel() // it mostly waits; it checks its own runs' processes only
	for _, tc := range []struct {
		backend string
		sig     syscall.Signal
		name    string
	}{
		{"naive", syscall.SIGTERM, "SIGTERM"},
		{"naive", syscall.SIGHUP, "SIGHUP"},
		{"naive", syscall.SIGINT, "SIGINT"},
		{"etcd", syscall.SIGTERM, "SIGTERM"}, // embedded: its data dir is a temp dir
		{"redis", syscall.SIGHUP, "SIGHUP"},  // a server process of its own
	} {
		t.Run(tc.backend+"-"+tc.name, func(t *testing.T) {
			t.Parallel()
			needBackend(t, tc.backend)
			tmp := filepath.Join(t.TempDir(), "tmp")
			require.NoError(t, os.Mkdir(tmp, 0o755))
			out := t.TempDir()
			cmd := exec.Command(bin, "run", "--backend", tc.backend, "--fault", "pause", "--duration", "1m", "--out", out)
			cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
			var stdout, stderr syncBuffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			require.NoError(t, cmd.Start())
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			t.Cleanup(func() { _ = cmd.Process.Kill() }) // only if the test failed before it ended

			// The workload is under way once run.log says so.
			deadline := time.Now().Add(2 * time.Minute)
			for !strings.Contains(runLogs(t, out), "workload started") {
				select {
				case err := <-exited:
					t.Fatalf("fencecheck ended before its workload started (%v):\n%s\n%s", err, stdout.String(), stderr.String())
				case <-time.After(20 * time.Millisecond):
				}
				require.True(t, time.Now().Before(deadline), "the workload did not start:\n%s", stderr.String())
			}
			children := proc.Descendants(cmd.Process.Pid)
			if tc.backend == "redis" {
				require.NotEmpty(t, children, "redis-server runs as a process of its own")
			}
			require.NoError(t, cmd.Process.Signal(tc.sig))
			var err error
			select {
			case err = <-exited:
			case <-time.After(2 * time.Minute):
				t.Fatalf("fencecheck did not stop after %s:\n%s", tc.name, stderr.String())
			}
			var ee *exec.ExitError
			require.True(t, errors.As(err, &ee), "exit: %v", err)
			require.Equal(t, exitUsage, ee.ExitCode(), "stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
			require.Contains(t, stderr.String(), "fencecheck run: interrupted by "+tc.name)
			require.Equal(t, 1, strings.Count(strings.TrimSpace(stderr.String()), "\n")+1, "one line: %q", stderr.String())

			left, err := os.ReadDir(tmp)
			require.NoError(t, err)
			require.Empty(t, left, "temp files left behind")
			for _, pid := range children {
				require.False(t, alive(pid), "process %d outlived fencecheck", pid)
			}

			dirs, err := filepath.Glob(filepath.Join(out, "*", "2*"))
			require.NoError(t, err)
			require.Len(t, dirs, 1)
			require.FileExists(t, filepath.Join(dirs[0], reports.HistoryFile))
			note, err := os.ReadFile(filepath.Join(dirs[0], reports.FailedFile))
			require.NoError(t, err)
			require.Contains(t, string(note), "interrupted by "+tc.name+" (the history so far, ")
		})
	}
}

// A soak into a temporary store (--out "") keeps only the runs that show something; a
// run the interrupt cut short shows nothing, so nothing is left in TMPDIR.
func TestSoakTemporaryStoreStoppedBySignal(t *testing.T) {
	bin := buildCLI(t)
	t.Parallel() // it mostly waits; it checks its own TMPDIR only
	tmp := filepath.Join(t.TempDir(), "tmp")
	require.NoError(t, os.Mkdir(tmp, 0o755))
	cmd := exec.Command(bin, "soak", "--scenario", "naive-fenced-pause", "--runs", "3", "--out", "")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	deadline := time.Now().Add(2 * time.Minute)
	for !strings.Contains(runLogs(t, filepath.Join(tmp, "fencecheck-soak-*")), "workload started") {
		select {
		case err := <-exited:
			t.Fatalf("fencecheck ended before its workload started (%v):\n%s", err, stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		require.True(t, time.Now().Before(deadline), "the workload did not start:\n%s", stderr.String())
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	var err error
	select {
	case err = <-exited:
	case <-time.After(2 * time.Minute):
		t.Fatalf("fencecheck did not stop after SIGTERM:\n%s", stderr.String())
	}
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee), "exit: %v", err)
	require.Equal(t, exitUsage, ee.ExitCode(), "stderr:\n%s", stderr.String())
	left, err := os.ReadDir(tmp)
	require.NoError(t, err)
	require.Empty(t, left, "temp files left behind:\n%s", stderr.String())
	require.NotContains(t, stderr.String(), "(evidence: ")
}

// runLogs is every run.log under the store out.
func runLogs(t *testing.T, out string) string {
	files, err := filepath.Glob(filepath.Join(out, "*", "2*", reports.RunLog))
	require.NoError(t, err)
	var b strings.Builder
	for _, f := range files {
		s, _ := os.ReadFile(f)
		b.Write(s)
	}
	return b.String()
}

// alive reports whether process pid is running (not a zombie).
func alive(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || !strings.HasPrefix(strings.TrimSpace(s[i+1:]), "Z")
}

// SIGTERM while explore shrinks a finding: the finding is kept (its files, the shrink
// so far, a note that says why it stopped) and the exit is the finding's, 1; the replays
// under way stop with their processes, and their temporary store is removed.
func TestExploreStoppedBySignal(t *testing.T) {
	bin := buildCLI(t)
	t.Parallel() // it mostly waits; it checks its own processes and TMPDIR only
	tmp := filepath.Join(t.TempDir(), "tmp")
	require.NoError(t, os.Mkdir(tmp, 0o755))
	out := t.TempDir()
	cmd := exec.Command(bin, "explore", "--backend", "naive", "--fault", "pause", "--replays", "2", "--parallel", "2", "--out", out)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	// A replay of the finding is under way once its run.log says so.
	deadline := time.Now().Add(3 * time.Minute)
	for !strings.Contains(runLogs(t, filepath.Join(out, "explore", "2*", "replays-tmp")), "workload started") {
		select {
		case err := <-exited:
			t.Fatalf("fencecheck ended before it shrank (%v):\n%s", err, stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
		require.True(t, time.Now().Before(deadline), "no replay started:\n%s", stderr.String())
	}
	children := proc.Descendants(cmd.Process.Pid)
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	var err error
	select {
	case err = <-exited:
	case <-time.After(2 * time.Minute):
		t.Fatalf("fencecheck did not stop after SIGTERM:\n%s", stderr.String())
	}
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee), "exit: %v", err)
	require.Equal(t, exitViolated, ee.ExitCode(), "stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	require.Contains(t, stdout.String(), "broke: register: ")
	require.Contains(t, stdout.String(), "shrinking cut short: interrupted by SIGTERM")
	require.Contains(t, stderr.String(), "fencecheck explore: interrupted; the findings so far are saved (exit 1)")
	for _, f := range []string{"original.json", "shrunk.json", "finding.json", filepath.Join("original-run", reports.HistoryFile)} {
		matches, err := filepath.Glob(filepath.Join(out, "explore", "2*", "finding-1", f))
		require.NoError(t, err)
		require.Len(t, matches, 1, f)
	}
	left, err := filepath.Glob(filepath.Join(out, "explore", "2*", "replays-tmp"))
	require.NoError(t, err)
	require.Empty(t, left, "the replays' temporary store is removed")
	for _, pid := range children {
		require.False(t, alive(pid), "process %d outlived fencecheck", pid)
	}
	tmpLeft, err := os.ReadDir(tmp)
	require.NoError(t, err)
	require.Empty(t, tmpLeft, "temp files left behind")
}
