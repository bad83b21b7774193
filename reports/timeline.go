package reports

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/models"
)

// The timeline's data, embedded in report.html as JSON and drawn by timeline.js. Ops are
// arrays, not objects, to keep a 10,000-op report small.

// Op kinds and statuses as the script numbers them.
var (
	kindCodes   = map[history.Kind]int{history.Acquire: 0, history.Release: 1, history.Read: 2, history.Write: 3}
	statusCodes = map[history.Status]int{history.OK: 0, history.Fail: 1, history.Unknown: 2, history.Rejected: 3}
)

// statusStale marks a write that was accepted although it was stale: the one that matters.
const statusStale = 4

type tlLane struct {
	ID    string `json:"id"`
	Label string `json:"label"`
	// Kind is "client" or "node".
	Kind string `json:"kind"`
}

type tlFault struct {
	Lane   int    `json:"lane"` // -1: not a lane of its own
	Start  int64  `json:"start"`
	End    int64  `json:"end"` // -1: never healed
	Kind   string `json:"kind"`
	Target string `json:"target"`
	Detail string `json:"detail"`
}

type tlBelief struct {
	Lane  int   `json:"lane"`
	Start int64 `json:"start"`
	End   int64 `json:"end"`
	// Open: no release; the client believed until the end of the history.
	Open  bool  `json:"open,omitempty"`
	Acq   int   `json:"acq"`
	Rel   int   `json:"rel,omitempty"`
	Token int64 `json:"token"`
}

// tlPair is a conflicting pair of writes: a stale write and the newer write it overtook
// (or was refused because of), or a lost update and the write whose update it lost.
type tlPair struct {
	// Kind: "stale" (accepted stale write), "fenced" (rejected stale write), "lost".
	Kind string `json:"kind"`
	A    int    `json:"a"` // the stale write / the write that lost an update
	B    int    `json:"b"` // the newer write / the write whose update was lost (0: none)
	Text string `json:"text"`
}

// tlLost is a lost record: when a client's lock client told it the lease was gone.
type tlLost struct {
	Lane   int    `json:"lane"`
	At     int64  `json:"at"`
	Acq    int    `json:"acq"`
	Token  int64  `json:"token"`
	Reason string `json:"reason,omitempty"`
}

type timelineData struct {
	// Start (0, the run's start) and End (its last event) bound the timeline: the
	// script never shows a view outside them.
	Start  int64      `json:"start"`
	End    int64      `json:"end"`
	Lanes  []tlLane   `json:"lanes"`
	Ops    [][]any    `json:"ops"` // [id, lane, kind, call, return (-1 unknown), status, token, value, read_id, error]
	Faults []tlFault  `json:"faults"`
	Belief []tlBelief `json:"beliefs"`
	// Lost are the history's lost records, each on its client's lane.
	Lost []tlLost `json:"lost"`
	// Gaps are the intervals in which at least two clients believed they held the lock.
	Gaps  [][2]int64 `json:"gaps"`
	Pairs []tlPair   `json:"pairs"`
	// Focus is the index in Pairs the report opens on (-1: none).
	Focus int   `json:"focus"`
	TTL   int64 `json:"ttl"`
}

// belief is a client's belief that it holds the lock: from its ok acquire's return to
// its release's call (or the end of the history).
type belief struct {
	client     int
	start, end int64
	open       bool
	acq, rel   *history.Op
}

// beliefs pairs each client's ok acquires with its next release, as the mutex model does.
func beliefs(h *history.History) []belief {
	end := h.LastTime()
	byClient := map[int][]*history.Op{}
	for i := range h.Ops {
		if o := &h.Ops[i]; o.Kind == history.Acquire || o.Kind == history.Release {
			byClient[o.Client] = append(byClient[o.Client], o)
		}
	}
	var out []belief
	for c, ops := range byClient {
		slices.SortStableFunc(ops, func(a, b *history.Op) int { return cmp.Or(cmp.Compare(a.Call, b.Call), cmp.Compare(a.ID, b.ID)) })
		open := -1
		for _, o := range ops {
			switch {
			case o.Kind == history.Acquire && o.Status == history.OK && open < 0:
				out = append(out, belief{client: c, start: o.End(), end: end, open: true, acq: o})
				open = len(out) - 1
			case o.Kind == history.Release && open >= 0:
				out[open].end, out[open].open, out[open].rel = max(o.Call, out[open].start), false, o
				open = -1
			}
		}
	}
	slices.SortFunc(out, func(a, b belief) int { return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(a.client, b.client)) })
	return out
}

// overlaps returns the intervals in which at least two clients believed they held the
// lock.
func overlaps(bs []belief) [][2]int64 {
	type event struct {
		at    int64
		delta int
	}
	var evs []event
	for _, b := range bs {
		if b.end > b.start {
			evs = append(evs, event{b.start, +1}, event{b.end, -1})
		}
	}
	slices.SortFunc(evs, func(a, b event) int { return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.delta, b.delta)) })
	var out [][2]int64
	n := 0
	var since int64
	for _, e := range evs {
		before := n
		n += e.delta
		switch {
		case before < 2 && n >= 2:
			since = e.at
		case before >= 2 && n < 2 && e.at > since:
			if k := len(out); k > 0 && out[k-1][1] == since {
				out[k-1][1] = e.at
			} else {
				out = append(out, [2]int64{since, e.at})
			}
		}
	}
	return out
}

// GapSamples returns, for every belief that another client's belief overtook, how long
// the first client went on believing after the second one's began: the lock validity
// gap of each takeover, in nanoseconds, sorted. Its maximum is
// models.Evidence.ValidityGapNanos.
func GapSamples(h *history.History) []int64 {
	bs := beliefs(h)
	var out []int64
	for i, b := range bs {
		for _, n := range bs[i+1:] {
			if n.start >= b.end {
				break
			}
			if n.client != b.client {
				out = append(out, b.end-n.start)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// laneOf names the lane of a fault target: "client-N" is client N's lane; anything
// else ("node-2", "lock service") gets a lane of its own below the clients.
func buildTimeline(h *history.History, rep *models.Report) timelineData {
	d := timelineData{End: h.LastTime(), Focus: -1, TTL: h.Run.TTLms * 1e6}
	maxClient := -1
	for _, o := range h.Ops {
		maxClient = max(maxClient, o.Client)
	}
	for _, f := range h.Faults {
		if c, ok := clientTarget(f.Target); ok {
			maxClient = max(maxClient, c)
		}
	}
	for c := 0; c <= maxClient; c++ {
		d.Lanes = append(d.Lanes, tlLane{ID: fmt.Sprintf("client-%d", c), Label: fmt.Sprintf("client %d", c), Kind: "client"})
	}
	var nodes []string
	for _, f := range h.Faults {
		if _, ok := clientTarget(f.Target); !ok && f.Target != "" && !slices.Contains(nodes, f.Target) {
			nodes = append(nodes, f.Target)
		}
	}
	slices.Sort(nodes)
	for _, n := range nodes {
		d.Lanes = append(d.Lanes, tlLane{ID: n, Label: strings.ReplaceAll(n, "-", " "), Kind: "node"})
	}
	lane := func(target string) int {
		for i, l := range d.Lanes {
			if l.ID == target {
				return i
			}
		}
		return -1
	}

	stale := map[int]bool{}
	for _, s := range rep.StaleWrites {
		if s.Status != "rejected" {
			stale[s.Write] = true
		}
	}
	d.Ops = make([][]any, 0, len(h.Ops))
	for _, o := range h.Ops {
		ret := int64(-1)
		if o.Return != nil {
			ret = *o.Return
		}
		st := statusCodes[o.Status]
		if stale[o.ID] {
			st = statusStale
		}
		readID := 0
		if o.ReadID != nil {
			readID = *o.ReadID
		}
		d.Ops = append(d.Ops, []any{o.ID, o.Client, kindCodes[o.Kind], o.Call, ret, st, o.Token, o.Value, readID, o.Error})
	}
	for _, f := range h.Faults {
		end := int64(-1)
		if f.End != nil {
			end = *f.End
		}
		d.Faults = append(d.Faults, tlFault{Lane: lane(f.Target), Start: f.Start, End: end, Kind: f.Kind, Target: f.Target, Detail: f.Detail})
	}
	bs := beliefs(h)
	for _, b := range bs {
		tb := tlBelief{Lane: b.client, Start: b.start, End: b.end, Open: b.open, Acq: b.acq.ID, Token: b.acq.Token}
		if b.rel != nil {
			tb.Rel = b.rel.ID
		}
		d.Belief = append(d.Belief, tb)
	}
	d.Lost = []tlLost{}
	for _, l := range h.Lost {
		if l.Client < len(d.Lanes) && d.Lanes[l.Client].Kind == "client" {
			d.Lost = append(d.Lost, tlLost{Lane: l.Client, At: l.At, Acq: l.AcquireID, Token: l.Token, Reason: l.Reason})
		}
	}
	d.Gaps = overlaps(bs)
	if d.Gaps == nil {
		d.Gaps = [][2]int64{}
	}
	for _, s := range rep.StaleWrites {
		kind := "stale"
		if s.Status == "rejected" {
			kind = "fenced"
		}
		d.Pairs = append(d.Pairs, tlPair{Kind: kind, A: s.Write, B: s.Newer, Text: staleSentence(s)})
	}
	for _, l := range rep.LostUpdates {
		d.Pairs = append(d.Pairs, tlPair{Kind: "lost", A: l.Write, B: l.Lost, Text: lostSentence(l)})
	}
	// Open on what went wrong: the first accepted stale write, else the first lost
	// update, else the first stale write the fence refused.
	for _, want := range []string{"stale", "lost", "fenced"} {
		if i := slices.IndexFunc(d.Pairs, func(p tlPair) bool { return p.Kind == want }); i >= 0 {
			d.Focus = i
			break
		}
	}
	if d.Pairs == nil {
		d.Pairs = []tlPair{}
	}
	if d.Faults == nil {
		d.Faults = []tlFault{}
	}
	if d.Belief == nil {
		d.Belief = []tlBelief{}
	}
	if d.Lanes == nil {
		d.Lanes = []tlLane{}
	}
	return d
}

// clientTarget parses a fault target "client-N".
func clientTarget(t string) (int, bool) {
	n, ok := strings.CutPrefix(t, "client-")
	if !ok {
		return 0, false
	}
	c, err := strconv.Atoi(n)
	return c, err == nil && c >= 0
}
