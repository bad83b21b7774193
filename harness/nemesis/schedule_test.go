package nemesis

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestGenerateIsDeterministic(t *testing.T) {
	cfg := ScheduleConfig{Seed: 7, Kinds: []string{"pause", "partition", "skew"}, Clients: 3, Total: 60 * time.Second, Interval: time.Second, TTL: 500 * time.Millisecond}
	a, err := Generate(cfg)
	require.NoError(t, err)
	b, err := Generate(cfg)
	require.NoError(t, err)
	require.Equal(t, a, b)
	require.NotEmpty(t, a.Items)
	cfg.Seed = 8
	c, err := Generate(cfg)
	require.NoError(t, err)
	require.NotEqual(t, a.Items, c.Items, "another seed, another schedule")

	kinds := map[string]bool{}
	var end time.Duration
	for _, it := range a.Items {
		require.GreaterOrEqual(t, it.At, end, "one fault at a time")
		end = it.At + it.Hold
		require.LessOrEqual(t, end, cfg.Total, "every fault heals before the end")
		require.GreaterOrEqual(t, it.Hold, cfg.TTL/2)
		kinds[it.Kind] = true
	}
	require.Len(t, kinds, 3, "draws every kind over 60 s")

	_, err = Generate(ScheduleConfig{})
	require.Error(t, err)
}
