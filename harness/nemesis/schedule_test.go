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

// A timed item is armed at At, held exactly Hold and disarmed if it has not struck by
// then; a takeover item keeps its strike's point and minimum hold, waits for no grant,
// is never disarmed, and holds Hold at the most.
func TestScheduleClientFaults(t *testing.T) {
	s := Schedule{Items: []Item{
		{At: time.Second, Kind: "pause", Client: 1, Hold: 700 * time.Millisecond},
		{At: 0, Kind: "stall", Client: 0, Hold: 5 * time.Second, Takeover: true},
		{At: 2 * time.Second, Kind: "meteor", Client: 0, Hold: time.Second},
	}}
	got := s.ClientFaults(func(it Item) (ClientFault, bool) {
		if it.Kind == "meteor" {
			return ClientFault{}, false
		}
		if it.Takeover {
			return ClientFault{Point: "after-read", ArmGrants: 3, MinHold: 25 * time.Millisecond, MaxHold: time.Minute, Exclusive: true}, true
		}
		return ClientFault{AnyPoint: true, Targeted: true}, true
	})
	require.Len(t, got, 2, "an item its strike refuses is left out")
	timed, takeover := got[0], got[1]
	require.Equal(t, ClientFault{Kind: "pause", AnyPoint: true, Targeted: true, Client: 1, ArmAfter: time.Second,
		Deadline: 1700 * time.Millisecond, MinHold: 700 * time.Millisecond, MaxHold: 700 * time.Millisecond}, timed)
	require.Equal(t, ClientFault{Kind: "stall", Point: "after-read", Targeted: true, Client: 0, MinHold: 25 * time.Millisecond,
		MaxHold: 5 * time.Second, Exclusive: true}, takeover)
	require.NoError(t, takeover.Validate())
	require.Contains(t, s.String(), "until the takeover, at most 5.00 s")
}
