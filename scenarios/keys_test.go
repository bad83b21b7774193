package scenarios

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/models"
)

func TestKeysSpec(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec Spec
		want string // "" = valid
	}{
		{"default", Spec{}, ""},
		{"naive fenced", Spec{Keys: 16}, ""},
		{"naive-persisted toctou", Spec{Backend: "naive-persisted", Resource: "toctou", Keys: 2}, ""},
		{"negative", Spec{Keys: -1}, "keys must be between 1 and 1024"},
		{"etcd", Spec{Backend: "etcd", Keys: 4}, "backend etcd does not support independent keys"},
		{"raft", Spec{Backend: "raft", Keys: 4}, "backend raft does not support independent keys"},
		{"sqlite", Spec{Resource: "sqlite", Keys: 4}, "resource sqlite does not support independent keys"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.spec.withDefaults()
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// A multi-key run records the key of every op, reads every key at the end, and the
// checker (partitioned by key) finds the stale write the pause lets through.
func TestKeyedRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a scenario")
	}
	t.Parallel() // like the catalogue's runs: the faults heal on events, not timers
	spec := Spec{Name: "naive-unfenced-pause-keys", Backend: "naive", Resource: "unfenced", Faults: []string{"pause"}, Keys: 2, Clients: 4}
	o, err := Execute(context.Background(), spec, Options{OutDir: t.TempDir()})
	require.NoError(t, err)
	keys := models.Keys(o.History)
	require.Equal(t, []string{"k0", "k1"}, keys)
	require.Equal(t, 2, o.History.Run.Extra["keys"])
	for _, op := range o.History.Ops {
		require.NotEmpty(t, op.Key, "op %d", op.ID)
	}
	// The final reads: every client reads every key, after the workload.
	finals := map[string]int{}
	for _, op := range o.History.Ops[len(o.History.Ops)-spec.Clients*spec.Keys:] {
		require.Equal(t, history.Read, op.Kind)
		finals[op.Key]++
	}
	require.Equal(t, map[string]int{"k0": 4, "k1": 4}, finals)
	require.True(t, o.Report.Agree)
	require.Equal(t, models.Violated, o.Report.Verdicts[models.Register], "a stale write got through on the paused client's key")
	require.Positive(t, o.Report.Evidence.StaleAccepted)
}
