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

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/history"
)

// Link is one faultable network link; *proxy.Link implements it.
type Link interface {
	Stall()
	Pass()
	// Blackhole closes the link's connections and refuses new ones until Pass.
	Blackhole()
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
	// Partition cuts only the client's links to the lock service (blackhole: its
	// connections close, new ones are refused) instead of stalling all its links; its
	// link to the resource stays up.
	Partition bool
	// Silent, with Partition, makes the cut a quiet one: the client's links to the lock
	// service stall instead (Link.Stall: no FIN, no RST, every connection stays open on
	// both sides and the proxy's kernel goes on ACKing), so only an application-level
	// timeout on either side ends the session; the bytes held are delivered at the heal,
	// as TCP's retransmission would after a partition shorter than its timeout.
	Silent bool
	// ArmAfter is how long after the run starts the fault is armed, so that the run
	// first shows some normal critical sections.
	ArmAfter time.Duration
	// ArmGrants is how many grants (acquires answered OK) the run must have recorded
	// before the fault is armed, beside ArmAfter: the normal critical sections counted,
	// not timed, so a loaded machine that gets through few of them in ArmAfter still
	// shows them (a server whose counter restarts at 0 must have handed out tokens
	// above the first for a reused one to be lower than the holder's).
	ArmGrants int
	// MinHold is the shortest time the fault lasts; set it above the lease TTL so the
	// lease surely expires.
	MinHold time.Duration
	// MaxHold ends the fault even if no other client's write was accepted meanwhile
	// (then the run proves nothing, and the verdicts say inconclusive).
	MaxHold time.Duration
	// Writes is how many writes of other clients since the strike it takes to end the
	// fault after MinHold: the first accepted, the later ones accepted or refused by the
	// resource (0 or 1: one accepted write). A fault on a service that then hands the same
	// token out again (a token clock that stands still) sets 2: after the next holder's
	// accepted write every write is refused, and one refusal is what shows the fence
	// catching the reissued token; waiting for another accepted write would last until
	// MaxHold.
	Writes int
	// Client, when Targeted, is the only client the fault may strike (a random
	// schedule's pick); otherwise the first client to reach Point is struck.
	Client   int
	Targeted bool
	// AnyPoint strikes at whichever pause point the client reaches first.
	AnyPoint bool
	// Deadline, if positive, disarms the fault if it has not struck by then (run time).
	Deadline time.Duration
	// Exclusive: the moment another client's write ends the fault (after MinHold), every
	// other client's links stall until the struck client's next write has returned (at
	// most ExclusiveCap): the late write lands right after the write that ended the
	// fault, before any other request — the worst moment, on every run and every load.
	Exclusive bool
	// CrashProcess kills the struck client's own process (harness.CrashableProcess) with
	// SIGKILL instead of stopping it, and starts a fresh one at once; the worker is
	// stopped as in a pause and writes with its old token when the fault heals.
	CrashProcess bool
	// Stall stops only the worker (StopWorker): a lock client that is a process of its
	// own keeps running, as an in-process lock library's goroutines, timers and loss
	// watchers always do.
	Stall bool
	// NoLinks leaves the struck client's links alone (a fault that only rides on the
	// strike's timing, like a node fault in a random schedule).
	NoLinks bool
	// With are faults on other parts of the system (the lock service's leader, a node)
	// started when this fault strikes and healed, in reverse order, when it heals.
	With []Action
}

// Action is a fault on something other than the struck client.
type Action struct {
	// Kind is recorded in the history ("leader-isolation", "node-pause", "crash").
	Kind string
	// Start injects the fault and says what it hit. n gives it the clients' links and
	// the history so far; client is the client the fault struck.
	Start func(ctx context.Context, n *Nemesis, client int) (target, detail string, err error)
	// Heal undoes it; nil if nothing needs undoing (a crash that already restarted).
	Heal func(ctx context.Context) error
	// Signalled, if set, says after a successful Start which signal it sent to which
	// of the service's processes ("" when it sent none); the history records them with
	// the fault (history.Fault's Signal and PIDs).
	Signalled func() (signal string, pids []int)
}

// Validate checks the fault's settings.
func (f ClientFault) Validate() error {
	switch {
	case f.Kind == "":
		return fmt.Errorf("nemesis: fault without a kind")
	case f.Point == "" && !f.AnyPoint:
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

	mu    sync.Mutex
	links map[int][]Link // every link of a client
	lock  map[int][]Link // its links to the lock service
	// procs are the clients whose lock client is a process of its own: a pause stops it.
	procs  map[int]harness.PausableProcess
	crash  map[int]harness.CrashableProcess
	fired  []bool
	active map[*strike]struct{}
	// strikes are every strike still watching writes (active ones, and healed
	// Exclusive ones waiting for the struck client's write).
	strikes map[*strike]struct{}
	healed  bool
	// grants counts the acquires answered OK so far (ArmGrants).
	grants int
	wg     sync.WaitGroup
}

// strike is one firing of a fault.
type strike struct {
	client int
	// start is when it struck (run time); only writes called after it can end it, so a
	// slow write from an earlier critical section does not count.
	start int64
	// otherWrite is closed when a client other than the target has a write accepted;
	// nextWrite when that happens after MinHold (an exclusive strike waits for this one,
	// so the other clients are stopped at the very moment of a write, never mid-way
	// between a read and a write).
	otherWrite chan struct{}
	nextWrite  chan struct{}
	nextOnce   sync.Once
	once       sync.Once
	// firstOther and nextOp are the writes that closed otherWrite and nextWrite, so the
	// fault's detail can name the write that ended it.
	firstOther, nextOp history.Op
	// writes is how many writes of other clients end it (ClientFault.Writes, at least
	// 1); counted how many have returned since it struck.
	writes, counted int
	// heal is closed to end the fault early (the run is ending).
	heal chan struct{}
	// ownWrite is closed when the struck client's first write after the heal returns
	// (ownOp).
	ownWrite chan struct{}
	ownOnce  sync.Once
	ownOp    history.Op
	healed   bool
	// exclusive strikes stall the other clients' links the moment the write that ends
	// them is accepted (once minPassed), so no other request slips in before the struck
	// client's late one; others are those links.
	exclusive bool
	minPassed bool
	others    []Link
}

// ExclusiveCap bounds how long an Exclusive fault holds the other clients after it heals.
const ExclusiveCap = 2 * time.Second

// New returns a nemesis that will fire each fault once, recording into rec.
func New(rec *history.Recorder, faults ...ClientFault) (*Nemesis, error) {
	for _, f := range faults {
		if err := f.Validate(); err != nil {
			return nil, err
		}
	}
	n := &Nemesis{rec: rec, faults: faults, links: map[int][]Link{}, lock: map[int][]Link{}, procs: map[int]harness.PausableProcess{}, crash: map[int]harness.CrashableProcess{}, fired: make([]bool, len(faults)), active: map[*strike]struct{}{}, strikes: map[*strike]struct{}{}}
	rec.Watch(n.observe)
	return n, nil
}

// AddLinks registers links that belong to client; toLock marks its links to the lock
// service (a partition cuts only those).
func (n *Nemesis) AddLinks(client int, toLock bool, links ...Link) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.links[client] = append(n.links[client], links...)
	if toLock {
		n.lock[client] = append(n.lock[client], links...)
	}
}

// AddLocker registers client's lock client; one that is a process of its own
// (harness.PausableProcess) is stopped with SIGSTOP while the client is paused.
func (n *Nemesis) AddLocker(client int, l harness.Locker) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if p, ok := l.(harness.PausableProcess); ok {
		n.procs[client] = p
	}
	if c, ok := l.(harness.CrashableProcess); ok {
		n.crash[client] = c
	}
}

// NodeLinks returns every client's link to lock-service node i (the i-th of the
// backend's endpoints), so a node pause can stall its client traffic too.
func (n *Nemesis) NodeLinks(i int) []Link {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []Link
	for _, ls := range n.lock {
		if i < len(ls) {
			out = append(out, ls[i])
		}
	}
	return out
}

// History returns the ops and faults recorded so far.
func (n *Nemesis) History() *history.History { return n.rec.History(history.Run{}) }

// Gate returns the pause gate for a client's worker.
func (n *Nemesis) Gate(client int) harness.Gate { return gate{n: n, client: client} }

type gate struct {
	n      *Nemesis
	client int
}

func (g gate) Pause(ctx context.Context, p harness.PausePoint) { g.n.pause(ctx, g.client, p) }

func (n *Nemesis) observe(op history.Op) {
	if op.Kind == history.Acquire && op.Status == history.OK {
		n.mu.Lock()
		n.grants++
		n.mu.Unlock()
		return
	}
	if op.Kind != history.Write {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for s := range n.strikes {
		other := s.client != op.Client && op.Call > s.start
		switch {
		case other && (op.Status == history.OK || op.Status == history.Rejected && s.writes > 1 && s.counted > 0):
			s.counted++
			ends := s.minPassed && s.counted >= s.writes
			if s.exclusive && ends && s.others == nil && !n.healed {
				// Synchronously, before the writer can send anything else.
				s.others = n.otherLinksLocked(s.client)
				for _, l := range s.others {
					l.Stall()
				}
			}
			if op.Status == history.OK {
				s.once.Do(func() {
					s.firstOther = op
					close(s.otherWrite)
				})
			}
			if ends {
				s.nextOnce.Do(func() {
					s.nextOp = op
					close(s.nextWrite)
				})
			}
		case s.client == op.Client && s.healed:
			s.ownOnce.Do(func() {
				s.ownOp = op
				close(s.ownWrite)
			})
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
		if !n.fired[i] && (f.AnyPoint || f.Point == p) && now >= f.ArmAfter && n.grants >= f.ArmGrants &&
			(f.Deadline <= 0 || now < f.Deadline) && (!f.Targeted || f.Client == client) {
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
	fi := n.rec.FaultStart(f.Kind, fmt.Sprintf("client-%d", client), startDetail(f, client, p))
	// The strike starts when the fault is recorded to, so every write that can end it
	// was called inside the recorded interval.
	s := &strike{client: client, start: n.rec.Fault(fi).Start, otherWrite: make(chan struct{}), nextWrite: make(chan struct{}), heal: make(chan struct{}), ownWrite: make(chan struct{}), exclusive: f.Exclusive, writes: max(f.Writes, 1)}
	n.active[s] = struct{}{}
	n.strikes[s] = struct{}{}
	links := append([]Link(nil), n.links[client]...)
	switch {
	case f.NoLinks:
		links = nil
	case f.Partition:
		links = append([]Link(nil), n.lock[client]...)
	}
	// A GC-like pause stops the client's own process too (not a partition or a delayed
	// write: there the process goes on and should notice on its own).
	var pp harness.PausableProcess
	var cp harness.CrashableProcess
	switch {
	case f.CrashProcess:
		cp = n.crash[client]
	case f.StopWorker && !f.Partition && !f.NoLinks && !f.Stall:
		pp = n.procs[client]
	}
	_, ownProcess := n.procs[client]
	n.wg.Add(1)
	n.mu.Unlock()

	var resumed string // the process's own note at the heal
	stoppedAt, pid := time.Time{}, 0
	if pp != nil {
		var err error
		pid, err = pp.PauseProcess()
		stoppedAt = time.Now()
		if err != nil {
			n.rec.FaultDetail(fi, fmt.Sprintf("SIGSTOP to its process group %d failed: %v", pid, err))
			pp = nil
		} else {
			n.rec.FaultDetail(fi, fmt.Sprintf("its process group %d stopped with SIGSTOP", pid))
		}
	}
	switch {
	case !f.StopWorker || f.Partition || f.NoLinks || f.CrashProcess:
	case f.Stall && ownProcess:
		n.rec.FaultDetail(fi, "a stall: only its worker goroutine is blocked, its lock client process keeps running")
	case f.Stall:
		n.rec.FaultDetail(fi, "a stall: only its worker goroutine is blocked, its lock library's goroutines, timers and keep-alives keep running inside fencecheck")
	case pp == nil:
		n.rec.FaultDetail(fi, "its lock client runs inside fencecheck, so only its worker goroutine is blocked (its lock library keeps running, as in a stall)")
	}
	if f.CrashProcess {
		if cp == nil {
			n.rec.FaultDetail(fi, "it has no process of its own to crash")
		} else if oldPID, newPID, err := cp.CrashProcess(ctx); err != nil {
			n.rec.FaultDetail(fi, fmt.Sprintf("crashing its process %d failed: %v", oldPID, err))
		} else {
			n.rec.FaultDetail(fi, fmt.Sprintf("its process group %d killed with SIGKILL (the lease it held died with it) and a fresh process %d started", oldPID, newPID))
		}
	}
	for _, l := range links {
		if f.Partition && !f.Silent {
			l.Blackhole()
		} else {
			l.Stall()
		}
	}
	heals := n.startActions(ctx, f.With, client)
	hold := func() {
		defer n.wg.Done()
		why := n.wait(ctx, f, s)
		for i := len(heals) - 1; i >= 0; i-- {
			heals[i]()
		}
		n.mu.Lock()
		others := s.others
		if f.Exclusive && others == nil && !n.healed {
			// The fault ended otherwise (at MaxHold, or the write came before MinHold).
			others = n.otherLinksLocked(client)
			for _, l := range others {
				l.Stall()
			}
		}
		s.healed = true
		n.mu.Unlock()
		if pp != nil {
			// Measured before the SIGCONT, so the length said is never longer than the
			// process was stopped, however late this goroutine runs after the signal.
			stopped := time.Since(stoppedAt)
			if err := pp.ResumeProcess(); err != nil {
				resumed = fmt.Sprintf("; SIGCONT to process group %d failed: %v", pid, err)
			} else {
				resumed = fmt.Sprintf("; process group %d continued with SIGCONT after %.2f s stopped", pid, stopped.Seconds())
			}
		}
		// The fault ends before its links pass, so nothing the heal lets through falls
		// inside it, and its note is written from the ops recorded by then.
		n.rec.FaultEndNote(fi, func(rf history.Fault, ops []history.Op) string {
			return why + resumed + "; " + acceptedNote(rf, client, ops)
		})
		for _, l := range links {
			l.Pass()
		}
		n.mu.Lock()
		delete(n.active, s)
		n.mu.Unlock()
		if len(others) > 0 {
			n.wg.Add(1)
			go func() {
				defer n.wg.Done()
				note := n.holdOthers(s, client)
				for _, l := range others {
					l.Pass()
				}
				n.mu.Lock()
				delete(n.strikes, s)
				n.mu.Unlock()
				n.rec.FaultEnd(fi, note)
			}()
		} else {
			n.mu.Lock()
			delete(n.strikes, s)
			n.mu.Unlock()
		}
	}
	if f.StopWorker {
		hold()
		return
	}
	go hold()
}

// startDetail says what a fault did to the client it struck at p.
func startDetail(f ClientFault, client int, p harness.PausePoint) string {
	switch {
	case f.NoLinks:
		return fmt.Sprintf("struck when client %d reached %s", client, p)
	case f.Partition && f.Silent && f.StopWorker:
		return fmt.Sprintf("client %d's links to the lock service went silent at %s (bytes held both ways, no FIN or RST, connections left open, and it can still reach the resource), and stopped there", client, p)
	case f.Partition && f.Silent:
		return fmt.Sprintf("client %d's links to the lock service went silent at %s (bytes held both ways, no FIN or RST, connections left open, and it can still reach the resource), and carries on", client, p)
	case f.Partition && f.StopWorker:
		return fmt.Sprintf("client %d cut off from the lock service at %s (it can still reach the resource), and stopped there", client, p)
	case f.Partition:
		return fmt.Sprintf("client %d cut off from the lock service at %s (it can still reach the resource), and carries on", client, p)
	case f.StopWorker:
		return fmt.Sprintf("client %d stopped at %s, all its links stalled", client, p)
	default:
		return fmt.Sprintf("client %d's request at %s held in the network", client, p)
	}
}

// acceptedNote says which writes of clients other than the struck one were accepted
// while fault f was in force: what a reader checks the fault against.
func acceptedNote(f history.Fault, client int, ops []history.Op) string {
	var first *history.Op
	n := 0
	for i := range ops {
		o := &ops[i]
		if o.Kind != history.Write || o.Client == client || o.Status != history.OK || o.Return == nil ||
			*o.Return < f.Start || *o.Return > *f.End {
			continue
		}
		n++
		if first == nil || *o.Return < *first.Return {
			first = o
		}
	}
	switch n {
	case 0:
		return "no other client's write was accepted during it"
	case 1:
		return fmt.Sprintf("1 write by another client was accepted during it: client %d's write #%d at %s", first.Client, first.ID, history.Seconds(*first.Return))
	}
	return fmt.Sprintf("%d writes by other clients were accepted during it, the first client %d's write #%d at %s", n, first.Client, first.ID, history.Seconds(*first.Return))
}

// holdOthers keeps an Exclusive strike's other clients held until the struck client's
// next write returns, at most ExclusiveCap, and says how it went.
func (n *Nemesis) holdOthers(s *strike, client int) string {
	t := time.NewTimer(ExclusiveCap)
	defer t.Stop()
	select {
	case <-s.ownWrite:
	case <-t.C:
		return fmt.Sprintf("the other clients were held for %s, the cap, waiting for client %d's next write", history.Seconds(int64(ExclusiveCap)), client)
	case <-s.heal:
		select {
		case <-s.ownWrite:
		default:
			return "the other clients were held until the run ended"
		}
	}
	o := s.ownOp
	if o.Return == nil {
		return fmt.Sprintf("the other clients were held until client %d's write #%d gave up, its outcome unknown", client, o.ID)
	}
	return fmt.Sprintf("the other clients were held until client %d's write #%d returned at %s", client, o.ID, history.Seconds(*o.Return))
}

// startActions starts each action, recording it as a fault of its own, and returns the
// functions that heal them. A failed action is recorded with its error, not hidden.
func (n *Nemesis) startActions(ctx context.Context, actions []Action, client int) []func() {
	var heals []func()
	for _, a := range actions {
		// The fault began when its action did: a crash's SIGKILL comes before the
		// restart that Start also waits for.
		at := n.rec.Now()
		target, detail, err := a.Start(ctx, n, client)
		if err != nil {
			fi := n.rec.FaultStartAt(at, a.Kind, target, "failed to start: "+err.Error())
			n.rec.FaultEnd(fi, "")
			continue
		}
		fi := n.rec.FaultStartAt(at, a.Kind, target, detail)
		if a.Signalled != nil {
			if sig, pids := a.Signalled(); sig != "" {
				n.rec.FaultSignal(fi, sig, pids)
			}
		}
		heal := a.Heal
		heals = append(heals, func() {
			// Healing must work even after the run's context ended.
			hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			extra := ""
			if heal != nil {
				if err := heal(hctx); err != nil {
					extra = "heal failed: " + err.Error()
				}
			}
			n.rec.FaultEnd(fi, extra)
		})
	}
	return heals
}

// wait holds a strike for at least MinHold and until another client's write is accepted,
// but no longer than MaxHold. It returns why the strike ended, for the fault's detail;
// each reason is true of the history whichever of two ready channels select picks.
func (n *Nemesis) wait(ctx context.Context, f ClientFault, s *strike) string {
	const early = "healed early: the run ended"
	minT := time.NewTimer(f.MinHold)
	defer minT.Stop()
	maxT := time.NewTimer(f.MaxHold)
	defer maxT.Stop()
	select {
	case <-minT.C:
	case <-s.heal:
		return early
	case <-ctx.Done():
		return early
	}
	if f.MaxHold == f.MinHold {
		// A fixed hold (a random schedule's): it ends on its timer whatever was written.
		return fmt.Sprintf("healed after its %s hold", history.Seconds(int64(f.MinHold)))
	}
	if !s.exclusive && s.writes == 1 {
		select {
		case <-s.otherWrite:
			return fmt.Sprintf("healed at the end of its %s minimum hold", history.Seconds(int64(f.MinHold)))
		default:
		}
	}
	n.mu.Lock()
	s.minPassed = true
	n.mu.Unlock()
	trigger, op := s.otherWrite, &s.firstOther
	if s.exclusive || s.writes > 1 {
		trigger, op = s.nextWrite, &s.nextOp
	}
	select {
	case <-trigger:
		// op (and firstOther, before it) was set before trigger closed.
		if op.Status == history.Rejected {
			return fmt.Sprintf("healed when client %d's write #%d was refused at %s, after client %d's write #%d was accepted at %s",
				op.Client, op.ID, history.Seconds(op.End()), s.firstOther.Client, s.firstOther.ID, history.Seconds(s.firstOther.End()))
		}
		return fmt.Sprintf("healed when client %d's write #%d was accepted at %s", op.Client, op.ID, history.Seconds(op.End()))
	case <-maxT.C:
		return fmt.Sprintf("healed at its %s limit", history.Seconds(int64(f.MaxHold)))
	case <-s.heal:
		return early
	case <-ctx.Done():
		return early
	}
}

// otherLinksLocked returns every link of every client but one. n.mu is held.
func (n *Nemesis) otherLinksLocked(client int) []Link {
	var out []Link
	for c, ls := range n.links {
		if c != client {
			out = append(out, ls...)
		}
	}
	return out
}

// Active reports whether any fault is in force.
func (n *Nemesis) Active() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.active) > 0
}

// Pending reports whether some fault has not fired yet (and can still fire).
func (n *Nemesis) Pending() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	now := time.Duration(n.rec.Now())
	for i, fired := range n.fired {
		if !fired && (n.faults[i].Deadline <= 0 || now < n.faults[i].Deadline) {
			return true
		}
	}
	return false
}

// Heal ends every active fault, disarms the rest, and waits until all links pass.
func (n *Nemesis) Heal() {
	n.mu.Lock()
	n.healed = true
	for s := range n.strikes {
		select {
		case <-s.heal:
		default:
			close(s.heal)
		}
	}
	n.mu.Unlock()
	n.wg.Wait()
}
