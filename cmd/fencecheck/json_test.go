package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/harness/proc"
)

// jsonCase is one --json invocation and the outcome it must give.
type jsonCase struct {
	name    string
	args    []string
	schema  string // its document's schema in docs/ (the error document has its own)
	outcome string // "" for any the schema allows
	// interrupted runs it with its context already cancelled (an interrupt).
	interrupted bool
}

// runJSONCase runs tc's command and returns its exit code and the documents on stdout
// (one, or check's lines).
func runJSONCase(t *testing.T, tc jsonCase) (int, []any, string) {
	t.Helper()
	ctx := context.Background()
	if tc.interrupted {
		c, cancel := context.WithCancel(ctx)
		cancel()
		ctx = c
	}
	var o, e bytes.Buffer
	code := Main(ctx, tc.args, &o, &e)
	var docs []any
	dec := json.NewDecoder(&o)
	for dec.More() {
		var v any
		require.NoError(t, dec.Decode(&v), "stdout:\n%s\nstderr:\n%s", o.String(), e.String())
		docs = append(docs, v)
	}
	require.NotEmpty(t, docs, "nothing on stdout; stderr:\n%s", e.String())
	return code, docs, e.String()
}

// requireDocs validates every document against its schema (the error document against
// error.schema.json) and requires the outcome and, for one document, its exit code to be
// the command's.
func requireDocs(t *testing.T, tc jsonCase, code int, docs []any, stderr string) {
	t.Helper()
	for i, d := range docs {
		obj, ok := d.(map[string]any)
		require.True(t, ok, "document %d is not an object: %v", i, d)
		schema := tc.schema
		if obj["outcome"] == "error" {
			schema = "error.schema.json"
			require.Contains(t, stderr, obj["error"], "the error document says what stderr says")
		}
		errs := loadSchema(t, filepath.Join("..", "..", "docs", schema)).validate(d)
		require.Empty(t, errs, "document %d of %v breaks docs/%s; stderr:\n%s", i, tc.args, schema, stderr)
	}
	last := docs[len(docs)-1].(map[string]any)
	if tc.outcome != "" {
		require.Equal(t, tc.outcome, last["outcome"], "%v; stderr:\n%s", tc.args, stderr)
	}
	if len(docs) == 1 || last["outcome"] == "error" {
		require.Equal(t, float64(code), last["exit"], "the document's exit is the command's")
	}
}

// Every --json document validates against its schema in docs/: every command, every
// outcome it gives on cheap runs (the naive backend, short runs, hand-written histories),
// an interrupt, and argument errors, which print the error document.
func TestJSONMatchesSchemas(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs some twenty short scenarios")
	}
	store := t.TempDir()
	runArgs := func(args ...string) []string {
		return append([]string{"run", "--json", "--out", store, "--duration", "500ms"}, args...)
	}

	// A real run's history, safe; a hand-written one with a fault that produced no stale
	// write: inconclusive.
	code, docs, stderr := runJSONCase(t, jsonCase{args: runArgs("naive-fenced-pause")})
	require.Equal(t, exitSafe, code, "%v\n%s", docs, stderr)
	safeHistory := docs[0].(map[string]any)["file"].(string)
	inconclusive := filepath.Join(t.TempDir(), "inconclusive.json")
	require.NoError(t, os.WriteFile(inconclusive, []byte(`{
  "format": "fencecheck.history/v1",
  "run": {"scenario": "hand-written: a pause that ends before anyone else writes", "backend": "naive", "resource": "fenced", "fence": "strict", "seed": 0, "ttl_ms": 500},
  "ops": [
    {"id": 1, "client": 0, "kind": "acquire", "call": 1000, "return": 2000, "status": "ok", "token": 1},
    {"id": 2, "client": 0, "kind": "read", "call": 2100, "return": 2900, "status": "ok", "token": 0, "value": ""},
    {"id": 3, "client": 0, "kind": "write", "call": 5000, "return": 6000, "status": "ok", "token": 1, "value": "c0-1", "read_id": 2},
    {"id": 4, "client": 0, "kind": "release", "call": 6100, "return": 6200, "status": "ok", "token": 1},
    {"id": 5, "client": 1, "kind": "acquire", "call": 7000, "return": 8000, "status": "ok", "token": 2},
    {"id": 6, "client": 1, "kind": "read", "call": 8100, "return": 8900, "status": "ok", "token": 1, "value": "c0-1"}
  ],
  "faults": [{"kind": "pause", "target": "client-0", "start": 2950, "end": 4900, "detail": "hand-written"}]
}
`), 0o644))

	// Shards of a soak, for merge: whole, partial, one with a run whose verdict was
	// edited to differ from the catalogue, one with a run marked failed.
	shards := t.TempDir()
	shard := func(name, i string) string {
		dir := filepath.Join(shards, name+"-"+i)
		code, _, stderr := runJSONCase(t, jsonCase{args: []string{"soak", "--json", "--scenario", "naive-fenced-pause", "--runs", "2", "--shard", i + "/2", "--out", dir}})
		require.Equal(t, exitSafe, code, stderr)
		return dir
	}
	s1, s2 := shard("ok", "1"), shard("ok", "2")
	differs, failed := shard("differs", "1"), shard("failed", "1")
	editRun := func(store string, edit func(dir string)) {
		verdicts, err := filepath.Glob(filepath.Join(store, "naive-fenced-pause", "2*", "verdict.json"))
		require.NoError(t, err)
		require.Len(t, verdicts, 1)
		edit(filepath.Dir(verdicts[0]))
	}
	editRun(differs, func(dir string) {
		b, err := os.ReadFile(filepath.Join(dir, "verdict.json"))
		require.NoError(t, err)
		b = bytes.Replace(b, []byte(`"register": "held"`), []byte(`"register": "violated"`), 1)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "verdict.json"), b, 0o644))
	})
	editRun(failed, func(dir string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "failed.txt"), []byte("the lock server died\n"), 0o644))
	})
	merged := func(name string) string { return filepath.Join(t.TempDir(), name) }

	cases := []jsonCase{
		{name: "run safe", args: runArgs("naive-fenced-pause"), schema: "run.schema.json", outcome: "safe"},
		{name: "run unsafe", args: runArgs("naive-unfenced-pause"), schema: "run.schema.json", outcome: "unsafe"},
		{name: "run bad flag value", args: []string{"run", "--json", "--ttl", "abc"}, outcome: "error"},
		{name: "run bad flag value before --json", args: []string{"run", "--ttl", "abc", "--json"}, outcome: "error"},
		{name: "run unknown flag", args: []string{"run", "--json", "--tll", "1s"}, outcome: "error"},
		{name: "run two scenarios", args: []string{"run", "--json", "a", "b"}, outcome: "error"},
		{name: "run unknown backend", args: []string{"run", "--json", "--backend", "chubby"}, outcome: "error"},
		{name: "run interrupted", args: runArgs("naive-fenced-pause"), schema: "run.schema.json", outcome: "error", interrupted: true},

		{name: "check safe", args: []string{"check", "--json", safeHistory}, schema: "check.schema.json", outcome: "safe"},
		{name: "check unsafe", args: []string{"check", "--json", "testdata/stale-accepted.json"}, schema: "check.schema.json", outcome: "unsafe"},
		{name: "check inconclusive", args: []string{"check", "--json", inconclusive}, schema: "check.schema.json", outcome: "inconclusive"},
		{name: "check lines", args: []string{"check", "--json", safeHistory, "testdata/stale-accepted.json", inconclusive}, schema: "check.schema.json", outcome: "inconclusive"},
		{name: "check missing file", args: []string{"check", "--json", "missing.json"}, outcome: "error"},
		{name: "check malformed", args: []string{"check", "--json", "testdata/wrong-type.json"}, outcome: "error"},
		{name: "check no file", args: []string{"check", "--json"}, outcome: "error"},
		{name: "check bad --fail-on", args: []string{"check", "--json", "--fail-on", "speed", "testdata/stale-accepted.json"}, outcome: "error"},
		{name: "check bad budget", args: []string{"check", "--json=true", "--porcupine-budget", "soon", "testdata/stale-accepted.json"}, outcome: "error"},

		{name: "matrix as expected", args: []string{"matrix", "--json", "--out", store, "--backend", "naive", "--resource", "fenced,unfenced", "--fault", "pause"}, schema: "matrix.schema.json", outcome: "as-expected"},
		{name: "matrix interrupted", args: []string{"matrix", "--json", "--out", store, "--backend", "naive", "--resource", "fenced", "--fault", "pause"}, schema: "matrix.schema.json", outcome: "incomplete", interrupted: true},
		{name: "matrix bad flag", args: []string{"matrix", "--json", "--parallel", "many"}, outcome: "error"},
		{name: "matrix unknown fault", args: []string{"matrix", "--json", "--fault", "meteor"}, outcome: "error"},

		{name: "evaluate safe", args: []string{"evaluate", "--json", "--out", store, "--backend", "naive", "--fault", "pause"}, schema: "scorecard.schema.json", outcome: "safe"},
		{name: "evaluate unsafe", args: []string{"evaluate", "--json", "--out", store, "--backend", "naive", "--fault", "crash"}, schema: "scorecard.schema.json", outcome: "unsafe"},
		{name: "evaluate interrupted", args: []string{"evaluate", "--json", "--out", store, "--backend", "naive", "--fault", "pause"}, schema: "scorecard.schema.json", outcome: "incomplete", interrupted: true},
		{name: "evaluate no backend", args: []string{"evaluate", "--json"}, outcome: "error"},
		{name: "evaluate argument", args: []string{"evaluate", "--json", "naive"}, outcome: "error"},

		{name: "compare complete", args: []string{"compare", "--json", "--out", store, "--backend", "naive", "--fault", "pause", "--runs", "1"}, schema: "compare.schema.json", outcome: "complete"},
		{name: "compare unsafe", args: []string{"compare", "--json", "--out", store, "--backend", "naive", "--fault", "crash", "--runs", "1"}, schema: "compare.schema.json", outcome: "unsafe"},
		{name: "compare interrupted", args: []string{"compare", "--json", "--out", store, "--backend", "naive", "--fault", "pause", "--runs", "1"}, schema: "compare.schema.json", outcome: "incomplete", interrupted: true},
		{name: "compare unknown backend", args: []string{"compare", "--json", "--backend", "chubby"}, outcome: "error"},
		{name: "compare bad ttl", args: []string{"compare", "--json", "--ttl", "-"}, outcome: "error"},

		{name: "soak as expected", args: []string{"soak", "--json", "--out", "", "--scenario", "naive-fenced-pause", "--runs", "1"}, schema: "soak.schema.json", outcome: "as-expected"},
		{name: "soak interrupted", args: []string{"soak", "--json", "--out", store, "--scenario", "naive-fenced-pause", "--runs", "1"}, schema: "soak.schema.json", outcome: "incomplete", interrupted: true},
		{name: "soak unknown scenario", args: []string{"soak", "--json", "--scenario", "nope"}, outcome: "error"},
		{name: "soak bad runs", args: []string{"soak", "--json", "--runs", "0"}, outcome: "error"},

		{name: "zoo as expected", args: []string{"zoo", "--json", "--out", "", "--bug", "shedlock-132"}, schema: "zoo.schema.json", outcome: "as-expected"},
		{name: "zoo interrupted", args: []string{"zoo", "--json", "--out", store, "--bug", "shedlock-132"}, schema: "zoo.schema.json", outcome: "incomplete", interrupted: true},
		{name: "zoo unknown entry", args: []string{"zoo", "--json", "--bug", "nope"}, outcome: "error"},
		{name: "zoo bad runs", args: []string{"zoo", "--json", "--runs", "0"}, outcome: "error"},
		{name: "explore interrupted", args: []string{"explore", "--json", "--out", store, "--backend", "naive", "--budget", "1m"}, schema: "explore.schema.json", outcome: "incomplete", interrupted: true},
		{name: "explore bad budget", args: []string{"explore", "--json", "--backend", "naive", "--budget", "0s"}, outcome: "error"},
		{name: "explore no backend", args: []string{"explore", "--json"}, outcome: "error"},
		{name: "run bad schedule", args: []string{"run", "--json", "--schedule", "testdata/stale-accepted.json"}, outcome: "error"},

		{name: "merge as expected", args: []string{"merge", "--json", "--store", merged("ok"), s1, s2}, schema: "merge.schema.json", outcome: "as-expected"},
		{name: "merge partial", args: []string{"merge", "--json", "--partial", "--store", merged("partial"), s1}, schema: "merge.schema.json", outcome: "incomplete"},
		{name: "merge differs", args: []string{"merge", "--json", "--store", merged("differs"), differs, s2}, schema: "merge.schema.json", outcome: "differs"},
		{name: "merge failed run", args: []string{"merge", "--json", "--store", merged("failed"), failed, s2}, schema: "merge.schema.json", outcome: "incomplete"},
		{name: "merge shard missing", args: []string{"merge", "--json", "--store", merged("missing"), s1}, outcome: "error"},
		{name: "merge nothing", args: []string{"merge", "--json"}, outcome: "error"},

		{name: "doctor", args: []string{"doctor", "--json"}, schema: "doctor.schema.json"},
		{name: "doctor argument", args: []string{"doctor", "--json", "etcd"}, outcome: "error"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, docs, stderr := runJSONCase(t, tc)
			requireDocs(t, tc, code, docs, stderr)
		})
	}
}

// doctor --json with a program missing: outcome missing, and its schema.
func TestDoctorJSONMissing(t *testing.T) {
	t.Setenv(proc.HideEnv, "redis-server")
	tc := jsonCase{args: []string{"doctor", "--json"}, schema: "doctor.schema.json", outcome: "missing"}
	code, docs, stderr := runJSONCase(t, tc)
	requireDocs(t, tc, code, docs, stderr)
}

// The error document is printed once, also when the command printed it itself, and
// never after a command's own document.
func TestErrorDocumentOnce(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"run", "--json", "--backend", "chubby"},
		{"check", "--json", "missing.json"},
		{"run", "--json", "--ttl", "abc"},
	} {
		var o, e bytes.Buffer
		code := Main(context.Background(), args, &o, &e)
		require.Equal(t, exitUsage, code)
		require.Equal(t, 1, strings.Count(o.String(), "\n"), "one line: %q", o.String())
	}
	// Not asked for JSON: nothing on stdout.
	for _, args := range [][]string{
		{"run", "--ttl", "abc"},
		{"run", "--json=false", "--ttl", "abc"},
		{"run", "--ttl", "abc", "--", "--json"},
	} {
		var o, e bytes.Buffer
		require.Equal(t, exitUsage, Main(context.Background(), args, &o, &e), args)
		require.Empty(t, o.String(), args)
	}
}
