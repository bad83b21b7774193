package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/reports"
)

// copyHistory puts a testdata history into a results-store layout under root.
func copyHistory(t *testing.T, src, root, name string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	require.NoError(t, err)
	dir, err := reports.NewRunDir(root, name, time.Now())
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "history.json"), b, 0o644))
	require.NoError(t, reports.MarkLatest(dir))
	return dir
}

func TestReportFile(t *testing.T) {
	dir := copyHistory(t, "testdata/stale-accepted.json", t.TempDir(), "hand-written")
	code, stdout, stderr := run(t, "report", filepath.Join(dir, "history.json"))
	require.Equal(t, exitSafe, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	require.Contains(t, stdout, "report.html: unsafe (register=violated")
	for _, f := range []string{"report.html", "verdict.json", "porcupine-register.html"} {
		require.FileExists(t, filepath.Join(dir, f))
	}
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	require.NoError(t, err)
	require.Contains(t, string(page), "UNSAFE: 1 stale write got through")

	// --out puts it elsewhere, and leaves the source alone.
	other := filepath.Join(t.TempDir(), "elsewhere")
	code, _, stderr = run(t, "report", "--out", other, "testdata/concurrent-legal.json")
	require.Equal(t, exitSafe, code, stderr)
	require.FileExists(t, filepath.Join(other, "report.html"))
	require.NoFileExists(t, "testdata/report.html")
}

// A folder: every history under it, every matrix and scorecard page, and the store's
// index.
func TestReportStore(t *testing.T) {
	root := t.TempDir()
	a := copyHistory(t, "testdata/stale-accepted.json", root, "scenario-a")
	b := copyHistory(t, "testdata/concurrent-legal.json", root, "scenario-b")
	mdir, err := reports.NewRunDir(root, "matrix", time.Now())
	require.NoError(t, err)
	m := &reports.Matrix{Backends: []string{"naive"}, Resources: []string{"unfenced"}, Faults: []string{"pause"},
		Cells: []reports.MatrixCell{{Backend: "naive", Resource: "unfenced", Fault: "pause", Scenario: "scenario-a", Outcome: "unsafe", Match: true, Dir: relTo(root, a)}}}
	require.NoError(t, reports.WriteMatrix(mdir, m))
	require.NoError(t, os.Remove(filepath.Join(mdir, "index.html")))

	code, stdout, stderr := run(t, "report", root)
	require.Equal(t, exitSafe, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	require.Contains(t, stdout, "rebuilt 2 run report(s) and 1 matrix/scorecard page(s)")
	require.FileExists(t, filepath.Join(a, "report.html"))
	require.FileExists(t, filepath.Join(b, "report.html"))
	require.FileExists(t, filepath.Join(mdir, "index.html"))
	index, err := os.ReadFile(filepath.Join(root, "index.html"))
	require.NoError(t, err)
	for _, w := range []string{`href="scenario-a/`, `href="scenario-b/`, `href="matrix/`, ">unsafe<", ">safe<"} {
		require.Contains(t, string(index), w)
	}
	// The `latest` links were not walked twice.
	require.Equal(t, 2, strings.Count(stdout, "report.html:"))
}
