package reports

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/judge"
)

// A run that fails before it has a history says so in its folder and leaves latest at
// the last run with evidence; one that failed with a history moves latest and says it
// failed; the store's index shows a scenario whose only run failed as failed.
func TestEndRun(t *testing.T) {
	root := t.TempDir()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	good, err := NewRunDir(root, "s", now)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(good, HistoryFile), []byte("{}"), 0o644))
	require.NoError(t, EndRun(good, ""))
	require.NoFileExists(t, filepath.Join(good, FailedFile))

	bad, err := NewRunDir(root, "s", now.Add(time.Second))
	require.NoError(t, err)
	require.NoError(t, EndRun(bad, "backend redis:\n\tredis-server not found"))
	b, err := os.ReadFile(filepath.Join(bad, FailedFile))
	require.NoError(t, err)
	require.Equal(t, "backend redis: redis-server not found\n", string(b))
	target, err := os.Readlink(filepath.Join(root, "s", LatestLink))
	require.NoError(t, err)
	require.Equal(t, filepath.Base(good), target, "latest stays at the run with a history")

	partial, err := NewRunDir(root, "s", now.Add(2*time.Second))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(partial, HistoryFile), []byte("{}"), 0o644))
	require.NoError(t, EndRun(partial, "client 1 broke the protocol"))
	target, err = os.Readlink(filepath.Join(root, "s", LatestLink))
	require.NoError(t, err)
	require.Equal(t, filepath.Base(partial), target, "a run with a history is the latest evidence, failed or not")

	only, err := NewRunDir(root, "t", now)
	require.NoError(t, err)
	require.NoError(t, EndRun(only, "cannot connect"))
	_, err = os.Lstat(filepath.Join(root, "t", LatestLink))
	require.True(t, os.IsNotExist(err))
	es, err := ScanStore(root)
	require.NoError(t, err)
	byName := map[string]StoreEntry{}
	for _, e := range es {
		byName[e.Name] = e
	}
	require.Equal(t, judge.RunOutcome("failed"), byName["s"].Outcome)
	require.Equal(t, "client 1 broke the protocol", byName["s"].Summary)
	require.Equal(t, judge.RunOutcome("failed"), byName["t"].Outcome)
	require.Equal(t, "t/"+filepath.Base(only)+"/"+FailedFile, byName["t"].Page)
	require.Equal(t, 3, byName["s"].Runs)
}
