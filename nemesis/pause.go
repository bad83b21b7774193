// Package nemesis injects faults into a run: GC-like pauses of a client (its worker stops
// and its links stall), writes held in the network, and (in sub-packages) the loopback
// fault proxy. Faults are targeted and deterministic: they strike whichever client first
// reaches a pause point inside its critical section, and they heal on an event (another
// client's write was accepted) rather than on a timer that load could outrun.
package nemesis

import (
	"context"
	"fmt"
	"sync"
	"time"

	"fencecheck/harness"
	"fencecheck/harness/history"
)

// Link is one faultable network link; *proxy.Link implements it.
type Link interface {
	Stall()
	Pass()
}

// ClientFault is a targeted fault on the first client to reach Point after the fault is
// armed: that client is inside its critical section, so it is the lock holder.
type ClientFault struct {
	// Kind is recorded in the history ("pause", "pause-before-read", "delay").
	Kind string
	// Point is where the fault strikes.
	Point harness.PausePoint
	// StopWorker stops the client's worker at Point (a GC pause). When false the worker
	// goes on and its next request is held in the stalled links (a delayed write).
	StopWorker bool
	// ArmAfter is how long after the run starts the fault is armed, so that the run
	// first shows some normal critical sections.
	ArmAfter time.Duration
	// MinHold is the shortest time the fault lasts; set it above the lease TTL so the
	// lease surely expires.
	MinHold time.Duration
	// MaxHold ends the fault even if no other client's write was accepted meanwhile
	// (then the run proves nothing, and the verdicts say inconclusive).
	MaxHold time.Duration
}

// Validate checks the fault's settings.
func (f ClientFault) Validate() error {
	switch {
	case f.Kind == "":
		return fmt.Errorf("nemesis: fault without a kind")
	case f.Point == "":
		return fmt.Errorf("nemesis: fault %s without a pause point", f.Kind)
	case f.MinHold <= 0 || f.MaxHold < f.MinHold:
		return fmt.Errorf("nemesis: fault %s: want 0 < min hold (%v) <= max hold (%v)", f.Kind, f.MinHold, f.MaxHold)
	}
	return nil
}

// Nemesis runs one run's client faults. Create it with New, register each client's
// links, give each worker its Gate, and call Heal before the final reads.
type Nemesis struct {
	rec    *history.Recorder
	faults []ClientFault

	mu     sync.Mutex
	links  map[int][]Link
	fired  []bool
	active map[*strike]struct{}
	healed bool
	wg     sync.WaitGroup
}

// strike is one firing of a fault.
type strike struct {
	client int
	// otherWrite is closed when a client other than the target has a write accepted.
	otherWrite chan struct{}
	once       sync.Once
	// heal is closed to end the fault early (the run is ending).
	heal chan struct{}
}

// New returns a nemesis that will fire each fault once, recording into rec.
func New(rec *history.Recorder, faults ...ClientFault) (*Nemesis, error) {
	for _, f := range faults {
		if err := f.Validate(); err != nil {
			return nil, err
		}
	}
	n := &Nemesis{rec: rec, faults: faults, links: map[int][]Link{}, fired: make([]bool, len(faults)), active: map[*strike]struct{}{}}
	rec.Watch(n.observe)
	return n, nil
}

// AddLinks registers links that belong to client (all its links to every server).
func (n *Nemesis) AddLinks(client int, links ...Link) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.links[client] = append(n.links[client], links...)
}

// Gate returns the pause gate for a client's worker.
func (n *Nemesis) Gate(client int) harness.Gate { return gate{n: n, client: client} }

type gate struct {
	n      *Nemesis
	client int
}

func (g gate) Pause(ctx context.Context, p harness.PausePoint) { g.n.pause(ctx, g.client, p) }

func (n *Nemesis) observe(op history.Op) {
	if op.Kind != history.Write || op.Status != history.OK {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for s := range n.active {
		if s.client != op.Client {
			s.once.Do(func() { close(s.otherWrite) })
		}
	}
}

func (n *Nemesis) pause(ctx context.Context, client int, p harness.PausePoint) {
	n.mu.Lock()
	if n.healed {
		n.mu.Unlock()
		return
	}
	idx := -1
	now := time.Duration(n.rec.Now())
	for i, f := range n.faults {
		if !n.fired[i] && f.Point == p && now >= f.ArmAfter {
			idx = i
			break
		}
	}
	if idx < 0 {
		n.mu.Unlock()
		return
	}
	n.fired[idx] = true
	f := n.faults[idx]
	s := &strike{client: client, otherWrite: make(chan struct{}), heal: make(chan struct{})}
	n.active[s] = struct{}{}
	links := append([]Link(nil), n.links[client]...)
	n.wg.Add(1)
	n.mu.Unlock()

	detail := fmt.Sprintf("client %d stopped at %s", client, p)
	if !f.StopWorker {
		detail = fmt.Sprintf("client %d's request at %s held in the network", client, p)
	}
	fi := n.rec.FaultStart(f.Kind, fmt.Sprintf("client-%d", client), detail)
	for _, l := range links {
		l.Stall()
	}
	hold := func() {
		defer n.wg.Done()
		extra := n.wait(ctx, f, s)
		for _, l := range links {
			l.Pass()
		}
		n.mu.Lock()
		delete(n.active, s)
		n.mu.Unlock()
		n.rec.FaultEnd(fi, extra)
	}
	if f.StopWorker {
		hold()
		return
	}
	go hold()
}

// wait holds a strike for at least MinHold and until another client's write is accepted,
// but no longer than MaxHold. It returns a note for the fault's detail.
func (n *Nemesis) wait(ctx context.Context, f ClientFault, s *strike) string {
	minT := time.NewTimer(f.MinHold)
	defer minT.Stop()
	maxT := time.NewTimer(f.MaxHold)
	defer maxT.Stop()
	select {
	case <-minT.C:
	case <-s.heal:
		return "healed early: the run ended"
	case <-ctx.Done():
		return "healed early: the run ended"
	}
	select {
	case <-s.otherWrite:
		return "another client's write was accepted meanwhile"
	case <-maxT.C:
		return fmt.Sprintf("no other client's write was accepted within %v", f.MaxHold)
	case <-s.heal:
		return "healed early: the run ended"
	case <-ctx.Done():
		return "healed early: the run ended"
	}
}

// Active reports whether any fault is in force.
func (n *Nemesis) Active() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.active) > 0
}

// Pending reports whether some fault has not fired yet.
func (n *Nemesis) Pending() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, f := range n.fired {
		if !f {
			return true
		}
	}
	return false
}

// Heal ends every active fault, disarms the rest, and waits until all links pass.
func (n *Nemesis) Heal() {
	n.mu.Lock()
	n.healed = true
	for s := range n.active {
		select {
		case <-s.heal:
		default:
			close(s.heal)
		}
	}
	n.mu.Unlock()
	n.wg.Wait()
}
