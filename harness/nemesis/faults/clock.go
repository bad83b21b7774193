package faults

import (
	"context"
	"fmt"
	"time"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/harness/nemesis"
	"github.com/fencecheck/fencecheck/harness/registry"
)

// The service's clocks: one fencecheck owns runs fast or steps back; one it can only
// start fast runs fast from the server's start.

// SkewRate is how much faster a skewed clock fencecheck owns runs.
const SkewRate = 20.0

// clocksNotOwned says why a clock fault cannot reach the target's clocks: what the
// fault does to the clock in words (want), the interface that would let it (needs).
func clocksNotOwned(name, want, needs string, t registry.Target) error {
	if t.Caps.FastClock {
		return registry.Refuse(needs, "fault %q: backend %s's server clock can only be run fast from the server's start (skew), not %s while it runs", name, t.Backend, want)
	}
	return registry.Refuse(needs, "fault %q: backend %s's server clock cannot be %s: its server and clients read the machine's real time", name, t.Backend, want)
}

type skew struct{}

func (skew) Name() string { return Skew }
func (skew) Meaning() string {
	return "the lock service's clock runs fast while the holder is briefly paused (less than its TTL by its own clock): 20x for a clock fencecheck owns (registry.ServiceClocked), or the rate a server process was started at (registry.FastClocked)"
}
func (f skew) Applies(t registry.Target) error {
	if err := ownService(f.Name(), t); err != nil {
		return err
	}
	switch {
	case t.Caps.ServiceClock:
		return nil
	case !t.Caps.FastClock:
		return clocksNotOwned(f.Name(), "skewed", "registry.ServiceClocked (or registry.FastClocked: a clock run fast from the server's start)", t)
	case t.Random:
		return registry.Refuse("registry.FastClocked", "fault %q: backend %s's server clock can only run fast from the server's start, for the whole run: give it as a targeted fault (--fault), not in a random schedule", f.Name(), t.Backend)
	}
	return nil
}

// ShapePause: a brief pause, shorter than the TTL by the client's clock: only the fast
// service clock makes it outlive the lease. A clock fast from the server's start runs
// slower than SkewRate (faster, it would expire every session, busy or not): at 2x the
// server forgets a silent session after TTL/2, so the pause may last up to 0.9 TTL.
//
// It arms once three grants were made (ArmGrants) and TTL/20 has passed, not a whole TTL:
// the pause is on the fast clock's scale, and a careful skew run's TTL is long so that its
// real-time window is wide (catalogue.SkewTTL), not so that it waits for it.
func (skew) ShapePause(t registry.Target, s *nemesis.ClientFault) bool {
	s.MinHold, s.MaxHold = t.TTL/20, t.TTL/2
	s.ArmAfter = min(s.ArmAfter, max(t.TTL/20, 200*time.Millisecond))
	if !t.Caps.ServiceClock && t.Caps.ClockRate > 0 {
		s.MaxHold = t.TTL * 9 / 10
	}
	return true
}

func (f skew) Action(_ registry.Target, b harness.Backend) nemesis.Action {
	if fc, ok := b.(registry.FastClocked); ok && fc.ClockRate() > 0 {
		if _, owned := b.(registry.ServiceClocked); !owned {
			return fastClockSkew(f.Name(), b, fc)
		}
	}
	sc, _ := b.(registry.ServiceClocked)
	var skewed *nemesis.Clock
	return nemesis.Action{
		Kind: f.Name(),
		Start: func(ctx context.Context, _ *nemesis.Nemesis, _ int) (string, string, error) {
			if sc == nil {
				return "lock service", "", registry.Refuse("registry.ServiceClocked", "backend %s's server clock cannot be skewed", b.Name())
			}
			target, c, err := sc.ServiceClock(ctx)
			if err != nil {
				return target, "", err
			}
			skewed = c
			if err := c.SetRate(SkewRate); err != nil {
				return target, "", err
			}
			return target, fmt.Sprintf("%s's clock runs %gx fast (its leases expire %gx early in real time)", target, SkewRate, SkewRate), nil
		},
		Heal: func(context.Context) error {
			if skewed != nil {
				skewed.Reset(false) // runs at the right speed again; like a slewing NTP, it keeps the lead it gained
			}
			return nil
		},
	}
}

// fastClockSkew is skew on a clock that runs fast from the server's start: nothing to
// change when the fault starts; its detail says whose clock runs how fast.
func fastClockSkew(kind string, b harness.Backend, fc registry.FastClocked) nemesis.Action {
	return nemesis.Action{
		Kind: kind,
		Start: func(ctx context.Context, _ *nemesis.Nemesis, _ int) (string, string, error) {
			i, err := leader(ctx, b)
			if err != nil {
				return "lock service", "", err
			}
			who := "the lock server"
			if pn, ok := b.(harness.ProcessNodes); ok {
				who = serverRole(pn, i) + pidOf(b, i)
				if pn.Nodes() > 1 {
					who = "every server, " + who + " among them,"
				}
			}
			rate := fc.ClockRate()
			return node(i), fmt.Sprintf("%s runs its clock %gx fast, wall and monotonic, since it started: it expires a silent session after 1/%g of its timeout in real time", who, rate, rate), nil
		},
	}
}

type clockJump struct{}

func (clockJump) Name() string { return ClockJump }
func (clockJump) Meaning() string {
	return "the lock server's wall clock (registry.WallClocked) steps back while the holder is paused: when its tokens are read from that clock, to between the last two grants, standing still until healed; otherwise 1 h back"
}
func (f clockJump) Applies(t registry.Target) error {
	if err := ownService(f.Name(), t); err != nil {
		return err
	}
	if !t.Caps.WallClock {
		return clocksNotOwned(f.Name(), "stepped back", "registry.WallClocked", t)
	}
	return nil
}

// ShapePause: the pause ends at the second write of another client, the first accepted
// and the next accepted or refused, and otherwise keeps its shape (false: the strike
// still picks its pause point). A token clock that stands still hands the next holders
// the same token: the first of them writes, the fence refuses the rest, and a pause that
// waited for another accepted write would last until its MaxHold ceiling.
func (clockJump) ShapePause(_ registry.Target, s *nemesis.ClientFault) bool {
	s.Writes = 2
	return false
}

func (f clockJump) Action(_ registry.Target, b harness.Backend) nemesis.Action {
	wc, _ := b.(registry.WallClocked)
	return nemesis.Action{
		Kind: f.Name(),
		Start: func(_ context.Context, nem *nemesis.Nemesis, client int) (string, string, error) {
			if wc == nil {
				return "lock server", "", registry.Refuse("registry.WallClocked", "backend %s's server wall clock cannot be stepped back", b.Name())
			}
			c := wc.WallClock()
			if !wc.WallClockTokens() {
				c.Jump(-time.Hour)
				return "lock server", "wall clock stepped back 1 h (tokens are not read from it)", nil
			}
			prev, held, ok := lastTokens(nem.History(), client)
			if !ok || held-prev < 2 {
				c.Jump(-time.Hour)
				return "lock server", "wall clock stepped back 1 h (no room between the last two grants to land in)", nil
			}
			at := time.Unix(0, prev+(held-prev)/2)
			c.Freeze(at)
			return "lock server", fmt.Sprintf("wall clock stepped back %s, to %s (between the last two grants, tokens %d and %d), and stands still",
				history.Seconds(time.Now().UnixNano()-at.UnixNano()), at.Format(time.RFC3339Nano), prev, held), nil
		},
		Heal: func(context.Context) error {
			if wc != nil {
				wc.WallClock().Reset(true)
			}
			return nil
		},
	}
}

// lastTokens returns the struck client's last granted token and the token its last read
// saw stored (the previous holder's): the two grants a stepped-back clock lands between.
func lastTokens(h *history.History, client int) (prev, held int64, ok bool) {
	var haveAcq, haveRead bool
	for i := len(h.Ops) - 1; i >= 0 && !(haveAcq && haveRead); i-- {
		o := h.Ops[i]
		if o.Client != client || o.Status != history.OK {
			continue
		}
		switch {
		case o.Kind == history.Read && !haveRead && !haveAcq:
			prev, haveRead = o.Token, true
		case o.Kind == history.Acquire && !haveAcq:
			held, haveAcq = o.Token, true
		}
	}
	return prev, held, haveAcq && haveRead
}
