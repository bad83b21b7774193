package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/harness/history"
)

// A segmented history — by its head, its run's directory or its segments' directory —
// is checked as a stream: the verdicts of the same ops in one file, the ops counted,
// porcupine's second opinion skipped with a note.
func TestCheckSegmented(t *testing.T) {
	h, err := history.ReadFile("testdata/stale-accepted.json")
	require.NoError(t, err)
	dir := t.TempDir()
	head := filepath.Join(dir, "history.json")
	w, err := history.CreateSegments(head, h.Run, 3)
	require.NoError(t, err)
	for i := range h.Ops {
		require.NoError(t, w.WriteOp(&h.Ops[i], nil, nil))
	}
	require.NoError(t, w.Finish(h.Run, h.Faults, nil))

	_, whole, _ := run(t, "check", "--json", "testdata/stale-accepted.json")
	var want struct {
		Verdicts map[string]string `json:"verdicts"`
	}
	require.NoError(t, json.Unmarshal([]byte(whole), &want))
	for _, path := range []string{head, dir, filepath.Join(dir, history.SegmentsDir)} {
		code, stdout, stderr := run(t, "check", "--json", path)
		require.Equal(t, exitViolated, code, stderr)
		var got struct {
			Verdicts map[string]string `json:"verdicts"`
			Results  []struct {
				Property, Porcupine string
				PorcupineNote       string `json:"porcupine_note"`
			} `json:"results"`
		}
		require.NoError(t, json.Unmarshal([]byte(stdout), &got))
		require.Equal(t, want.Verdicts["register"], got.Verdicts["register"], path)
		for _, r := range got.Results {
			require.Equal(t, "skipped", r.Porcupine, r.Property)
			require.Contains(t, r.PorcupineNote, "checked as a stream")
		}
	}
	_, stdout, _ := run(t, "check", head)
	require.Contains(t, stdout, "history: "+itoa(len(h.Ops))+" ops")

	// A malformed segment is bad input: exit 2, naming the segment and the line.
	seg := filepath.Join(dir, history.SegmentsDir, "ops-000002.jsonl")
	f, err := os.OpenFile(seg, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("{\"id\": 99, \"client\": \"x\"}\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	code, _, stderr := run(t, "check", head)
	require.Equal(t, exitUsage, code, stderr)
	require.True(t, strings.Contains(stderr, "ops-000002.jsonl: line "), stderr)
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
