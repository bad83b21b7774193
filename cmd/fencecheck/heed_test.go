package main

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/harness/history"
)

// TestCheckFailOnHeed: the opt-in heed property is checked only when --fail-on names
// it, and then fails the run on a client that wrote after it was told its lease was
// lost; unasked, the report is the one it always was.
func TestCheckFailOnHeed(t *testing.T) {
	t.Parallel()
	ret := func(t int64) *int64 { return &t }
	h := &history.History{Format: history.Format, Run: history.Run{Fence: history.FenceMonotonic}, Faults: []history.Fault{},
		Ops: []history.Op{
			{ID: 1, Client: 0, Kind: history.Acquire, Call: 0, Return: ret(10), Status: history.OK, Token: 1},
			{ID: 2, Client: 0, Kind: history.Write, Call: 20, Return: ret(30), Status: history.OK, Token: 1, Value: "a"},
			{ID: 3, Client: 0, Kind: history.Write, Call: 60, Return: ret(70), Status: history.OK, Token: 1, Value: "b"},
		},
		Lost: []history.Lost{{Client: 0, AcquireID: 1, Token: 1, At: 50, Reason: "a renewal was refused"}},
	}
	path := filepath.Join(t.TempDir(), "history.json")
	require.NoError(t, history.WriteFile(path, h))
	type doc struct {
		Verdicts map[string]string `json:"verdicts"`
		Results  []struct {
			Property, Verdict, Explanation string
			Witness                        []int
		} `json:"results"`
		Trouble string `json:"trouble"`
	}

	code, stdout, stderr := run(t, "check", "--json", path)
	require.Equal(t, exitSafe, code, stderr)
	var unasked doc
	require.NoError(t, json.Unmarshal([]byte(stdout), &unasked))
	require.NotContains(t, unasked.Verdicts, "heed")
	require.Len(t, unasked.Results, 4)

	code, stdout, stderr = run(t, "check", "--json", "--fail-on", "register,updates,heed", path)
	require.Equal(t, exitViolated, code, stderr)
	var raw any
	require.NoError(t, json.Unmarshal([]byte(stdout), &raw))
	require.Empty(t, loadSchema(t, "../../docs/check.schema.json").validate(raw), "check --json with heed matches its schema")
	var asked doc
	require.NoError(t, json.Unmarshal([]byte(stdout), &asked))
	require.Empty(t, asked.Trouble)
	require.Equal(t, "violated", asked.Verdicts["heed"])
	for _, p := range []string{"register", "updates", "tokens", "mutex"} {
		require.Equal(t, unasked.Verdicts[p], asked.Verdicts[p], p)
	}
	last := asked.Results[len(asked.Results)-1]
	require.Equal(t, "heed", last.Property)
	require.Equal(t, []int{3, 1}, last.Witness)
	require.Contains(t, last.Explanation, "lost[0]")
}
