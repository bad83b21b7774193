package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// requireNoControl fails if out holds a byte a terminal would act on: a C0 control
// but the newline and the tab, DEL, a C1 control (as a rune), or a byte that is not
// UTF-8; or a line a file forged ("result: safe: fake line" at the start of a line).
func requireNoControl(t *testing.T, name, out string) {
	t.Helper()
	for i := 0; i < len(out); {
		r, w := utf8.DecodeRuneInString(out[i:])
		require.False(t, r == utf8.RuneError && w == 1, "%s: byte %#x at %d is not UTF-8:\n%s", name, out[i], i, out)
		require.False(t, r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || 0x80 <= r && r < 0xa0,
			"%s: control character %U at %d:\n%s", name, r, i, out)
		i += w
	}
	for _, l := range strings.Split(out, "\n") {
		require.False(t, strings.HasPrefix(strings.TrimSpace(l), "result: safe: fake"), "%s: a forged line:\n%s", name, out)
	}
}

// A history whose run, faults, ops and lost records hold terminal control sequences
// and a forged line prints none of them raw, from check (text and JSON) or report;
// nor does a results store whose run folder's name holds them.
func TestEscapeHistory(t *testing.T) {
	const src = "testdata/escape.json"
	code, stdout, stderr := run(t, "check", src)
	require.Equal(t, exitViolated, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	requireNoControl(t, "check", stdout+stderr)
	require.Contains(t, stdout, `scenario \u001b]0;pwned\u0007scenario\r\nresult: safe: fake line: backend=naive\u001b[2J\u007f\u009b resource=fenced\u202e`)
	require.Contains(t, stdout, `fault pause\u001b[1m on client-0\u0007 from`)

	code, stdout, stderr = run(t, "check", "--json", src)
	require.Equal(t, exitViolated, code, stderr)
	requireNoControl(t, "check --json", stdout+stderr)
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc), "the JSON stays valid:\n%s", stdout)

	// The reason a history proves nothing quotes an op's error.
	code, stdout, stderr = run(t, "check", "testdata/escape-failed.json")
	require.Equal(t, exitInconclusive, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	requireNoControl(t, "check of failed acquires", stdout+stderr)

	html := t.TempDir()
	code, stdout, stderr = run(t, "check", "--html", html, src)
	require.Equal(t, exitViolated, code, stderr)
	requireNoControl(t, "check --html", stdout+stderr)

	// report, on the file in a store and on a store whose run folder is named with them.
	root := t.TempDir()
	dir := copyHistory(t, src, root, "escape")
	code, stdout, stderr = run(t, "report", filepath.Join(dir, "history.json"))
	require.Equal(t, exitSafe, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	requireNoControl(t, "report", stdout+stderr)

	evil := filepath.Join(root, "run\x1b]0;pwned\x07\r\nresult: safe: fake line")
	require.NoError(t, os.MkdirAll(evil, 0o755))
	b, err := os.ReadFile(src)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(evil, "history.json"), b, 0o644))
	code, stdout, stderr = run(t, "report", root)
	require.Equal(t, exitSafe, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	requireNoControl(t, "report of the store", stdout+stderr)
	require.Contains(t, stdout, `run\u001b]0;pwned\u0007\r\nresult: safe: fake line`)

	// An error naming such a path, and a history refused for a field so named.
	code, stdout, stderr = run(t, "check", filepath.Join(evil, "missing.json"))
	require.Equal(t, exitUsage, code)
	requireNoControl(t, "check of a missing file", stdout+stderr)
	bad := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(strings.Replace(string(b), `"token": 5, "value": "c0-2"`, `"tok\u001bn": 5, "value": "c0-2"`, 1)), 0o644))
	code, stdout, stderr = run(t, "check", bad)
	require.Equal(t, exitUsage, code, stderr)
	requireNoControl(t, "check of a bad field", stdout+stderr)
	require.Contains(t, stderr, `field "tok\x1bn": unknown field`)
	sc := bufio.NewScanner(strings.NewReader(stderr))
	lines := 0
	for sc.Scan() {
		lines++
	}
	require.Equal(t, 1, lines, stderr)
}
