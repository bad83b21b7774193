package models

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/models/internal/histgen"
)

// The generator behind the benchmarks and docs/performance.md makes what it says: a
// history whose register, updates and tokens hold, and with StaleAt its copy with one
// accepted stale write, on which porcupine (waited for) agrees.
func TestHistgen(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  histgen.Config
		want Verdict
	}{
		{"held", histgen.Config{Ops: 3000, Seed: 3, Unknown: 0.01, Pause: 0.02}, Held},
		{"held, 4 keys", histgen.Config{Ops: 3000, Seed: 4, Keys: 4, Unknown: 0.01, Pause: 0.02}, Held},
		{"monotonic", histgen.Config{Ops: 3000, Seed: 5, Fence: "monotonic", Unknown: 0.05, Pause: 0.02}, Held},
		{"one stale write", histgen.Config{Ops: 3000, Seed: 6, Unknown: 0.01, Pause: 0.02, StaleAt: 0.9}, Violated},
		{"realistic", histgen.Config{Ops: 3000, Seed: 7, Unknown: 0.02, Pause: 0.02, Realistic: true}, Held},
		{"realistic, one stale write", histgen.Config{Ops: 3000, Seed: 8, Unknown: 0.02, Pause: 0.02, Realistic: true, StaleAt: 0.9}, Violated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := histgen.Generate(tc.cfg)
			rep, err := Check(context.Background(), h, Options{PorcupineBudget: WaitForPorcupine})
			require.NoError(t, err)
			require.Empty(t, rep.Trouble())
			require.Equal(t, tc.want, rep.Verdicts[Register])
			require.Equal(t, Held, rep.Verdicts[Tokens])
			require.Positive(t, rep.Evidence.StaleRejected, "pauses past the lease make stale writes the fence rejects")
			require.Equal(t, tc.want == Violated, rep.Evidence.StaleAccepted == 1)
			if tc.want == Held {
				require.Equal(t, Held, rep.Verdicts[Updates])
			}
			r, _ := rep.Result(Register)
			require.Equal(t, OpinionAgreed, r.Porcupine, r.PorcupineNote)
		})
	}
}

// histgen.Write streams the history Generate returns, as history.Encode writes it.
func TestHistgenWrite(t *testing.T) {
	c := histgen.Config{Ops: 2000, Seed: 9, Unknown: 0.02, Pause: 0.02, Realistic: true, StaleAt: 0.5}
	var streamed, encoded bytes.Buffer
	require.NoError(t, histgen.Write(&streamed, c))
	require.NoError(t, history.Encode(&encoded, histgen.Generate(c)))
	require.Equal(t, encoded.String(), streamed.String())
}
