// Package nemesistest checks, for tests, that what the nemesis wrote in a fault's detail
// is true of the ops in the same history. A detail is evidence a reader trusts: every
// clause the nemesis writes about a client fault must be one this package understands
// and can check against the ops, so a new or reworded clause fails the tests until it
// is checked here too.
package nemesistest

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/fencecheck/fencecheck/harness/history"
)

// The clauses of a client fault's detail, joined by "; ": one start clause, one heal
// clause, one accepted-writes clause, and for an exclusive fault one held clause.
var (
	secs = `(\d+\.\d\d s)`

	startStopped    = regexp.MustCompile(`^client (\d+) stopped at ([a-z-]+), all its links stalled$`)
	startCutStop    = regexp.MustCompile(`^client (\d+) cut off from the lock service at ([a-z-]+) \(it can still reach the resource\), and stopped there$`)
	startCutGo      = regexp.MustCompile(`^client (\d+) cut off from the lock service at ([a-z-]+) \(it can still reach the resource\), and carries on$`)
	startSilentStop = regexp.MustCompile(`^client (\d+)'s links to the lock service went silent at ([a-z-]+) \(bytes held both ways, no FIN or RST, connections left open, and it can still reach the resource\), and stopped there$`)
	startSilentGo   = regexp.MustCompile(`^client (\d+)'s links to the lock service went silent at ([a-z-]+) \(bytes held both ways, no FIN or RST, connections left open, and it can still reach the resource\), and carries on$`)
	startHeld       = regexp.MustCompile(`^client (\d+)'s request at ([a-z-]+) held in the network$`)
	startStruck     = regexp.MustCompile(`^struck when client (\d+) reached ([a-z-]+)$`)
	healEarly       = regexp.MustCompile(`^healed early: the run ended$`)
	healTimed       = regexp.MustCompile(`^healed (?:after its ` + secs + ` hold|at the end of its ` + secs + ` minimum hold|at its ` + secs + ` limit)$`)
	healWrite       = regexp.MustCompile(`^healed when client (\d+)'s write #(\d+) was accepted at ` + secs + `$`)
	healRefused     = regexp.MustCompile(`^healed when client (\d+)'s write #(\d+) was refused at ` + secs + `, after client (\d+)'s write #(\d+) was accepted at ` + secs + `$`)
	acceptedNone    = regexp.MustCompile(`^no other client's write was accepted during it$`)
	acceptedOne     = regexp.MustCompile(`^1 write by another client was accepted during it: client (\d+)'s write #(\d+) at ` + secs + `$`)
	acceptedMany    = regexp.MustCompile(`^(\d+) writes by other clients were accepted during it, the first client (\d+)'s write #(\d+) at ` + secs + `$`)
	heldUntilWrite  = regexp.MustCompile(`^the other clients were held until client (\d+)'s write #(\d+) returned at ` + secs + `$`)
	heldGaveUp      = regexp.MustCompile(`^the other clients were held until client (\d+)'s write #(\d+) gave up, its outcome unknown$`)
	heldCap         = regexp.MustCompile(`^the other clients were held for ` + secs + `, the cap, waiting for client (\d+)'s next write$`)
	heldEnd         = regexp.MustCompile(`^the other clients were held until the run ended$`)
	// A client that is a process of its own (harness.PausableProcess, CrashableProcess):
	// what was done to the process. PIDs are not in the ops; the stop and the continue
	// must name the same group, and the time stopped must fit in the fault.
	procStopped = regexp.MustCompile(`^its process group (\d+) stopped with SIGSTOP$`)
	procCont    = regexp.MustCompile(`^process group (\d+) continued with SIGCONT after ` + secs + ` stopped$`)
	// An action on a client's own clock (a lock service whose expiry is read from its
	// clients' clocks: the skew of the next taker's): what was done to the clock, which
	// the ops do not show. The detail is that one clause.
	clientClock = regexp.MustCompile(`^client-(\d+)'s clock runs ([\d.]+)x fast \(its leases expire ([\d.]+)x early in real time\)$`)
	// How the worker alone was stopped: a stall (whatever the lock client is), or a pause
	// of a lock client that runs inside fencecheck. Neither names a process: there is
	// nothing in the ops to check them against but that the fault stopped its worker.
	workerOnly = regexp.MustCompile(`^(?:a stall: only its worker goroutine is blocked, its lock (?:client process keeps running|library's goroutines, timers and keep-alives keep running inside fencecheck)|its lock client runs inside fencecheck, so only its worker goroutine is blocked \(its lock library keeps running, as in a stall\))$`)
	procKilled = regexp.MustCompile(`^its process group (\d+) killed with SIGKILL \(the lease it held died with it\) and a fresh process (\d+) started$`)
)

// Check compares the detail of every fault on a client ("client-N") with the ops of h
// and returns how many clauses it checked and every disagreement, one sentence each.
// Faults on the lock service (a node, "lock server") describe what was done to it, not
// the ops, and are left out; so is, but for its client's number, an action on a
// client's clock.
func Check(h *history.History) (clauses int, problems []string) {
	byID := make(map[int]history.Op, len(h.Ops))
	for _, o := range h.Ops {
		byID[o.ID] = o
	}
	for i, f := range h.Faults {
		c, ok := strings.CutPrefix(f.Target, "client-")
		if !ok {
			continue
		}
		client, err := strconv.Atoi(c)
		if err != nil {
			problems = append(problems, fmt.Sprintf("fault %d: target %q is not client-N", i, f.Target))
			continue
		}
		fc := faultCheck{h: h, byID: byID, f: f, client: client}
		fc.check()
		clauses += fc.clauses
		for _, p := range fc.problems {
			problems = append(problems, fmt.Sprintf("fault %d (%s on %s from %s): %s", i, f.Kind, f.Target, history.Seconds(f.Start), p))
		}
	}
	return clauses, problems
}

type faultCheck struct {
	h        *history.History
	byID     map[int]history.Op
	f        history.Fault
	client   int
	clauses  int
	problems []string
	// stoppedPID is the process group a pause stopped ("" if none).
	stoppedPID string
}

func (c *faultCheck) fail(format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
}

func (c *faultCheck) check() {
	if c.f.End == nil {
		c.fail("never healed")
		return
	}
	if m := clientClock.FindStringSubmatch(c.f.Detail); m != nil {
		c.clauses++
		if atoi(m[1]) != c.client || m[2] != m[3] {
			c.fail("%q is on fault target %s", c.f.Detail, c.f.Target)
		}
		return
	}
	parts := strings.Split(c.f.Detail, "; ")
	counts := map[string]int{}
	for i, p := range parts {
		kind := c.clause(p, i == 0)
		if kind == "" {
			c.fail("clause %q is not one this check understands", p)
			continue
		}
		c.clauses++
		counts[kind]++
	}
	for _, k := range []string{"start", "heal", "accepted"} {
		if counts[k] != 1 {
			c.fail("%d %s clauses in %q, want 1", counts[k], k, c.f.Detail)
		}
	}
	if c.stoppedPID != "" && !strings.Contains(c.f.Detail, "continued with SIGCONT") {
		c.fail("process group %s was stopped and never continued: %q", c.stoppedPID, c.f.Detail)
	}
	if counts["held"] > 1 {
		c.fail("%d held clauses in %q, want at most 1", counts["held"], c.f.Detail)
	}
}

// clause checks one clause and returns its kind, or "" if it is not understood.
func (c *faultCheck) clause(p string, first bool) string {
	if first {
		for _, re := range []*regexp.Regexp{startStopped, startCutStop, startCutGo, startSilentStop, startSilentGo, startHeld, startStruck} {
			if m := re.FindStringSubmatch(p); m != nil {
				c.start(atoi(m[1]), m[2], re == startStopped || re == startCutStop || re == startSilentStop)
				return "start"
			}
		}
		return ""
	}
	switch m := healTimed.FindStringSubmatch(p); {
	case healEarly.MatchString(p):
		return "heal"
	case m != nil:
		d := parseSeconds(m[1] + m[2] + m[3])
		// The hold's timer starts after the fault is recorded, and the printed figure is
		// rounded to 10 ms.
		if got := *c.f.End - c.f.Start; got < d-5e6 {
			c.fail("%q, but the fault lasted %s", p, history.Seconds(got))
		}
		return "heal"
	}
	if m := healWrite.FindStringSubmatch(p); m != nil {
		o := c.write(p, atoi(m[2]), atoi(m[1]), m[3])
		switch {
		case o == nil:
		case o.Client == c.client:
			c.fail("%q names the struck client's own write", p)
		case o.Status != history.OK:
			c.fail("%q, but op %d is %s", p, o.ID, o.Status)
		case o.Call < c.f.Start || *o.Return > *c.f.End:
			c.fail("%q, but op %d (called %s) is not inside the fault", p, o.ID, history.Seconds(o.Call))
		}
		return "heal"
	}
	if m := healRefused.FindStringSubmatch(p); m != nil {
		refused := c.write(p, atoi(m[2]), atoi(m[1]), m[3])
		accepted := c.write(p, atoi(m[5]), atoi(m[4]), m[6])
		for _, o := range []*history.Op{accepted, refused} {
			switch {
			case o == nil:
			case o.Client == c.client:
				c.fail("%q names the struck client's own write", p)
			case o.Call < c.f.Start || *o.Return > *c.f.End:
				c.fail("%q, but op %d (called %s) is not inside the fault", p, o.ID, history.Seconds(o.Call))
			}
		}
		switch {
		case refused != nil && refused.Status != history.Rejected:
			c.fail("%q, but op %d is %s", p, refused.ID, refused.Status)
		case accepted != nil && accepted.Status != history.OK:
			c.fail("%q, but op %d is %s", p, accepted.ID, accepted.Status)
		case refused != nil && accepted != nil && *accepted.Return > *refused.Return:
			c.fail("%q, but op %d returned after op %d", p, accepted.ID, refused.ID)
		}
		return "heal"
	}
	if acceptedNone.MatchString(p) {
		c.accepted(p, 0, nil)
		return "accepted"
	}
	if m := acceptedOne.FindStringSubmatch(p); m != nil {
		c.accepted(p, 1, c.write(p, atoi(m[2]), atoi(m[1]), m[3]))
		return "accepted"
	}
	if m := acceptedMany.FindStringSubmatch(p); m != nil {
		c.accepted(p, atoi(m[1]), c.write(p, atoi(m[3]), atoi(m[2]), m[4]))
		return "accepted"
	}
	if m := heldUntilWrite.FindStringSubmatch(p); m != nil {
		if o := c.write(p, atoi(m[2]), atoi(m[1]), m[3]); o != nil && o.Client != c.client {
			c.fail("%q names another client's write", p)
		}
		return "held"
	}
	if m := heldGaveUp.FindStringSubmatch(p); m != nil {
		o, ok := c.byID[atoi(m[2])]
		if !ok || o.Kind != history.Write || o.Client != c.client || o.Status != history.Unknown {
			c.fail("%q, but op %s is not an unknown write of client %d", p, m[2], c.client)
		}
		return "held"
	}
	if m := heldCap.FindStringSubmatch(p); m != nil {
		if atoi(m[2]) != c.client {
			c.fail("%q names another client than the struck one", p)
		}
		return "held"
	}
	if heldEnd.MatchString(p) {
		return "held"
	}
	return c.process(p)
}

// process checks a clause about the struck client's own process.
func (c *faultCheck) process(p string) string {
	if workerOnly.MatchString(p) {
		if c.stoppedPID != "" {
			c.fail("%q, but its process group %s was stopped", p, c.stoppedPID)
		}
		return "process"
	}
	if m := procStopped.FindStringSubmatch(p); m != nil {
		if c.stoppedPID != "" {
			c.fail("%q: the process was stopped twice", p)
		}
		c.stoppedPID = m[1]
		return "process"
	}
	if m := procCont.FindStringSubmatch(p); m != nil {
		if m[1] != c.stoppedPID {
			c.fail("%q, but the group stopped was %q", p, c.stoppedPID)
		}
		// Stopped after the fault's start and continued before its end (rounded to 10 ms).
		if d := parseSeconds(m[2]); d > *c.f.End-c.f.Start+5e6 {
			c.fail("%q, but the fault lasted %s", p, history.Seconds(*c.f.End-c.f.Start))
		}
		return "process"
	}
	if m := procKilled.FindStringSubmatch(p); m != nil {
		if m[1] == m[2] {
			c.fail("%q: the fresh process has the dead one's PID", p)
		}
		return "process"
	}
	return ""
}

// start checks the client named in the start clause and the pause point against the
// client's last op before the fault, and that a stopped client called nothing during it.
func (c *faultCheck) start(client int, point string, stopped bool) {
	if client != c.client {
		c.fail("the detail names client %d, the target is client %d", client, c.client)
	}
	var last *history.Op
	for i := range c.h.Ops {
		o := &c.h.Ops[i]
		if o.Client != c.client {
			continue
		}
		if o.Call < c.f.Start && (last == nil || o.Call >= last.Call) {
			last = o
		}
		if stopped && o.Call >= c.f.Start && o.Call <= *c.f.End {
			c.fail("client %d was said to be stopped, but called op %d at %s", c.client, o.ID, history.Seconds(o.Call))
		}
	}
	var want history.Kind
	switch point {
	case "after-acquire":
		want = history.Acquire
	case "after-read", "after-lease-check", "in-write":
		want = history.Read
	case "after-check":
		want = history.Write // the check-then-write resource checks inside the write call
	default:
		c.fail("unknown pause point %q", point)
		return
	}
	switch {
	case last == nil:
		c.fail("struck at %s, but client %d had called nothing before", point, c.client)
	case last.Kind != want:
		c.fail("struck at %s, but client %d's last op before it was %s #%d", point, c.client, last.Kind, last.ID)
	case want != history.Write && (last.Status != history.OK || *last.Return > c.f.Start):
		c.fail("struck at %s, but client %d's %s #%d had not returned ok by then", point, c.client, last.Kind, last.ID)
	}
}

// write looks up the write a clause names and checks its client and time; nil if it
// does not match (the problem is recorded).
func (c *faultCheck) write(p string, id, client int, at string) *history.Op {
	o, ok := c.byID[id]
	switch {
	case !ok:
		c.fail("%q: there is no op %d", p, id)
		return nil
	case o.Kind != history.Write || o.Client != client:
		c.fail("%q: op %d is client %d's %s", p, id, o.Client, o.Kind)
		return nil
	case o.Return == nil:
		c.fail("%q: op %d never returned", p, id)
		return nil
	case history.Seconds(*o.Return) != at:
		c.fail("%q: op %d returned at %s", p, id, history.Seconds(*o.Return))
		return nil
	}
	return &o
}

// accepted checks an accepted-writes clause: how many other clients' writes returned ok
// inside the fault, and which was first.
func (c *faultCheck) accepted(p string, n int, first *history.Op) {
	var got []history.Op
	var earliest *history.Op
	for i := range c.h.Ops {
		o := &c.h.Ops[i]
		if o.Kind == history.Write && o.Client != c.client && o.Status == history.OK && o.Return != nil &&
			*o.Return >= c.f.Start && *o.Return <= *c.f.End {
			got = append(got, *o)
			if earliest == nil || *o.Return < *earliest.Return {
				earliest = o
			}
		}
	}
	if len(got) != n {
		c.fail("%q, but %d writes by other clients were accepted between %s and %s", p, len(got), history.Seconds(c.f.Start), history.Seconds(*c.f.End))
		return
	}
	// Ties go to the op recorded first, as the nemesis breaks them.
	if n > 0 && first != nil && first.ID != earliest.ID {
		c.fail("%q, but the first was op %d at %s", p, earliest.ID, history.Seconds(*earliest.Return))
	}
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return n
}

// parseSeconds reads a figure printed by history.Seconds back into nanoseconds.
func parseSeconds(s string) int64 {
	f, err := strconv.ParseFloat(strings.TrimSuffix(s, " s"), 64)
	if err != nil {
		return -1
	}
	return int64(f * 1e9)
}
