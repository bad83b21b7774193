package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/backend/redis"
	"github.com/fencecheck/fencecheck/builtin"
	"github.com/fencecheck/fencecheck/campaign"
	"github.com/fencecheck/fencecheck/harness/proc"
	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/judge"
	"github.com/fencecheck/fencecheck/reports"
	"github.com/fencecheck/fencecheck/spec"
)

// Every command (and the root) has -h with prose, its flags and its exit codes, on
// stdout with exit 0; `help CMD` says the same.
func TestHelpEveryCommand(t *testing.T) {
	var discard strings.Builder
	root := newApp(nil, &discard, &discard).root()
	for _, c := range commandTree(root) {
		path := strings.Fields(c.CommandPath())[1:]
		t.Run(strings.Join(append([]string{"fencecheck"}, path...), " "), func(t *testing.T) {
			code, stdout, stderr := run(t, append(path, "-h")...)
			require.Equal(t, exitSafe, code, stderr)
			require.Empty(t, stderr)
			require.Contains(t, stdout, "Usage:\n  fencecheck")
			require.Contains(t, stdout, "Exit codes:\n  0  ")
			require.NotEmpty(t, c.Long, "a command says in prose what it does")
			if c.HasParent() {
				code, again, _ := run(t, append([]string{"help"}, path...)...)
				require.Equal(t, exitSafe, code)
				require.Equal(t, stdout, again)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := run(t, "--version")
	require.Equal(t, exitSafe, code, stderr)
	require.True(t, strings.HasPrefix(stdout, "fencecheck "), stdout)
	require.Contains(t, stdout, runtime.Version())

	for _, tc := range []struct {
		bi   debug.BuildInfo
		want string
	}{
		{debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v1.2.3"}}, "fencecheck v1.2.3, go1.26.0 "},
		{debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-12-01T10:00:00Z"}, {Key: "vcs.modified", Value: "true"}}},
			"fencecheck (devel), revision abc123 (2026-12-01T10:00:00Z), modified, go1.26.0 "},
	} {
		require.True(t, strings.HasPrefix(versionOf(&tc.bi), tc.want), versionOf(&tc.bi))
	}

	// A built binary says what its build information says.
	bin := buildCLI(t) // with its VCS information
	printed, err := exec.Command(bin, "--version").CombinedOutput()
	require.NoError(t, err, string(printed))
	// A checkout's build is "(devel)", or a pseudo-version Go derives from the commit.
	require.Regexp(t, `^fencecheck (\(devel\)|v[0-9]\S*)[, ]`, string(printed))
	info, err := exec.Command("go", "version", "-m", bin).Output()
	require.NoError(t, err)
	if _, rev, ok := strings.Cut(string(info), "vcs.revision="); ok {
		rev, _, _ = strings.Cut(rev, "\n")
		require.Contains(t, string(printed), "revision "+strings.TrimSpace(rev))
	} else {
		t.Log("no VCS information in this build (a git worktree, or no git): the revision is left out")
	}
}

// Flags after the arguments are parsed: the DSN after the scenario's name reaches the
// resource (which cannot connect: exit 2), and --out and --seed after the name are used.
func TestFlagsAfterArguments(t *testing.T) {
	t.Parallel()
	closed := closedAddr(t)
	out := t.TempDir()
	code, _, stderr := run(t, "run", "naive-postgres-outbox-pause", "--postgres-dsn", "postgres://app:x1@"+closed+"/x", "--out", out)
	require.Equal(t, exitUsage, code, stderr)
	require.Contains(t, stderr, "cannot connect to PostgreSQL at "+closed)

	code, stdout, stderr := run(t, "run", "naive-fenced-pause", "--out", out, "--seed", "7")
	require.Equal(t, exitSafe, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	require.Contains(t, stdout, "running naive-fenced-pause (seed 7)")
	require.FileExists(t, filepath.Join(out, "naive-fenced-pause", "latest", reports.HistoryFile))
}

// Shell completion: the scripts, and names from the registry and the catalogue.
func TestCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		code, stdout, stderr := run(t, "completion", shell)
		require.Equal(t, exitSafe, code, stderr)
		require.Contains(t, stdout, "fencecheck", shell)
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"r"}, []string{"run", "report"}},
		{[]string{"run", "--backend", "zoo"}, []string{"zookeeper", "zookeeper-sequence"}},
		{[]string{"run", "naive-unfenced-p"}, []string{"naive-unfenced-pause"}},
		{[]string{"matrix", "--fault", "pause,de"}, []string{"pause,delay"}},
		{[]string{"run", "--resource", "sqlite-toctou-"}, []string{"sqlite-toctou-tx", "sqlite-toctou-immediate"}},
		{[]string{"soak", "--scenario", "naive-fenced-p"}, []string{"naive-fenced-pause"}},
		{[]string{"check", "--fail-on", "tok"}, []string{"tokens"}},
	} {
		code, stdout, stderr := run(t, append([]string{cobra.ShellCompRequestCmd}, tc.args...)...)
		require.Equal(t, exitSafe, code, stderr)
		var got []string
		for _, l := range strings.Split(stdout, "\n") {
			name, _, _ := strings.Cut(l, "\t")
			got = append(got, name)
		}
		for _, w := range tc.want {
			require.Contains(t, got, w, "%v:\n%s", tc.args, stdout)
		}
	}
}

// The old spellings still work, and say what replaced them.
func TestDeprecatedFlags(t *testing.T) {
	code, _, stderr := run(t, "check", "--timeout", "5s", "testdata/concurrent-legal.json")
	require.Equal(t, exitSafe, code, stderr)
	require.Contains(t, stderr, "fencecheck check: --timeout is deprecated; use --check-timeout")
	code, _, stderr = run(t, "soak", "--scenarios", "nope")
	require.Equal(t, exitUsage, code)
	require.Contains(t, stderr, "--scenarios is deprecated; use --scenario")
	require.Contains(t, stderr, `unknown scenario "nope"`)
}

// codeOf: the run could not be made as asked (2) or fencecheck failed (3).
func TestCodeOf(t *testing.T) {
	_, hidden := proc.Need{Program: "redis-server", Package: "redis-server"}.Find()
	for _, tc := range []struct {
		err  error
		want int
	}{
		{fmt.Errorf("%w: bad", spec.ErrSpec), exitUsage},
		{registry.Input(errors.New("no server answers")), exitUsage},
		{fmt.Errorf("redis: %w", proc.ErrNotFound), exitUsage},
		{campaign.ErrInterrupted, exitUsage},
		{fmt.Errorf("run: %w", context.Canceled), exitUsage},
		{errors.New("check: the checkers disagree"), exitInternal},
	} {
		require.Equal(t, tc.want, codeOf(tc.err), tc.err.Error())
	}
	if hidden != nil {
		require.Equal(t, exitUsage, codeOf(hidden))
	}
	require.Equal(t, exitViolated, worst(exitSafe, exitUsage, exitViolated, exitInternal))
	require.Equal(t, exitInternal, worst(exitUsage, exitInternal, exitSafe))
	require.Equal(t, exitUsage, worst(exitSafe, exitUsage))
}

// A missing program is exit 2 with one line naming what to install, for every backend
// that needs one (FENCECHECK_HIDE_PROGRAMS makes every optional program look absent),
// and for the exec backend over each lock service that needs one.
func TestMissingProgramExit2(t *testing.T) {
	t.Setenv(proc.HideEnv, "all")
	reg := builtin.Registry()
	type row struct {
		name string
		args []string
		why  string
	}
	var rows []row
	for _, b := range reg.Backends() {
		s := registry.Settings{TTL: b.TTL, Members: max(b.Members, 1), Clients: 3}
		why := b.Unavailability(s)
		if why == "" {
			t.Logf("backend %s needs no optional program", b.Name)
			continue
		}
		fix, _ := fixFor(b.NeedsOf(s), why)
		require.NotEmpty(t, fix, "backend %s: %s names nothing to install or build", b.Name, why)
		rows = append(rows, row{b.Name, []string{"--backend", b.Name}, why})
		if b.Name != "exec" {
			rows = append(rows, row{"exec-over-" + b.Name, []string{"--backend", "exec", "--lock-service", b.Name, "--client-cmd", "true"}, why})
		}
	}
	require.NotEmpty(t, rows)
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			out := t.TempDir()
			code, stdout, stderr := run(t, append(append([]string{"run", "--out", out}, r.args...), "--resource", "unfenced")...)
			require.Equal(t, exitUsage, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			require.Equal(t, 1, strings.Count(strings.TrimSpace(stderr), "\n")+1, "one line: %q", stderr)
			require.Contains(t, stderr, r.why)
			require.Regexp(t, `apt-get install [a-z]|build\.sh`, stderr)
			// A run that found out only when it started keeps a folder that says it
			// failed, and no latest.
			dirs, err := filepath.Glob(filepath.Join(out, "*", "2*"))
			require.NoError(t, err)
			for _, d := range dirs {
				require.FileExists(t, filepath.Join(d, reports.FailedFile))
				_, err := os.Lstat(filepath.Join(filepath.Dir(d), reports.LatestLink))
				require.True(t, os.IsNotExist(err), "latest of a run that could not start")
			}
		})
	}
	// The same error from a run that found out only when it started (a descriptor that
	// declared nothing): exit 2.
	err := fmt.Errorf("start: %w", registry.Input(errors.New("x")))
	require.Equal(t, exitUsage, codeOf(err))
}

// doctor names what cannot run here and the line that installs it; exit 1 then, 0 when
// nothing is missing.
func TestDoctor(t *testing.T) {
	t.Setenv(proc.HideEnv, "redis-server")
	code, stdout, stderr := run(t, "doctor")
	require.Equal(t, exitViolated, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	require.Regexp(t, `(?m)^  redis +MISSING: redis-server not found.*: apt-get install redis-server$`, stdout)
	require.Regexp(t, `(?m)^  naive +ok$`, stdout)
	require.Contains(t, stdout, "result: ")
	require.Regexp(t, `(?m)^  apt-get install (.* )?redis-server( .*)?$`, stdout)

	code, stdout, _ = run(t, "doctor", "--json")
	require.Equal(t, exitViolated, code)
	var doc doctorJSON
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc))
	require.Equal(t, "missing", doc.Outcome)
	require.Equal(t, exitViolated, doc.Exit)
	require.Contains(t, doc.Install, "redis-server")
	byName := map[string]availability{}
	for _, e := range doc.Entries {
		byName[e.Kind+"/"+e.Name] = e
	}
	require.False(t, byName["backend/redlock"].OK)
	require.Equal(t, "apt-get install redis-server", byName["backend/redlock"].Fix)
	require.True(t, byName["backend/naive"].OK)
	require.True(t, byName["resource/postgres"].Setup || byName["resource/postgres"].OK)

	// An existing server needs no program: with --redis-addrs, redis is available.
	code, stdout, _ = run(t, "doctor", "--json", "--redis-addrs", "127.0.0.1:6379")
	require.NotEqual(t, exitInternal, code)
	doc = doctorJSON{}
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc))
	for _, e := range doc.Entries {
		if e.Name == redis.Name {
			require.True(t, e.OK, "%+v", e)
		}
	}

	// Nothing hidden: doctor's exit is 0 exactly when nothing is missing.
	t.Setenv(proc.HideEnv, "")
	code, stdout, _ = run(t, "doctor")
	require.Contains(t, []int{exitSafe, exitViolated}, code)
	require.Equal(t, code == exitViolated, strings.Contains(stdout, "MISSING"), stdout)
}

// list marks what cannot run here.
func TestListMarksUnavailable(t *testing.T) {
	t.Setenv(proc.HideEnv, "redis-server")
	code, stdout, _ := run(t, "list")
	require.Equal(t, exitSafe, code)
	require.Regexp(t, `(?m)^  redis +one redis-server.*\n +\(cannot run here: redis-server not found.*: apt-get install redis-server\)$`, stdout)
	require.NotRegexp(t, `(?m)^  naive +.*\n +\(cannot run here`, stdout)
}

// --json: one document on stdout with the outcome and the exit code, on every command
// that judges; bad input gives the error document.
func TestJSONOutcome(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	code, stdout, stderr := run(t, "run", "naive-unfenced-pause", "--json", "--out", out)
	require.Equal(t, exitViolated, code, stderr)
	var doc runJSON
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc), stdout)
	require.Equal(t, judge.RunOutcome("unsafe"), doc.Outcome)
	require.Equal(t, exitViolated, doc.Exit)
	require.Equal(t, "naive-unfenced-pause", doc.Scenario)
	require.FileExists(t, doc.File)
	require.Contains(t, stderr, "running naive-unfenced-pause")

	// verdict.json has the outcome too, and check --json agrees.
	var v struct{ Outcome string }
	b, err := os.ReadFile(filepath.Join(doc.Dir, reports.VerdictJSON))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &v))
	require.Equal(t, "unsafe", v.Outcome)
	code, stdout, _ = run(t, "check", "--json", "--fail-on", "tokens", doc.File)
	require.Equal(t, exitSafe, code)
	var checked checkJSON
	require.NoError(t, json.Unmarshal([]byte(stdout), &checked))
	require.Equal(t, judge.RunOutcome("unsafe"), checked.Outcome)
	require.Equal(t, exitSafe, checked.Exit, "the exit follows --fail-on; the outcome is the data's")

	code, stdout, _ = run(t, "matrix", "--backend", "naive", "--resource", "fenced", "--fault", "pause", "--json", "--out", out)
	require.Equal(t, exitSafe, code)
	var m matrixJSON
	require.NoError(t, json.Unmarshal([]byte(stdout), &m), stdout)
	require.Equal(t, judge.RunOutcome("as-expected"), m.Outcome)
	require.Equal(t, exitSafe, m.Exit)
	require.Len(t, m.Cells, 1)
	require.FileExists(t, m.Index)

	code, stdout, _ = run(t, "soak", "--scenario", "naive-fenced-pause", "--runs", "1", "--json", "--out", "")
	require.Equal(t, exitSafe, code)
	var s soakJSON
	require.NoError(t, json.Unmarshal([]byte(stdout), &s), stdout)
	require.Equal(t, judge.RunOutcome("as-expected"), s.Outcome)
	require.Len(t, s.Scenarios, 1)

	for _, args := range [][]string{
		{"run", "--json", "--backend", "chubby"},
		{"matrix", "--json", "--backend", "chubby"},
		{"evaluate", "--json", "--backend", "chubby"},
		{"soak", "--json", "--scenario", "nope"},
	} {
		code, stdout, stderr := run(t, args...)
		require.Equal(t, exitUsage, code, args)
		var e errorJSON
		require.NoError(t, json.Unmarshal([]byte(stdout), &e), "%v: %s", args, stdout)
		require.Equal(t, judge.RunOutcome("error"), e.Outcome)
		require.Equal(t, exitUsage, e.Exit)
		require.NotEmpty(t, e.Error)
		require.Contains(t, stderr, e.Error)
	}
}

// The results store stays consistent: a run that fails to start leaves latest where it
// was and its folder (if any) says it failed; every command that writes runs refreshes
// the store's index.
func TestStoreConsistency(t *testing.T) {
	needBackend(t, redis.Name)
	store := t.TempDir()
	code, stdout, stderr := run(t, "run", "--backend", "redis", "--resource", "fenced", "--out", store)
	require.Equal(t, exitSafe, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	label := "redis-fenced-nofault"
	latest := filepath.Join(store, label, reports.LatestLink)
	good, err := os.Readlink(latest)
	require.NoError(t, err)
	index, err := os.ReadFile(filepath.Join(store, reports.StoreIndex))
	require.NoError(t, err, "run writes the store's index")
	require.Contains(t, string(index), label)

	// The same run without redis-server cannot start: latest stays.
	t.Setenv(proc.HideEnv, "redis-server")
	code, _, stderr = run(t, "run", "--backend", "redis", "--resource", "fenced", "--out", store)
	require.Equal(t, exitUsage, code)
	require.Contains(t, stderr, "apt-get install redis-server")
	now, err := os.Readlink(latest)
	require.NoError(t, err)
	require.Equal(t, good, now)
	dirs, err := filepath.Glob(filepath.Join(store, label, "2*"))
	require.NoError(t, err)
	for _, d := range dirs {
		if filepath.Base(d) != good {
			require.FileExists(t, filepath.Join(d, reports.FailedFile), "a kept folder of a failed run says so")
		}
	}

	// A run that starts and then fails to reach its server keeps a folder that says so,
	// no latest, and a row in the index.
	t.Setenv(proc.HideEnv, "")
	closed := closedAddr(t)
	code, _, stderr = run(t, "run", "--resource", "postgres", "--postgres-dsn", "postgres://u:x1@"+closed+"/x", "--out", store)
	require.Equal(t, exitUsage, code, stderr)
	failed, err := filepath.Glob(filepath.Join(store, "*postgres*", "2*", reports.FailedFile))
	require.NoError(t, err)
	require.Len(t, failed, 1)
	b, err := os.ReadFile(failed[0])
	require.NoError(t, err)
	require.Contains(t, string(b), "cannot connect to PostgreSQL at "+closed)
	require.Equal(t, 1, strings.Count(string(b), "\n"), "one line")
	_, err = os.Lstat(filepath.Join(filepath.Dir(filepath.Dir(failed[0])), reports.LatestLink))
	require.True(t, os.IsNotExist(err), "no latest for a scenario with no history")
	entries, err := reports.ScanStore(store)
	require.NoError(t, err)
	outcomes := map[string]judge.RunOutcome{}
	for _, e := range entries {
		outcomes[e.Name] = e.Outcome
	}
	require.Equal(t, judge.RunOutcome("failed"), outcomes[filepath.Base(filepath.Dir(filepath.Dir(failed[0])))])
	require.Equal(t, judge.RunOutcome("safe"), outcomes[label])
	index2, err := os.ReadFile(filepath.Join(store, reports.StoreIndex))
	require.NoError(t, err)
	require.Contains(t, string(index2), "failed")
}

// matrix, evaluate and soak refuse, in one line with exit 2, a backend or scenario asked
// for that cannot run here; the default rows and soak's "all" leave such ones out, each
// named on stderr.
func TestMissingProgramOtherCommands(t *testing.T) {
	t.Setenv(proc.HideEnv, "redis-server")
	for _, args := range [][]string{
		{"matrix", "--backend", "naive,redis", "--resource", "fenced", "--fault", "pause"},
		{"evaluate", "--backend", "redis", "--fault", "pause"},
		{"soak", "--scenario", "redis-fenced-pause", "--runs", "1"},
		{"matrix", "--scenario", "naive-fenced-pause,redis-fenced-pause"},
	} {
		out := t.TempDir()
		code, stdout, stderr := run(t, append(args, "--out", out)...)
		require.Equal(t, exitUsage, code, "%v\nstdout:\n%s\nstderr:\n%s", args, stdout, stderr)
		require.Equal(t, 1, strings.Count(strings.TrimSpace(stderr), "\n")+1, "one line: %q", stderr)
		require.Contains(t, stderr, "redis-server not found (hidden by FENCECHECK_HIDE_PROGRAMS): apt-get install redis-server")
		entries, err := os.ReadDir(out)
		require.NoError(t, err)
		require.Empty(t, entries, "%v: nothing runs", args)
	}

	var errOut strings.Builder
	a := newApp(nil, &errOut, &errOut)
	require.Equal(t, []string{"naive"}, a.runnableBackends([]string{"naive", "redis"}))
	require.Contains(t, errOut.String(), "fencecheck matrix: leaving out redis: redis-server not found")

	scs, err := a.selectScenarios("soak", []string{"all"}, nil)
	require.NoError(t, err)
	for _, sc := range scs {
		require.NotEqual(t, "redis", sc.Backend, sc.Name)
	}
	require.Regexp(t, `fencecheck soak: skipping [a-z0-9-, ]*redis-fenced-pause[a-z0-9-, ]*: redis-server not found`, errOut.String())
}

// The CLI's refusals say in words what cannot be done here, never a Go name (those are
// for the Go front's errors).
func TestRefusalsInWords(t *testing.T) {
	t.Parallel()
	goName := regexp.MustCompile(`\b(harness|registry)\.[A-Z]|\bShape\.|MultiMember|started value`)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--backend", "naive", "--members", "3"}, "backend naive runs one member only here: --members must be 1, got 3"},
		{[]string{"run", "--backend", "naive", "--fault", "cluster-crash"}, "which fencecheck cannot do to backend naive"},
		{[]string{"run", "--backend", "naive", "--fault", "client-crash"}, "backend naive's clients run inside fencecheck"},
		{[]string{"run", "--backend", "etcd", "--fault", "skew"}, "backend etcd's server clock cannot be skewed"},
		{[]string{"run", "--backend", "etcd", "--keys", "2"}, "its lock client holds one lock only"},
		{[]string{"run", "--backend", "etcd", "--policy", "careful"}, "backend etcd's leases do not"},
		{[]string{"evaluate", "--backend", "naive", "--fault", "leader-isolation"}, "needs a lock-service cluster of at least 3 nodes (--members 3)"},
		{[]string{"matrix", "--backend", "naive", "--resource", "fenced", "--fault", "cluster-crash", "--json"}, "which fencecheck cannot do to backend naive"},
	} {
		code, stdout, stderr := run(t, append(tc.args, "--out", t.TempDir())...)
		out := stdout + stderr
		require.Contains(t, out, tc.want, tc.args)
		require.NotRegexp(t, goName, out, tc.args)
		require.Contains(t, []int{exitSafe, exitUsage}, code, tc.args)
	}
}

// A built binary records its lock client's Go module with the version it was built
// with, in-process and in a client host (a pause hosts the clients), and run prints it.
func TestClientLibraryOfABuild(t *testing.T) {
	bin := buildCLI(t)
	t.Parallel() // its runs are processes of their own, and mostly wait
	mod, err := exec.Command("go", "list", "-m", "go.etcd.io/etcd/client/v3").Output()
	require.NoError(t, err)
	want := "client library: " + strings.TrimSpace(string(mod)) + "\n"
	for _, tc := range []struct {
		name  string
		fault []string
	}{
		{"in-process", nil},
		{"client host", []string{"--fault", "pause"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"run", "--backend", "etcd", "--resource", "fenced", "--duration", "2s", "--ttl", "1s", "--out", t.TempDir()}, tc.fault...)
			out, err := exec.Command(bin, args...).CombinedOutput()
			require.NoError(t, err, string(out))
			require.Contains(t, string(out), want)
			if tc.fault != nil {
				require.Contains(t, string(out), "stopped with SIGSTOP") // its clients were hosted
			}
		})
	}
}
