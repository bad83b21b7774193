// Package reporttest makes synthetic histories for tests of the reports and the CLI: a
// register protected by a lease lock, a GC-like pause of the holder longer than the TTL,
// and its stale write afterwards — accepted by an unfenced register, rejected by a fenced
// one. Histories of any size, so that a 10,000-op report can be tested without a
// 40-second run.
package reporttest

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/harness/nemesis/faults"
)

// Options shape a synthetic history.
type Options struct {
	// Ops is about how many ops to make (at least 40).
	Ops int
	// Fenced: the register refuses the stale write (else it accepts it).
	Fenced bool
	// Scenario is recorded in run.scenario.
	Scenario string
	// Evil puts HTML and script into every free-text field, for escaping tests.
	Evil bool
	// NodeFault adds a fault on lock-service node 1 during the pause.
	NodeFault bool
}

// Evil is the text Options.Evil puts into free-text fields.
const Evil = `<script>window.pwned=1</script><img src=x onerror="window.pwned=2">`

// History makes the history. It is valid and deterministic.
func History(o Options) *history.History {
	const clients = 3
	ttl := 500 * time.Millisecond
	rng := rand.New(rand.NewPCG(7, uint64(o.Ops)))
	h := &history.History{Format: history.Format, Run: history.Run{
		Scenario: o.Scenario, Backend: "naive", Resource: "unfenced", Fence: history.FenceStrict, Seed: 7, TTLms: ttl.Milliseconds(),
		Faults: []string{faults.Pause}, Extra: map[string]any{"clients": clients, "synthetic": true},
	}}
	if o.Fenced {
		h.Run.Resource = "fenced"
	}
	if o.Evil {
		h.Run.Extra["note"] = Evil
	}
	var (
		t       int64 = 1_000_000
		id      int
		token   int64
		stored  int64
		value   string
		writeNo int
	)
	ret := func(v int64) *int64 { return &v }
	add := func(op history.Op) int {
		id++
		op.ID = id
		h.Ops = append(h.Ops, op)
		return id
	}
	step := func() int64 { return int64(200_000 + rng.IntN(600_000)) } // 0.2–0.8 ms
	newValue := func(c int) string {
		writeNo++
		v := fmt.Sprintf("c%d-%d", c, writeNo)
		if o.Evil && writeNo == 3 {
			v = Evil
		}
		return v
	}
	write := func(c int, tok int64, readID int, at int64) (int64, bool) {
		v := newValue(c)
		end := at + step()
		rid := readID
		ok := !o.Fenced || tok > stored
		st := history.Rejected
		if ok {
			st, stored, value = history.OK, tok, v
		}
		add(history.Op{Client: c, Kind: history.Write, Call: at, Return: ret(end), Status: st, Token: tok, Value: v, ReadID: &rid})
		return end, ok
	}
	// section runs one whole critical section of client c from time t.
	section := func(c int) {
		token++
		tok := token
		a := t + step()
		add(history.Op{Client: c, Kind: history.Acquire, Call: t, Return: ret(a), Status: history.OK, Token: tok})
		r := a + step()
		rid := add(history.Op{Client: c, Kind: history.Read, Call: a + 50_000, Return: ret(r), Status: history.OK, Token: stored, Value: value})
		w, _ := write(c, tok, rid, r+50_000)
		add(history.Op{Client: c, Kind: history.Release, Call: w + 50_000, Return: ret(w + step()), Status: history.OK, Token: tok})
		t = w + 2*step()
	}
	target := max(o.Ops, 40)
	pauseAt := target * 2 / 5
	for len(h.Ops) < pauseAt {
		section(rng.IntN(clients))
	}

	// Client 0 takes the lock, reads, and pauses for longer than the TTL.
	token++
	pTok := token
	a := t + step()
	add(history.Op{Client: 0, Kind: history.Acquire, Call: t, Return: ret(a), Status: history.OK, Token: pTok})
	r := a + step()
	pRead := add(history.Op{Client: 0, Kind: history.Read, Call: a + 50_000, Return: ret(r), Status: history.OK, Token: stored, Value: value})
	pauseStart := r + 10_000
	pauseEnd := pauseStart + int64(2*ttl) + int64(200*time.Millisecond)
	detail := "client 0 stopped at after-read, all its links stalled; another client's write was accepted meanwhile"
	if o.Evil {
		detail = Evil
	}
	h.Faults = append(h.Faults, history.Fault{Kind: faults.Pause, Target: "client-0", Start: pauseStart, End: ret(pauseEnd), Detail: detail})
	if o.NodeFault {
		h.Faults = append(h.Faults, history.Fault{Kind: faults.NodePause, Target: "node-1", Start: pauseStart + int64(50*time.Millisecond), End: ret(pauseStart + int64(ttl)), Detail: "leader node 1 paused"})
	}
	// Another client waits for the lease to expire, then the others go on.
	t = pauseStart + 1000
	token++
	tok := token
	add(history.Op{Client: 1, Kind: history.Acquire, Call: t, Return: ret(a + int64(ttl) + 1000), Status: history.OK, Token: tok})
	t = a + int64(ttl) + 2000
	r1 := t + step()
	rid := add(history.Op{Client: 1, Kind: history.Read, Call: t, Return: ret(r1), Status: history.OK, Token: stored, Value: value})
	w1, _ := write(1, tok, rid, r1+50_000)
	add(history.Op{Client: 1, Kind: history.Release, Call: w1 + 50_000, Return: ret(w1 + step()), Status: history.OK, Token: tok})
	t = w1 + 2*step()
	for t < pauseEnd {
		section(1 + rng.IntN(clients-1))
	}
	// The paused client wakes up and writes with its old token.
	t = max(t, pauseEnd) + 1000
	w0, _ := write(0, pTok, pRead, t)
	add(history.Op{Client: 0, Kind: history.Release, Call: w0 + 50_000, Return: ret(w0 + step()), Status: history.OK, Token: pTok})
	t = w0 + 2*step()

	// One write that never returned, then the run goes on.
	token++
	uTok := token
	ua := t + step()
	add(history.Op{Client: 2, Kind: history.Acquire, Call: t, Return: ret(ua), Status: history.OK, Token: uTok})
	ur := ua + step()
	urid := add(history.Op{Client: 2, Kind: history.Read, Call: ua + 50_000, Return: ret(ur), Status: history.OK, Token: stored, Value: value})
	errText := "request timed out after 3s: the write may or may not have taken effect"
	if o.Evil {
		errText = Evil
	}
	add(history.Op{Client: 2, Kind: history.Write, Call: ur + 50_000, Status: history.Unknown, Token: uTok, Value: newValue(2), ReadID: &urid, Error: errText})
	add(history.Op{Client: 2, Kind: history.Release, Call: ur + 3_000_000, Return: ret(ur + 3_500_000), Status: history.OK, Token: uTok})
	t = ur + 4_000_000

	for len(h.Ops) < target-clients {
		section(rng.IntN(clients))
	}
	// Final reads.
	for c := range clients {
		add(history.Op{Client: c, Kind: history.Read, Call: t, Return: ret(t + step()), Status: history.OK, Token: stored, Value: value})
		t += 1000
	}
	return h
}
