package campaign

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseShard(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Shard
		err  string
	}{
		{in: "1/1", want: Shard{1, 1}},
		{in: "2/4", want: Shard{2, 4}},
		{in: " 3/3 ", want: Shard{3, 3}},
		{in: "0/3", err: "I must be between 1 and 3"},
		{in: "3/2", err: "I must be between 1 and 2"},
		{in: "-1/2", err: "I must be between 1 and 2"},
		{in: "1/0", err: "N must be at least 1"},
		{in: "banana", err: "want I/N"},
		{in: "1/", err: "want I/N"},
		{in: "/2", err: "want I/N"},
		{in: "1/2/3", err: "want I/N"},
		{in: "", err: "want I/N"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseShard(tc.in)
			if tc.err != "" {
				require.ErrorIs(t, err, ErrShard)
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			back, err := ParseShard(got.String())
			if got.Whole() {
				require.Empty(t, got.String(), "the whole plan has no shard to name")
				return
			}
			require.NoError(t, err)
			require.Equal(t, got, back)
		})
	}
}

// Over plan sizes and shard counts, the shards are disjoint, their union is the plan,
// each keeps the plan's order, and their sizes differ by at most one.
func TestShardSelectPartitionsThePlan(t *testing.T) {
	for _, size := range []int{0, 1, 2, 3, 7, 10, 64, 101} {
		for _, n := range []int{1, 2, 3, 4, 8, 13} {
			seen := make([]int, size)
			minLen, maxLen := size+1, -1
			for i := 1; i <= n; i++ {
				sel := Shard{I: i, N: n}.Select(size)
				require.True(t, slices.IsSorted(sel), "size %d, shard %d/%d: in plan order", size, i, n)
				for _, k := range sel {
					seen[k]++
					require.True(t, Shard{I: i, N: n}.Owns(k))
				}
				minLen, maxLen = min(minLen, len(sel)), max(maxLen, len(sel))
			}
			for k, c := range seen {
				require.Equal(t, 1, c, "size %d, %d shards: run %d is in %d shards", size, n, k, c)
			}
			require.LessOrEqual(t, maxLen-minLen, 1, "size %d, %d shards: balanced", size, n)
		}
	}
	require.Len(t, Shard{}.Select(5), 5, "the zero shard is the whole plan")
}
