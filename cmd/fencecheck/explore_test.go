package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// explore on the naive backend, unfenced, under pauses: the first finding is a register
// violation, shrunk to one fault that replays; its files, runs and three lines are
// there, and the document matches docs/explore.schema.json. Bounded by events: it stops
// at the first finding, and shrinking by its steps (the budget only stops new tries).
func TestExploreFindsAndShrinks(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("explores and shrinks: some twenty short runs")
	}
	store := t.TempDir()
	code, stdout, stderr := run(t, "explore", "--backend", "naive", "--resource", "unfenced", "--fault", "pause",
		"--budget", "10m", "--replays", "2", "--parallel", "2", "--json", "--out", store)
	require.Equal(t, exitViolated, code, "stderr:\n%s", stderr)
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc), stdout)
	require.Empty(t, loadSchema(t, filepath.Join("..", "..", "docs", "explore.schema.json")).validate(doc))
	require.Equal(t, "found", doc["outcome"])
	findings := doc["findings"].([]any)
	require.Len(t, findings, 1, "it stops at the first finding")
	f := findings[0].(map[string]any)
	require.Equal(t, "register", f["property"])
	require.Equal(t, true, f["reproducible"], "stderr:\n%s", stderr)
	require.Equal(t, float64(1), f["shrunk_faults"], "shrunk to one pause")
	require.Equal(t, float64(2), f["shrunk_clients"])
	require.LessOrEqual(t, f["shrunk_ops"], float64(30), "the pause heals on the takeover, and the operations are capped")
	for _, k := range []string{"original", "shrunk"} {
		require.FileExists(t, f[k].(string))
	}
	for _, k := range []string{"original_run", "shrunk_run"} {
		require.FileExists(t, filepath.Join(f[k].(string), "history.json"))
	}
	require.FileExists(t, filepath.Join(f["dir"].(string), "finding.json"))
	_, err := os.Stat(filepath.Join(doc["dir"].(string), "replays-tmp"))
	require.True(t, os.IsNotExist(err), "the replays' temporary store is removed")
	index, err := os.ReadFile(filepath.Join(store, "index.html"))
	require.NoError(t, err)
	require.Contains(t, string(index), `data-kind="explore"`, "the store's index lists the exploration")
	shrunk := f["shrunk"].(string)
	require.Contains(t, stderr, "broke: register: ")
	require.Contains(t, stderr, "replay: fencecheck run --schedule "+shrunk+"\n")
	require.Contains(t, stderr, "file: "+shrunk+"\n")

	// The command it prints replays the violation.
	code, stdout, stderr = run(t, "run", "--schedule", shrunk, "--out", store)
	require.Equal(t, exitViolated, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	require.Contains(t, stdout, "schedule (seed ")
	require.Equal(t, 1, strings.Count(stdout, "fault pause on client-"), stdout)
}
