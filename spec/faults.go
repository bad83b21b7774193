package spec

import (
	"time"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/nemesis"
	"github.com/fencecheck/fencecheck/harness/registry"
)

// ClientFaults turns the run's faults into nemesis faults against the started backend,
// with its capabilities (no longer the Shape's). Service faults ride along with the
// first client fault (given alone, they ride on a pause of the holder, so that the run
// contains a stale write to stop); a random schedule's items are made by their faults.
func (r *Resolved) ClientFaults(started harness.Backend) []nemesis.ClientFault {
	t := r.Target
	t.Caps = r.Backend.RunCaps(r.Settings, started)
	service := registry.Service(started) // a backend may wrap the service faults act on
	if sched, ok := r.Schedule(); ok {
		return sched.ClientFaults(func(it nemesis.Item) (nemesis.ClientFault, bool) {
			f, _ := r.reg.Fault(it.Kind)
			switch f := f.(type) {
			case registry.ClientFault:
				if it.Takeover {
					tt := t
					tt.Random, tt.Early = false, true
					return f.Strike(tt, nil), true
				}
				return f.Strike(t, nil), true
			case registry.ServiceFault:
				// Rides on the first pause point any client reaches, leaving its links alone.
				return nemesis.ClientFault{AnyPoint: true, NoLinks: true, With: []nemesis.Action{f.Action(t, service)}}, true
			}
			return nemesis.ClientFault{}, false
		})
	}
	var with []nemesis.Action // in the order named: they start in it and heal in reverse
	for _, name := range r.Spec.Faults {
		if f, ok := r.reg.Fault(name); ok {
			if sf, ok := f.(registry.ServiceFault); ok {
				with = append(with, sf.Action(t, service))
			}
		}
	}
	if len(with) > 0 || len(r.Riders) > 0 {
		// A fault on the lock service keeps its strike's usual arming: the run's normal
		// critical sections come first (a token counter that restarts must have handed
		// out tokens above the first for a reused one to show).
		t.Early = false
	}
	strikes := r.Strikes
	if len(with) > 0 && len(strikes) == 0 && r.Carrier != nil {
		strikes = []registry.ClientFault{r.Carrier}
	}
	var out []nemesis.ClientFault
	for _, cf := range strikes {
		f := cf.Strike(t, r.Riders)
		if len(out) == 0 {
			f.With = with
			if len(with) > 0 {
				// A paused or isolated leader can hold clients up for a while: a client
				// may notice a silent member only through keep-alives it will not send
				// more often than every 10 s.
				f.MaxHold = max(f.MaxHold, 45*time.Second)
			}
		}
		out = append(out, f)
	}
	return out
}

// Schedule is the run's fault schedule, if it has one: the one given (Spec.Schedule),
// else the random one drawn from the seed.
func (r *Resolved) Schedule() (nemesis.Schedule, bool) {
	s := r.Spec
	if s.Schedule != nil {
		return *s.Schedule, true
	}
	if len(s.RandomFaults) == 0 {
		return nemesis.Schedule{}, false
	}
	sched, err := nemesis.Generate(nemesis.ScheduleConfig{
		Seed: s.Seed, Kinds: s.RandomFaults, Clients: s.Clients, Total: s.Duration, Interval: s.Interval, TTL: s.TTL,
	})
	if err != nil {
		return nemesis.Schedule{}, false
	}
	return sched, true
}
