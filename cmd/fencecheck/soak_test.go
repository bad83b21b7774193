package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/campaign"
	"github.com/fencecheck/fencecheck/reports"
)

func TestSoakBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown scenario", []string{"soak", "--scenarios", "naive-fenced-pause,nope"}, `unknown scenario "nope"`},
		{"zero runs", []string{"soak", "--runs", "0"}, "--runs must be at least 1"},
		{"too many runs", []string{"soak", "--scenarios", "naive-fenced-pause", "--runs", "99999999999"}, "--runs 99999999999 is above the most a soak makes, 10000 runs per scenario"},
		{"arguments", []string{"soak", "naive-fenced-pause"}, "unexpected arguments"},
		{"random without faults", []string{"soak", "--scenarios", "naive-32bit-fenced", "--random", "--runs", "1"}, "no faults to draw a random schedule from"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := run(t, tc.args...)
			require.Equal(t, exitUsage, code, "stdout:\n%s", stdout)
			require.Contains(t, stderr, tc.want)
		})
	}
}

// One run of one scenario, as JSON and as a table.
func TestSoakOneRun(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs a scenario twice")
	}
	code, stdout, stderr := run(t, "soak", "--scenarios", "naive-unfenced-pause", "--runs", "1", "--json", "--out", "")
	require.Equal(t, exitSafe, code, "stderr:\n%s", stderr)
	var res campaign.SoakResult
	require.NoError(t, json.Unmarshal([]byte(stdout), &res))
	require.Len(t, res.Scenarios, 1)
	require.Equal(t, 1.0, *res.Scenarios[0].DetectionRate)
	require.Empty(t, res.Scenarios[0].Detail[0].Evidence, "without a store, only differing runs keep their evidence")
	require.Contains(t, stderr, "soak naive-unfenced-pause seed 1: as expected")

	// Into a results store: the run is kept like any other, and the soak's page is in
	// the store's index.
	store := t.TempDir()
	code, stdout, _ = run(t, "soak", "--scenarios", "naive-unfenced-pause", "--runs", "1", "--out", store)
	require.Equal(t, exitSafe, code)
	require.Contains(t, stdout, "naive-unfenced-pause  1     100%")
	require.Contains(t, stdout, "soak page: "+filepath.Join(store, "soak"))
	runs, err := filepath.Glob(filepath.Join(store, "naive-unfenced-pause", "2*", "history.json"))
	require.NoError(t, err)
	require.Len(t, runs, 1)
	index, err := os.ReadFile(filepath.Join(store, "index.html"))
	require.NoError(t, err)
	require.Contains(t, string(index), `data-kind="soak"`)
	doc, err := reports.ReadSoak(filepath.Join(store, "soak", "latest", reports.SoakJSON))
	require.NoError(t, err)
	require.Zero(t, doc.Mismatches())
	require.Equal(t, "naive-unfenced-pause/"+filepath.Base(filepath.Dir(runs[0])), doc.Scenarios[0].Detail[0].Evidence)

	// report rebuilds the soak's page offline, with the run's report.
	require.NoError(t, os.Remove(filepath.Join(store, "soak", "latest", reports.SoakPage)))
	code, stdout, stderr = run(t, "report", store)
	require.Equal(t, exitSafe, code, stderr)
	require.Contains(t, stdout, "and 1 soak page(s)")
	require.FileExists(t, filepath.Join(store, "soak", "latest", reports.SoakPage))
}

// --keys is refused, with exit 2, where the backend or resource does not serve keys.
func TestRunKeysRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"etcd", []string{"run", "--backend", "etcd", "--keys", "4"}, "backend etcd does not support independent keys"},
		{"raft", []string{"run", "--backend", "raft", "--keys", "4"}, "backend raft does not support independent keys"},
		{"negative", []string{"run", "--keys", "-2"}, "keys must be between 1 and 1024"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := run(t, tc.args...)
			require.Equal(t, exitUsage, code, stderr)
			require.Contains(t, stderr, tc.want)
		})
	}
}
