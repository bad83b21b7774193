package campaign

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/harness/nemesis"
)

// The shrinker against a fake "does it still fail": it drops every item the failure
// does not need, halves the needed one's hold while it still fails, then takes clients
// away while it still fails, and keeps only candidates at the needed rate.
func TestShrink(t *testing.T) {
	items := []nemesis.Item{
		{At: 1 * time.Second, Kind: "delay", Client: 0, Hold: 800 * time.Millisecond},
		{At: 3 * time.Second, Kind: "pause", Client: 3, Hold: 1600 * time.Millisecond},
		{At: 5 * time.Second, Kind: "stall", Client: 1, Hold: 400 * time.Millisecond},
	}
	start := Candidate{Schedule: nemesis.Schedule{Seed: 4, Items: items}, Clients: 4}
	// Fails when a pause of at least 400 ms is left and two clients or more: at 10 of 10
	// when its hold is 800 ms or more, at 8 of 10 (not enough) below.
	fails := func(c Candidate) Rate {
		for _, it := range c.Schedule.Items {
			switch {
			case it.Kind != "pause" || c.Clients < 2:
			case it.Hold >= 800*time.Millisecond:
				return Rate{Hits: 10, Runs: 10}
			case it.Hold >= 400*time.Millisecond:
				return Rate{Hits: 8, Runs: 10}
			}
		}
		return Rate{Runs: 10}
	}
	var tried []Candidate
	test := func(_ context.Context, c Candidate) (Rate, error) {
		tried = append(tried, c)
		return fails(c), nil
	}
	got, rate, err := Shrink(context.Background(), start, ShrinkConfig{Need: 9, MinHold: 50 * time.Millisecond, MinClients: 2}, test)
	require.NoError(t, err)
	require.Len(t, got.Schedule.Items, 1)
	require.Equal(t, "pause", got.Schedule.Items[0].Kind)
	require.Equal(t, 800*time.Millisecond, got.Schedule.Items[0].Hold, "halved once; the next half fails too rarely")
	require.Equal(t, 93750*time.Microsecond, got.Schedule.Items[0].At, "armed earlier, halving from 3 s while at least 50 ms")
	require.Equal(t, 2, got.Clients)
	require.Equal(t, 0, got.Schedule.Items[0].Client, "client 3 of 4 is client 3 mod 3 of 3, then stays")
	require.Equal(t, Rate{Hits: 10, Runs: 10}, rate)
	require.Equal(t, items, start.Schedule.Items, "the start is not changed")
	// Greedy order: drop delay (kept), drop pause (refused), drop stall (kept); arm at
	// 1.5 s, 750, 375, 187.5 and 93.75 ms (each kept); halve the hold to 800 ms (kept),
	// to 400 ms (refused); 3 clients (kept), 2 (kept).
	require.Len(t, tried, 12)
	require.Equal(t, []string{"pause", "stall"}, kinds(tried[0]))
	require.Equal(t, []string{"stall"}, kinds(tried[1]))
	require.Equal(t, []string{"pause"}, kinds(tried[2]))
}

// Nothing is kept when no smaller candidate fails often enough: the start comes back
// with the zero rate (the caller measured the start's).
func TestShrinkKeepsStart(t *testing.T) {
	start := Candidate{Schedule: nemesis.Schedule{Items: []nemesis.Item{{At: time.Second, Kind: "pause", Hold: 100 * time.Millisecond}}}, Clients: 2}
	got, rate, err := Shrink(context.Background(), start, ShrinkConfig{Need: 9, MinHold: 50 * time.Millisecond, MinClients: 2},
		func(context.Context, Candidate) (Rate, error) { return Rate{Hits: 3, Runs: 10}, nil })
	require.NoError(t, err)
	require.Equal(t, start, got)
	require.Equal(t, Rate{}, rate)
}

// A test that fails (an interrupt) ends shrinking with what was kept so far.
func TestShrinkInterrupted(t *testing.T) {
	items := []nemesis.Item{{At: time.Second, Kind: "delay", Hold: time.Second}, {At: 3 * time.Second, Kind: "pause", Hold: time.Second}}
	start := Candidate{Schedule: nemesis.Schedule{Items: items}, Clients: 3}
	stop := errors.New("interrupted")
	calls := 0
	got, rate, err := Shrink(context.Background(), start, ShrinkConfig{Need: 1, MinHold: time.Millisecond, MinClients: 2},
		func(context.Context, Candidate) (Rate, error) {
			calls++
			if calls > 1 {
				return Rate{}, stop
			}
			return Rate{Hits: 1, Runs: 1}, nil
		})
	require.ErrorIs(t, err, stop)
	require.Equal(t, []string{"pause"}, kinds(got), "the first drop was kept before the interrupt")
	require.Equal(t, Rate{Hits: 1, Runs: 1}, rate)
}

func kinds(c Candidate) []string {
	var out []string
	for _, it := range c.Schedule.Items {
		out = append(out, it.Kind)
	}
	return slices.Clip(out)
}

// The timing and the operations: an item on a client is tried as a takeover armed from
// the start, then the cap on operations halves from the fewest a violating replay had
// and narrows between the cap that failed too rarely and the one kept.
func TestShrinkTimingAndOps(t *testing.T) {
	start := Candidate{Schedule: nemesis.Schedule{Items: []nemesis.Item{{At: 3 * time.Second, Kind: "pause", Client: 1, Hold: 1600 * time.Millisecond}}}, Clients: 2, Keys: 3}
	// A timed pause fails with 600 ops; a takeover pause armed from the start fails with
	// 40, or with the cap and 4 more when the cap is at least 18.
	var tried []Candidate
	test := func(_ context.Context, c Candidate) (Rate, error) {
		tried = append(tried, c)
		it := c.Schedule.Items[0]
		switch {
		case !it.Takeover:
			return Rate{Hits: 10, Runs: 10, Ops: 600}, nil
		case it.At != 0 || (c.Ops > 0 && c.Ops < 18):
			return Rate{Runs: 10}, nil
		case c.Ops == 0:
			return Rate{Hits: 10, Runs: 10, Ops: 40}, nil
		}
		return Rate{Hits: 10, Runs: 10, Ops: c.Ops + 4}, nil
	}
	cfg := ShrinkConfig{Need: 9, MinHold: 50 * time.Millisecond, MinClients: 2, StartOps: 600, MinOps: 4,
		Takes: func(kind string) bool { return kind == "pause" }, TakeoverHold: 2 * time.Second}
	got, rate, err := Shrink(context.Background(), start, cfg, test)
	require.NoError(t, err)
	require.Equal(t, []nemesis.Item{{Kind: "pause", Client: 1, Hold: 2 * time.Second, Takeover: true}}, got.Schedule.Items)
	require.Equal(t, 20, got.Ops)
	require.Equal(t, 1, got.Keys, "one key still fails")
	require.Equal(t, Rate{Hits: 10, Runs: 10, Ops: 24}, rate)
	var caps []int
	for _, c := range tried {
		caps = append(caps, c.Ops)
	}
	// takeover at 0 (kept); one key (kept); caps 20 (kept), 10 (refused), 15, 17 (refused).
	require.Equal(t, []int{0, 0, 20, 10, 15, 17}, caps)
}
