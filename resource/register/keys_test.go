package register

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/harness"
)

// Each key is its own cell with its own fence; no key is the default cell.
func TestKeyedCells(t *testing.T) {
	for _, kind := range []Kind{Fenced, TOCTOU, Unfenced} {
		t.Run(string(kind), func(t *testing.T) {
			r, err := New(kind, "strict")
			require.NoError(t, err)
			defer r.Close()
			c, err := r.NewClient(context.Background(), 0, r.Endpoints(), nil)
			require.NoError(t, err)
			defer c.Close()
			kc, ok := c.(harness.KeyedResourceClient)
			require.True(t, ok, "the register client serves keys")
			ctx := context.Background()
			for _, step := range []struct {
				key      string
				token    int64
				value    string
				accepted bool
			}{
				{"a", 5, "a5", true},
				{"b", 3, "b3", true}, // a lower token on another key passes its own fence
				{"", 1, "d1", true},
				{"a", 4, "a4", kind == Unfenced},
			} {
				ok, err := kc.WriteKey(ctx, step.key, tokenLease(step.token), step.value)
				require.NoError(t, err)
				require.Equal(t, step.accepted, ok, "%+v", step)
			}
			v, tok, err := kc.ReadKey(ctx, "b")
			require.NoError(t, err)
			require.Equal(t, "b3", v)
			require.EqualValues(t, 3, tok)
			v, _, err = c.Read(ctx)
			require.NoError(t, err)
			require.Equal(t, "d1", v)
			require.Equal(t, State{Value: "d1", Token: 1}, r.Server().Snapshot())
			v, _, err = kc.ReadKey(ctx, "never-written")
			require.NoError(t, err)
			require.Empty(t, v)
		})
	}
}
