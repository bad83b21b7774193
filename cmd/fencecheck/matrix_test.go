package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/builtin"
	"github.com/fencecheck/fencecheck/harness/proc"
	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/judge"
	"github.com/fencecheck/fencecheck/reports"
)

// requireRunFolder checks a run's folder in the results store holds everything the
// layout promises, and that `latest` beside it exists.
func requireRunFolder(t *testing.T, dir string) {
	t.Helper()
	for _, f := range []string{"history.json", "verdict.json", "report.html", "run.log",
		"porcupine-register.html", "porcupine-updates.html", "porcupine-tokens.html", "porcupine-mutex.html"} {
		require.FileExists(t, filepath.Join(dir, f))
	}
	target, err := os.Readlink(filepath.Join(filepath.Dir(dir), "latest"))
	require.NoError(t, err)
	require.FileExists(t, filepath.Join(filepath.Dir(dir), target, "history.json"))
}

func TestMatrixSmall(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	code, stdout, stderr := run(t, "matrix", "--backend", "naive", "--resource", "unfenced,fenced", "--fault", "pause", "--out", out)
	require.Equal(t, exitSafe, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	for _, w := range []string{"naive-unfenced-pause", "naive-fenced-pause", "VIOLATED", "as expected", "2 cells ran", "result: every cell as expected"} {
		require.Contains(t, stdout, w)
	}
	// Not a terminal: plain progress lines.
	require.Contains(t, stderr, "[1/2 ")
	require.Contains(t, stderr, "running naive-unfenced-pause")
	require.NotContains(t, stderr, "\r")

	m, err := reports.ReadMatrix(filepath.Join(out, "matrix", "latest", "matrix.json"))
	require.NoError(t, err)
	require.Len(t, m.Cells, 2)
	require.FileExists(t, filepath.Join(out, "matrix", "latest", "index.html"))
	require.FileExists(t, filepath.Join(out, "index.html"))
	for _, c := range m.Cells {
		require.True(t, c.Match, "%+v", c)
		require.True(t, c.Catalogue)
		require.Positive(t, c.Seconds)
		requireRunFolder(t, filepath.Join(out, c.Dir))
	}
	unf, _ := m.Cell("naive", "unfenced", "pause")
	require.Equal(t, reports.OutcomeUnsafe, unf.Outcome)
	require.Equal(t, 1, unf.StaleAccepted)
	fen, _ := m.Cell("naive", "fenced", "pause")
	require.Equal(t, reports.OutcomeSafe, fen.Outcome)

	page, err := os.ReadFile(filepath.Join(out, "matrix", "latest", "index.html"))
	require.NoError(t, err)
	require.Equal(t, 2, strings.Count(string(page), `class="cell-link" href="../../naive-`))
}

// Combinations that cannot run are shown as such, and nothing runs.
func TestMatrixNotApplicable(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := run(t, "matrix", "--backend", "naive", "--resource", "etcd-txn", "--fault", "pause,leader-isolation", "--out", out)
	require.Equal(t, exitSafe, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	require.Contains(t, stdout, "0 cells to run")
	require.Contains(t, stdout, "n/a: resource etcd-txn is native to the etcd backend")
	var m reports.Matrix
	b, err := os.ReadFile(filepath.Join(out, "matrix", "latest", "matrix.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &m))
	for _, c := range m.Cells {
		require.Equal(t, judge.RunOutcome("n/a"), c.Outcome)
	}
}

// The catalogue's own scenarios by name, with their expectations.
func TestMatrixScenarios(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	code, stdout, stderr := run(t, "matrix", "--scenario", "naive-toctou-pause", "--out", out, "--parallel", "2")
	require.Equal(t, exitSafe, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	require.Contains(t, stdout, "naive-toctou-pause")
	require.Contains(t, stdout, "as expected")
}

func TestNewCommandsBadInput(t *testing.T) {
	hist := filepath.Join(t.TempDir(), "history.json")
	require.NoError(t, os.WriteFile(hist, []byte(`{"format": "fencecheck.history/v1", "ops": [`), 0o644))
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"matrix unknown backend", []string{"matrix", "--backend", "chubby"}, `unknown backend "chubby"`},
		{"matrix unknown resource", []string{"matrix", "--resource", "s3"}, `unknown resource "s3"`},
		{"matrix unknown fault", []string{"matrix", "--fault", "pause+meteor"}, `unknown fault "meteor"`},
		{"matrix no fault", []string{"matrix", "--fault", ","}, "no fault given"},
		{"matrix parallel", []string{"matrix", "--parallel", "0"}, "--parallel must be between 1 and 8"},
		{"matrix args", []string{"matrix", "naive"}, "unexpected arguments"},
		{"matrix scenario and grid", []string{"matrix", "--scenario", "naive-fenced-pause", "--backend", "naive"}, "cannot be combined"},
		{"matrix unknown scenario", []string{"matrix", "--scenario", "nope"}, `unknown scenario "nope"`},
		{"matrix bad flag", []string{"matrix", "--frobnicate"}, "unknown flag --frobnicate"},
		{"evaluate no backend", []string{"evaluate"}, "--backend is required"},
		{"evaluate unknown backend", []string{"evaluate", "--backend", "chubby"}, `unknown backend "chubby"`},
		{"evaluate fault n/a", []string{"evaluate", "--backend", "naive", "--fault", "leader-isolation"}, `fault "leader-isolation" does not apply to naive`},
		{"evaluate unknown fault", []string{"evaluate", "--backend", "naive", "--fault", "meteor"}, `unknown fault "meteor"`},
		{"evaluate endpoints not etcd", []string{"evaluate", "--backend", "raft", "--etcd-endpoints", "127.0.0.1:2379"}, "--etcd-endpoints is for the etcd backend"},
		{"evaluate parallel", []string{"evaluate", "--backend", "naive", "--parallel", "99"}, "--parallel must be between 1 and 8"},
		{"report nothing", []string{"report"}, "no folder or history file given"},
		{"report missing", []string{"report", "no/such/history.json"}, "no/such/history.json"},
		{"report malformed", []string{"report", hist}, hist + ": malformed history"},
		{"report empty folder", []string{"report", t.TempDir()}, "no history.json, matrix.json or scorecard.json in it"},
		{"report out with folder", []string{"report", "--out", t.TempDir(), t.TempDir()}, "--out is for a single history file"},
		{"serve missing", []string{"serve", "no/such/dir"}, "no/such/dir"},
		{"serve file", []string{"serve", hist}, "is not a folder"},
		{"serve not loopback", []string{"serve", "--addr", "0.0.0.0:0", t.TempDir()}, "only listens on a loopback address"},
		{"serve bad addr", []string{"serve", "--addr", "nonsense", t.TempDir()}, `--addr "nonsense"`},
		{"serve two dirs", []string{"serve", "a", "b"}, "want one folder"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := run(t, tc.args...)
			require.Equal(t, exitUsage, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			require.Contains(t, stderr, tc.want)
			require.NotContains(t, stderr, "panic")
		})
	}
}

// matrix's help names its default rows, and they need nothing installed, as it says:
// on a bare machine every one of them can run.
func TestMatrixDefaultRows(t *testing.T) {
	t.Setenv(proc.HideEnv, "all")
	reg := builtin.Registry()
	rows := strings.Split(defaultMatrixBackends(reg), ",")
	require.NotEmpty(t, rows)
	for _, name := range rows {
		b, ok := reg.Backend(name)
		require.True(t, ok, name)
		s := registry.Settings{TTL: b.TTL, Members: max(b.Members, 1), Clients: 3}
		require.Empty(t, b.Unavailability(s), "default matrix row %s needs something installed", name)
	}
	code, stdout, _ := run(t, "matrix", "-h")
	require.Equal(t, exitSafe, code)
	require.Contains(t, strings.Join(strings.Fields(stdout), " "), "Without --backend, the rows are "+strings.Join(rows, ", ")+", which need nothing installed")
}
