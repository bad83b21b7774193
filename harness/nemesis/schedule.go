package nemesis

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// Item is one fault of a random schedule.
type Item struct {
	// At is when the fault is armed, from the start of the run.
	At time.Duration `json:"at"`
	// Kind is the fault's name.
	Kind string `json:"kind"`
	// Client is the client a client fault strikes (at its next pause point).
	Client int `json:"client"`
	// Hold is how long the fault lasts once it strikes (with Takeover, the longest).
	Hold time.Duration `json:"hold"`
	// Takeover makes a client fault strike as a targeted one does: inside the client's
	// first critical section from At on, where its kind strikes the holder (not at any
	// pause point), and heal as soon as another client's write is accepted, Hold at the
	// latest. The stale write then comes right after the takeover, whatever the TTL.
	Takeover bool `json:"takeover,omitempty"`
}

// Schedule is a random fault schedule. It depends only on its inputs: the same seed
// gives the same schedule.
type Schedule struct {
	Seed  int64  `json:"seed"`
	Items []Item `json:"items"`
}

// ScheduleConfig says what a random schedule draws from.
type ScheduleConfig struct {
	Seed  int64
	Kinds []string
	// Clients is the number of clients faults can strike.
	Clients int
	// Total is how long the schedule lasts; Interval the mean quiet time between faults.
	Total, Interval time.Duration
	// TTL scales the holds: each lasts between TTL/2 and 3×TTL, so some outlive leases
	// and some do not.
	TTL time.Duration
}

// Generate draws a schedule: one fault at a time, separated by quiet intervals, all
// healed before Total.
func Generate(c ScheduleConfig) (Schedule, error) {
	if len(c.Kinds) == 0 || c.Clients < 1 || c.Total <= 0 || c.Interval <= 0 || c.TTL <= 0 {
		return Schedule{}, fmt.Errorf("schedule: want kinds, clients >= 1 and positive total, interval and TTL")
	}
	rng := rand.New(rand.NewPCG(uint64(c.Seed), 0x6e656d65736973)) // "nemesis"
	s := Schedule{Seed: c.Seed}
	at := c.Interval/2 + time.Duration(rng.Int64N(int64(c.Interval)))
	for {
		hold := c.TTL/2 + time.Duration(rng.Int64N(int64(c.TTL*5/2)))
		if at+hold > c.Total {
			break
		}
		s.Items = append(s.Items, Item{At: at, Kind: c.Kinds[rng.IntN(len(c.Kinds))], Client: rng.IntN(c.Clients), Hold: hold})
		at += hold + c.Interval/2 + time.Duration(rng.Int64N(int64(c.Interval)))
	}
	return s, nil
}

// String prints the schedule one fault per line.
func (s Schedule) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "schedule (seed %d): %d faults\n", s.Seed, len(s.Items))
	for _, it := range s.Items {
		until := "for"
		if it.Takeover {
			until = "until the takeover, at most"
		}
		fmt.Fprintf(&b, "  at %6.2f s  %-16s client %d  %s %.2f s\n", it.At.Seconds(), it.Kind, it.Client, until, it.Hold.Seconds())
	}
	return b.String()
}

// ClientFaults turns the schedule into faults for the nemesis: strike gives each item's
// fault as its kind makes it (where it strikes, what it does, what rides on it), and the
// schedule says when it is armed, whom it strikes and how long it holds. A fault that
// has not struck within its hold is dropped; an item strike refuses is left out.
func (s Schedule) ClientFaults(strike func(Item) (ClientFault, bool)) []ClientFault {
	var out []ClientFault
	for _, it := range s.Items {
		f, ok := strike(it)
		if !ok {
			continue
		}
		f.Kind, f.Client, f.ArmAfter = it.Kind, it.Client, it.At
		if it.Takeover {
			// The strike's own point, minimum hold and exclusive heal; armed at At with
			// no grant to wait for (the client's own grant is the first), never
			// disarmed, held Hold at most.
			f.Targeted, f.ArmGrants, f.Deadline = true, 0, 0
			f.MinHold = min(f.MinHold, it.Hold)
			f.MaxHold = it.Hold
		} else {
			f.Deadline = it.At + it.Hold
			f.MinHold, f.MaxHold = it.Hold, it.Hold
		}
		out = append(out, f)
	}
	return out
}
