package campaign

import (
	"context"
	"slices"
	"time"

	"github.com/fencecheck/fencecheck/harness/nemesis"
)

// Candidate is what the shrinker changes: a schedule and the run's number of clients.
type Candidate struct {
	Schedule nemesis.Schedule
	Clients  int
}

// Rate is how many of a candidate's replays violated the property.
type Rate struct {
	Hits, Runs int
}

// ShrinkTest replays a candidate and says how often it still fails.
type ShrinkTest func(ctx context.Context, c Candidate) (Rate, error)

// ShrinkConfig bounds the shrinker.
type ShrinkConfig struct {
	// Need is the least number of hits a candidate's Rate must have to be kept.
	Need int
	// MinHold is the shortest hold halving goes to.
	MinHold time.Duration
	// MinClients is the fewest clients (a stale write needs two).
	MinClients int
}

// Shrink shrinks start greedily: it drops items one at a time, then halves holds, then
// takes fewer clients, keeping a candidate only if test says it still fails at least
// cfg.Need times. It returns the smallest candidate kept (start when none was) and that
// candidate's rate (the zero Rate for start: its rate is the caller's). When ctx ends or
// test fails, it returns what it had so far with the error.
func Shrink(ctx context.Context, start Candidate, cfg ShrinkConfig, test ShrinkTest) (Candidate, Rate, error) {
	best, bestRate := clone(start), Rate{}
	try := func(c Candidate) (bool, error) {
		if err := ctx.Err(); err != nil {
			return false, context.Cause(ctx)
		}
		r, err := test(ctx, c)
		if err != nil {
			return false, err
		}
		if r.Hits >= cfg.Need {
			best, bestRate = c, r
			return true, nil
		}
		return false, nil
	}
	// Drop items one at a time; after a drop the same index is the next item.
	for i := 0; i < len(best.Schedule.Items) && len(best.Schedule.Items) > 1; {
		c := clone(best)
		c.Schedule.Items = slices.Delete(c.Schedule.Items, i, i+1)
		ok, err := try(c)
		if err != nil {
			return best, bestRate, err
		}
		if !ok {
			i++
		}
	}
	// Halve each item's hold for as long as it still fails.
	for i := range best.Schedule.Items {
		for best.Schedule.Items[i].Hold/2 >= cfg.MinHold {
			c := clone(best)
			c.Schedule.Items[i].Hold /= 2
			ok, err := try(c)
			if err != nil {
				return best, bestRate, err
			}
			if !ok {
				break
			}
		}
	}
	// Fewer clients: a fault on a client that is no more strikes client c mod n.
	for best.Clients > max(cfg.MinClients, 1) {
		c := clone(best)
		c.Clients--
		for k := range c.Schedule.Items {
			c.Schedule.Items[k].Client %= c.Clients
		}
		ok, err := try(c)
		if err != nil {
			return best, bestRate, err
		}
		if !ok {
			break
		}
	}
	return best, bestRate, nil
}

func clone(c Candidate) Candidate {
	c.Schedule.Items = slices.Clone(c.Schedule.Items)
	return c
}
