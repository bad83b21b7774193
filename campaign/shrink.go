package campaign

import (
	"context"
	"slices"
	"time"

	"github.com/fencecheck/fencecheck/harness/nemesis"
)

// Candidate is what the shrinker changes: a schedule, the run's number of clients and
// its operations cap (spec.Spec.MaxOps; 0: none).
type Candidate struct {
	Schedule nemesis.Schedule
	Clients  int
	Ops      int
	// Keys is the run's number of independent locks (0 or 1: one).
	Keys int
}

// Rate is how many of a candidate's replays violated the property, and the fewest
// operations a violating replay's history had (0: not known).
type Rate struct {
	Hits, Runs int
	Ops        int
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
	// Takes says whether an item of this kind can heal on the takeover
	// (nemesis.Item.Takeover: a fault on a client); nil: none can. TakeoverHold is the
	// longest such an item is then held.
	Takes        func(kind string) bool
	TakeoverHold time.Duration
	// StartOps is the fewest operations of a violating replay of start (0: the
	// operations are not shrunk); MinOps the smallest cap tried.
	StartOps, MinOps int
}

// Shrink shrinks start greedily: it makes the timing simpler first, so that every later
// replay is short (an item on a client strikes its first critical section and heals on
// the takeover; failing that, a takeover item is armed from the start), then drops items
// one at a time, then arms the other items earlier and halves their holds, then tries
// one key, then takes fewer clients, then caps the operations (halving from the
// fewest a violating replay had, then narrowing), keeping a candidate only if test says
// it still fails at least cfg.Need times. It returns the smallest candidate kept (start when none was) and that
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
	// Simpler timing: heal on the takeover, armed from the start.
	for i := range best.Schedule.Items {
		it := best.Schedule.Items[i]
		var tries []nemesis.Item
		switch {
		case !it.Takeover && cfg.Takes != nil && cfg.Takes(it.Kind):
			tries = append(tries, nemesis.Item{Kind: it.Kind, Client: it.Client, Hold: max(it.Hold, cfg.TakeoverHold), Takeover: true})
			if it.At > 0 {
				tries = append(tries, nemesis.Item{At: it.At, Kind: it.Kind, Client: it.Client, Hold: max(it.Hold, cfg.TakeoverHold), Takeover: true})
			}
		case it.Takeover && it.At > 0:
			tries = append(tries, nemesis.Item{Kind: it.Kind, Client: it.Client, Hold: it.Hold, Takeover: true})
		}
		for _, t := range tries {
			c := clone(best)
			c.Schedule.Items[i] = t
			ok, err := try(c)
			if err != nil {
				return best, bestRate, err
			}
			if ok {
				break
			}
		}
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
	// Arm each timed item earlier (the operations before it go too), then halve its
	// hold, each for as long as it still fails and not below MinHold.
	halve := func(field func(*nemesis.Item) *time.Duration) error {
		for i := range best.Schedule.Items {
			for !best.Schedule.Items[i].Takeover && *field(&best.Schedule.Items[i])/2 >= cfg.MinHold {
				c := clone(best)
				*field(&c.Schedule.Items[i]) /= 2
				ok, err := try(c)
				if err != nil {
					return err
				}
				if !ok {
					break
				}
			}
		}
		return nil
	}
	for _, field := range []func(*nemesis.Item) *time.Duration{
		func(it *nemesis.Item) *time.Duration { return &it.At },
		func(it *nemesis.Item) *time.Duration { return &it.Hold },
	} {
		if err := halve(field); err != nil {
			return best, bestRate, err
		}
	}
	// One key: every critical section on the same lock.
	if best.Keys > 1 {
		c := clone(best)
		c.Keys = 1
		if _, err := try(c); err != nil {
			return best, bestRate, err
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
	// Fewer operations: halve the cap from the fewest a violating replay had while it
	// still fails, then narrow the gap between the last cap that failed too rarely and
	// the one kept, twice.
	fewest := func() int {
		if bestRate.Runs > 0 {
			return bestRate.Ops
		}
		return cfg.StartOps
	}
	refused := 0
	for {
		n := fewest()
		if best.Ops > 0 && (n == 0 || best.Ops < n) {
			n = best.Ops
		}
		if n/2 < max(cfg.MinOps, 1) {
			break
		}
		c := clone(best)
		c.Ops = n / 2
		ok, err := try(c)
		if err != nil {
			return best, bestRate, err
		}
		if !ok {
			refused = c.Ops
			break
		}
	}
	for range 2 {
		if refused == 0 || best.Ops == 0 || best.Ops-refused < 2 {
			break
		}
		c := clone(best)
		c.Ops = (refused + best.Ops) / 2
		ok, err := try(c)
		if err != nil {
			return best, bestRate, err
		}
		if !ok {
			refused = c.Ops
		}
	}
	return best, bestRate, nil
}

func clone(c Candidate) Candidate {
	c.Schedule.Items = slices.Clone(c.Schedule.Items)
	return c
}
