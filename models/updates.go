package models

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/fencecheck/fencecheck/harness/history"
)

// The direct updates analysis decides what porcupine's updates model decides.
//
// A read-modify-write (a write with read_id) names its predecessor: the write whose
// value its read returned (or the initial value). In any order the model accepts, an
// applied read-modify-write comes right after its predecessor, so the applied writes
// form chains: each starts at the initial value or at a plain write, and each link is
// the unique read-modify-write that read the previous one. Chains cannot interleave: a
// chain's next write must read its last value. So the order is: the initial chain, then
// the other chains whole, in an order free to choose (blocks.go).
//
// Which writes are applied: every ok write; every unknown write an ok read saw (it took
// effect before that read returned: see firstSeen); and every unknown write some
// applied read-modify-write read (its value became current somehow). Applying any other
// unknown write never helps, because no applied write needs its value, so it can always
// be linearised last, with no effect on anything.

// updWrite is one write as the updates analysis sees it.
type updWrite struct {
	op   *history.Op
	read *history.Op // the read its value was computed from; nil for a plain write
	pred int         // index of the write that read saw; initialPred, or noPred
	end  int64       // when it must have taken effect by, if applied
	// applied: it took effect in every order the model accepts.
	applied bool
}

const (
	initialPred = -1 // its read returned the initial value
	noPred      = -2 // a plain write, or a predecessor that never took effect
)

type updResult struct {
	finding Finding
	lost    []LostUpdate
}

// updWrites lists h's writes with their reads resolved, and indexes them by value.
func updWrites(h *history.History) ([]updWrite, map[string]int) {
	reads := map[int]*history.Op{}
	for i := range h.Ops {
		if o := &h.Ops[i]; o.Kind == history.Read && o.Status == history.OK {
			reads[o.ID] = o
		}
	}
	seen := firstSeen(h)
	var ws []updWrite
	byValue := map[string]int{}
	for i := range h.Ops {
		o := &h.Ops[i]
		if o.Kind != history.Write {
			continue
		}
		w := updWrite{op: o, pred: noPred, end: o.End()}
		if o.ReadID != nil {
			w.read = reads[*o.ReadID]
		}
		if r := seen[o.Value]; o.Status == history.Unknown && r != nil {
			w.applied, w.end = true, seenEnd(o, r)
		}
		w.applied = w.applied || o.Status == history.OK
		if _, dup := byValue[o.Value]; !dup {
			byValue[o.Value] = len(ws)
		}
		ws = append(ws, w)
	}
	return ws, byValue
}

func analyzeUpdates(h *history.History) updResult {
	ws, byValue := updWrites(h)
	var fail *Finding
	violate := func(ops []int, format string, args ...any) {
		if fail == nil {
			fail = &Finding{Violated: true, Ops: ops, Reason: fmt.Sprintf(format, args...)}
		}
	}
	var lost []LostUpdate
	lostFor := map[int]bool{} // one entry per write
	addLost := func(w *updWrite, lostID int, format string, args ...any) {
		if lostFor[w.op.ID] {
			return
		}
		lostFor[w.op.ID] = true
		lu := LostUpdate{Write: w.op.ID, Client: w.op.Client, Lost: lostID, Explanation: fmt.Sprintf(format, args...)}
		if w.read != nil {
			lu.ReadID, lu.ReadValue = w.read.ID, w.read.Value
		}
		lost = append(lost, lu)
	}

	// Resolve predecessors from the applied writes, applying, transitively, the unknown
	// writes they read.
	var work []int
	for j := range ws {
		if ws[j].applied {
			work = append(work, j)
		}
	}
	for len(work) > 0 {
		w := &ws[work[len(work)-1]]
		work = work[:len(work)-1]
		r := w.read
		switch {
		case r == nil:
			continue
		case r.Value == "":
			w.pred = initialPred
			continue
		}
		k, ok := byValue[r.Value]
		switch {
		case !ok:
			violate([]int{w.op.ID, r.ID}, "Write #%d was computed from value %q (read #%d), which no write wrote.", w.op.ID, r.Value, r.ID)
			addLost(w, 0, "It was computed from value %q, which no write ever wrote.", r.Value)
		case ws[k].op.Status == history.Fail || ws[k].op.Status == history.Rejected:
			p := ws[k].op
			violate([]int{w.op.ID, p.ID}, "Write #%d was computed from value %q of write #%d, which was %s and so never took effect.", w.op.ID, r.Value, p.ID, p.Status)
			addLost(w, 0, "It was computed from value %q of write #%d, which was %s and never took effect.", r.Value, p.ID, p.Status)
		default:
			w.pred = k
			if !ws[k].applied {
				ws[k].applied = true
				work = append(work, k)
			}
		}
	}

	// Each value can be followed by one read-modify-write only. succ[p+1] lists the
	// applied writes computed from write p's value (succ[0]: from the initial value).
	succ := make([][]int, len(ws)+1)
	for j, w := range ws {
		if w.applied && w.pred != noPred {
			succ[w.pred+1] = append(succ[w.pred+1], j)
		}
	}
	for p1, next := range succ {
		slices.SortStableFunc(next, func(a, b int) int { return cmp.Compare(ws[a].op.Call, ws[b].op.Call) })
		for i := 1; i < len(next); i++ {
			v := `the initial value ""`
			if p1 > 0 {
				v = fmt.Sprintf("write #%d's value %q", ws[p1-1].op.ID, ws[p1-1].op.Value)
			}
			first, other := ws[next[i-1]].op, ws[next[i]].op
			violate([]int{other.ID, first.ID}, "Writes #%d and #%d were both computed from %s; only one of them can have read the latest value, so the other's update was lost.", first.ID, other.ID, v)
			addLost(&ws[next[i]], first.ID, "It was computed from %s, which write #%d had also read and already replaced: #%d's update was lost.", v, first.ID, first.ID)
		}
	}

	// Chains, from each head: the initial value and every applied plain write. Inside a
	// chain the order is fixed: each write must be placeable no earlier than every
	// write before it was called.
	visited := make([]bool, len(ws))
	chain := func(head int) block {
		b := newBlock(head)
		at := head
		if head >= 0 {
			visited[head] = true
			b.addCall(ws[head].op.Call, ws[head].op.ID)
			b.addReturn(ws[head].end, ws[head].op.ID)
		}
		for len(succ[at+1]) > 0 {
			at = succ[at+1][0]
			visited[at] = true
			w := ws[at]
			if b.end > w.end {
				violate([]int{w.op.ID, b.endOp}, "Write #%d must follow write #%d (its value was computed, through a chain of reads, from #%d's), but it returned before #%d was called.", w.op.ID, b.endOp, b.endOp, b.endOp)
			}
			b.addCall(w.op.Call, w.op.ID)
			b.addReturn(w.end, w.op.ID)
		}
		return b
	}
	f := start()
	f.advance(chain(initialPred))
	var bs []block
	for j, w := range ws {
		if w.applied && w.read == nil {
			bs = append(bs, chain(j))
		}
	}
	// What no chain reaches (and is not a second reader of a value, reported above)
	// was computed from values that lead round in a cycle.
	for j, w := range ws {
		if w.applied && w.pred >= 0 && !visited[j] {
			violate([]int{w.op.ID, ws[w.pred].op.ID}, "Write #%d cannot follow the initial value or any plain write: the values it was computed from lead round in a cycle, so none of them can have been first.", w.op.ID)
			break
		}
	}
	sortFree(bs)
	if cf := sequence(&f, bs); cf != nil {
		violate([]int{cf.late, cf.early}, "The accepted writes fit no order in which every read-modify-write directly follows the write it read: write #%d must come after write #%d's chain, but it was called after #%d returned.", cf.early, cf.late, cf.early)
	}

	// A write Y between a read-modify-write W and its predecessor P in real time (P
	// returned before Y was called, Y returned before W was called) was overwritten by W
	// unseen. Find, for each W, the latest-called Y that returned before W was called.
	var byEnd, byCall []int
	for j, w := range ws {
		if w.applied {
			byEnd = append(byEnd, j)
			if w.pred != noPred {
				byCall = append(byCall, j)
			}
		}
	}
	slices.SortFunc(byEnd, func(a, b int) int { return cmp.Or(cmp.Compare(ws[a].end, ws[b].end), cmp.Compare(a, b)) })
	slices.SortFunc(byCall, func(a, b int) int { return cmp.Or(cmp.Compare(ws[a].op.Call, ws[b].op.Call), cmp.Compare(a, b)) })
	latest := -1
	next := 0
	for _, j := range byCall {
		w := &ws[j]
		for next < len(byEnd) && ws[byEnd[next]].end < w.op.Call {
			if latest < 0 || ws[byEnd[next]].op.Call > ws[latest].op.Call {
				latest = byEnd[next]
			}
			next++
		}
		predEnd, from := int64(math.MinInt64), `the initial value ""`
		if w.pred >= 0 {
			predEnd, from = ws[w.pred].end, fmt.Sprintf("write #%d's value", ws[w.pred].op.ID)
		}
		if latest >= 0 && ws[latest].op.Call > predEnd {
			y := ws[latest].op
			violate([]int{w.op.ID, y.ID}, "Write #%d was computed from %s, but write #%d replaced that value before #%d was called: #%d's update was lost.", w.op.ID, from, y.ID, w.op.ID, y.ID)
			addLost(w, y.ID, "It was computed from %s, but write #%d replaced that value before #%d was called: #%d's update was lost.", from, y.ID, w.op.ID, y.ID)
		}
	}

	res := updResult{}
	if fail != nil {
		res.finding = *fail
		if len(lost) == 0 {
			// Name the write at least, so every violation lists a lost update.
			for j := range ws {
				if ws[j].op.ID == fail.Ops[0] {
					addLost(&ws[j], 0, "%s", fail.Reason)
				}
			}
		}
	}
	calls := map[int]int64{}
	for _, w := range ws {
		calls[w.op.ID] = w.op.Call
	}
	slices.SortStableFunc(lost, func(a, b LostUpdate) int { return cmp.Compare(calls[a.Write], calls[b.Write]) })
	if fail != nil && len(lost) > 0 {
		res.finding.Ops = lostOps(lost[0])
	}
	res.lost = lost
	return res
}

func lostOps(l LostUpdate) []int {
	if l.Lost != 0 {
		return []int{l.Write, l.Lost}
	}
	return []int{l.Write}
}
