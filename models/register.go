package models

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/fencecheck/fencecheck/harness/history"
)

// The direct register analysis decides exactly what porcupine's register model decides,
// in O(n log n), by building the one order that has a chance and checking it.
//
// Values are unique, so every ok read names the write it saw. The writes that certainly
// took effect ("accepted") are the ok writes and the unknown writes some read saw; each
// is a block with its reads. The fence orders accepted writes by token (ties are free
// under a monotonic fence, and impossible under a strict one), so the blocks are
// sequenced class by class (see blocks.go), after the reads of the initial value.
//
// Two kinds of op do not sit in a block:
//   - a rejected write needs, at some point of its interval, a stored token it fails
//     against. Tokens only grow, so it needs the first applied write whose token it
//     fails against to be placed no later than its return;
//   - an unknown write nobody read may be applied or not. Applying it only matters for
//     rejected writes: it can raise the stored token earlier than the next accepted
//     write would. Between accepted writes k-1 and k (by token), the cheapest way to
//     serve a rejected write is the unread unknown write with the earliest call among
//     those whose token it fails against; applied at max(E, call) it costs nothing as
//     long as that is before where write k goes anyway, and if it is not, write k
//     itself serves the rejected write sooner. So those writes never move the frontier
//     and each rejected write is a simple check.

// regJob is an accepted write and the reads that saw it.
type regJob struct {
	w     *history.Op
	reads []*history.Op
	b     block
}

// regResult is the register analysis: the verdict and the stale writes.
type regResult struct {
	finding Finding
	stale   []StaleWrite
}

func analyzeRegister(h *history.History) regResult {
	fence := h.FenceRule()
	writer := writersByValue(h)
	var fail *Finding
	violate := func(ops []int, format string, args ...any) {
		if fail == nil {
			fail = &Finding{Violated: true, Ops: ops, Reason: fmt.Sprintf(format, args...)}
		}
	}

	// Reads: each names its write, or the initial value.
	readsOf := map[*history.Op][]*history.Op{}
	f := start() // the reads of the initial value come before every write
	for i := range h.Ops {
		r := &h.Ops[i]
		if r.Kind != history.Read || r.Status != history.OK {
			continue
		}
		if r.Value == "" {
			if r.Token != 0 {
				violate([]int{r.ID}, "Read #%d returned the initial empty value with token %d, but the initial token is 0.", r.ID, r.Token)
			} else if r.Call > f.at {
				f.at, f.op = r.Call, r.ID
			}
			continue
		}
		w := writer[r.Value]
		switch {
		case w == nil:
			violate([]int{r.ID}, "Read #%d returned value %q, which no write wrote.", r.ID, r.Value)
		case w.Status == history.Fail || w.Status == history.Rejected:
			violate([]int{r.ID, w.ID}, "Read #%d returned value %q of write #%d, which was %s and so never took effect.", r.ID, r.Value, w.ID, w.Status)
		case w.Token != r.Token:
			violate([]int{r.ID, w.ID}, "Read #%d returned value %q with token %d, but write #%d wrote it with token %d.", r.ID, r.Value, r.Token, w.ID, w.Token)
		default:
			readsOf[w] = append(readsOf[w], r)
		}
	}

	// Accepted writes become blocks; unread unknown writes are optional.
	var jobs []*regJob
	var optional []*history.Op
	for i := range h.Ops {
		w := &h.Ops[i]
		if w.Kind != history.Write {
			continue
		}
		switch {
		case w.Status == history.OK || (w.Status == history.Unknown && len(readsOf[w]) > 0):
			j := &regJob{w: w, reads: readsOf[w], b: newBlock(len(jobs))}
			j.b.addCall(w.Call, w.ID)
			j.b.addReturn(w.End(), w.ID)
			for _, r := range j.reads {
				j.b.addCall(r.Call, r.ID)
				j.b.addReturn(r.End(), r.ID)
			}
			if w.Call > j.b.due {
				violate([]int{j.b.dueOp, w.ID}, "Read #%d returned value %q before write #%d, which wrote it, was even called.", j.b.dueOp, w.Value, w.ID)
			}
			jobs = append(jobs, j)
		case w.Status == history.Unknown && history.Passes(fence, w.Token, 0):
			optional = append(optional, w)
		}
	}
	slices.SortStableFunc(jobs, func(a, b *regJob) int { return cmp.Compare(a.w.Token, b.w.Token) })
	for i, j := range jobs {
		j.b.idx = i
	}
	stale := staleWrites(h, fence, jobs)

	// Classes of equal tokens, in token order.
	var classes [][]*regJob
	for i := 0; i < len(jobs); {
		k := i
		for k < len(jobs) && jobs[k].w.Token == jobs[i].w.Token {
			k++
		}
		classes = append(classes, jobs[i:k])
		i = k
	}
	tokenOf := func(k int) int64 { return classes[k][0].w.Token }
	if len(classes) > 0 && !history.Passes(fence, tokenOf(0), 0) {
		w := classes[0][0].w
		violate([]int{w.ID}, "Write #%d was accepted with token %d, which does not pass the fence over the initial token 0.", w.ID, w.Token)
	}
	if fence != history.FenceMonotonic {
		for _, c := range classes {
			if len(c) > 1 {
				violate([]int{c[0].w.ID, c[1].w.ID}, "Writes #%d and #%d were both accepted with token %d; a strict fence accepts a token only once.", c[0].w.ID, c[1].w.ID, c[0].w.Token)
			}
		}
	}

	// gap k lies before class k (gap len(classes) after the last one). A rejected write
	// belongs to the gap before the first class whose token it fails against; an unread
	// unknown write to the gap before the first class whose token is >= its own (under
	// a strict fence one with an accepted token can never apply, so it is dropped).
	firstFailing := func(t int64) int {
		return sort.Search(len(classes), func(k int) bool { return !history.Passes(fence, t, tokenOf(k)) })
	}
	rejected := make([][]*history.Op, len(classes)+1)
	for i := range h.Ops {
		x := &h.Ops[i]
		// Under an owner guard a refusal is always explained, so it constrains nothing.
		if x.Kind == history.Write && x.Status == history.Rejected && fence != history.FenceOwner && history.Passes(fence, x.Token, 0) {
			k := firstFailing(x.Token)
			rejected[k] = append(rejected[k], x)
		}
	}
	opts := make([]gapOptions, len(classes)+1)
	for _, u := range optional {
		k := sort.Search(len(classes), func(k int) bool { return tokenOf(k) >= u.Token })
		if fence != history.FenceMonotonic && k < len(classes) && tokenOf(k) == u.Token {
			continue
		}
		opts[k].ops = append(opts[k].ops, u)
	}

	for k := 0; k <= len(classes); k++ {
		// Class k's first write can go at first, given the frontier before it; the class
		// itself must fit, and the rejected writes of gap k must be explained, either by
		// that first write or by an unread unknown write of gap k.
		entry := f
		first, firstOp := int64(math.MaxInt64), 0
		if k < len(classes) {
			c := classes[k]
			first, firstOp = classStart(entry, c)
			bs := make([]block, len(c))
			for i, j := range c {
				bs[i] = j.b
			}
			sortFree(bs)
			if cf := sequence(&f, bs); cf != nil && fail == nil { // only the first is reported
				ops, why := explainRegisterConflict(h, jobs, *cf)
				violate(ops, "%s", why)
			}
		}
		opts[k].prepare()
		for _, x := range rejected[k] {
			if first <= x.End() {
				continue
			}
			if c, ok := opts[k].earliest(fence, x.Token); ok && max(entry.at, c) <= x.End() {
				continue
			}
			if firstOp != 0 {
				violate([]int{x.ID, firstOp}, "Write #%d (token %d) was rejected, but no write with a token it fails against can have taken effect before it returned (the first, write #%d, could not go before then): the fence refused a write it should have accepted.", x.ID, x.Token, firstOp)
			} else {
				violate([]int{x.ID}, "Write #%d (token %d) was rejected, but no write with a token it fails against ever took effect before it returned: the fence refused a write it should have accepted.", x.ID, x.Token)
			}
		}
	}
	res := regResult{stale: stale}
	if fail != nil {
		res.finding = *fail
		// A stale write that got through is the clearest counterexample there is; the
		// explanation then names the same ops.
		for _, s := range stale {
			if s.Status == statusAccepted {
				res.finding.Ops, res.finding.Reason = staleOps(s), staleReason(s)
				break
			}
		}
	}
	return res
}

// classStart is the earliest point the first write of a class of equal tokens can be
// placed, given the frontier f, and that write's op id. Any write of the class may go
// first as long as every other one can still follow it (its end <= their due).
func classStart(f frontier, c []*regJob) (int64, int) {
	minDue, second := int64(math.MaxInt64), int64(math.MaxInt64)
	minIdx := -1
	for i, j := range c {
		switch {
		case j.b.due < minDue:
			second, minDue, minIdx = minDue, j.b.due, i
		case j.b.due < second:
			second = j.b.due
		}
	}
	best, bestOp := int64(math.MaxInt64), 0
	for i, j := range c {
		others := minDue
		if i == minIdx {
			others = second
		}
		if j.b.end <= others && j.w.Call < best {
			best, bestOp = j.w.Call, j.w.ID
		}
	}
	if bestOp == 0 { // the class cannot be ordered at all; sequence reports why
		return math.MaxInt64, c[0].w.ID
	}
	return max(f.at, best), bestOp
}

// gapOptions are the unread unknown writes between two classes of accepted writes.
type gapOptions struct {
	ops    []*history.Op // sorted by token by prepare
	sufMin []int64       // sufMin[i] = earliest call among ops[i:]
}

func (g *gapOptions) prepare() {
	slices.SortStableFunc(g.ops, func(a, b *history.Op) int { return cmp.Compare(a.Token, b.Token) })
	g.sufMin = make([]int64, len(g.ops)+1)
	g.sufMin[len(g.ops)] = math.MaxInt64
	for i := len(g.ops) - 1; i >= 0; i-- {
		g.sufMin[i] = min(g.sufMin[i+1], g.ops[i].Call)
	}
}

// earliest returns the earliest call among the writes whose token a write with token t
// fails against.
func (g *gapOptions) earliest(fence string, t int64) (int64, bool) {
	i := sort.Search(len(g.ops), func(i int) bool { return !history.Passes(fence, t, g.ops[i].Token) })
	if i == len(g.ops) {
		return 0, false
	}
	return g.sufMin[i], true
}

// explainRegisterConflict words a sequencing failure: op cf.late (a write, or a read of
// a write's value, or a read of the initial value) was called after op cf.early
// returned, yet the fence order needs it first.
func explainRegisterConflict(h *history.History, jobs []*regJob, cf conflict) ([]int, string) {
	find := h.Finder()
	late, early := find(cf.late), find(cf.early)
	newer := jobs[cf.blockIdx].w
	var older *history.Op
	if late != nil {
		if late.Kind == history.Write {
			older = late
		} else if late.Value != "" {
			for _, j := range jobs {
				if j.w.Value == late.Value {
					older = j.w
				}
			}
		}
	}
	ops := []int{}
	add := func(o *history.Op) {
		if o != nil && !slices.Contains(ops, o.ID) {
			ops = append(ops, o.ID)
		}
	}
	add(older)
	add(newer)
	add(late)
	add(early)
	earlyText := fmt.Sprintf("write #%d (token %d) returned", newer.ID, newer.Token)
	if early != nil && early.ID != newer.ID {
		earlyText = fmt.Sprintf("read #%d saw write #%d (token %d) and returned", early.ID, newer.ID, newer.Token)
	}
	switch {
	case late == nil:
		return ops, fmt.Sprintf("Write #%d (token %d) cannot be placed in any order the fence allows.", newer.ID, newer.Token)
	case older == nil:
		return ops, fmt.Sprintf("Read #%d returned the initial empty value although it was called after %s.", late.ID, earlyText)
	case late.Kind == history.Write:
		return ops, fmt.Sprintf("Write #%d (client %d, token %d) was accepted although it was called after %s: a stale write got through.",
			older.ID, older.Client, older.Token, earlyText)
	case older.Token == newer.Token:
		return ops, fmt.Sprintf("Read #%d still saw write #%d (client %d, token %d) although it was called after %s: it saw an overwritten value.",
			late.ID, older.ID, older.Client, older.Token, earlyText)
	default:
		return ops, fmt.Sprintf("Read #%d still saw write #%d (client %d, token %d) although it was called after %s: the token went backwards, a stale write got through.",
			late.ID, older.ID, older.Client, older.Token, earlyText)
	}
}

// writersByValue maps each write value to its write (values are unique).
func writersByValue(h *history.History) map[string]*history.Op {
	m := map[string]*history.Op{}
	for i := range h.Ops {
		if o := &h.Ops[i]; o.Kind == history.Write {
			if _, dup := m[o.Value]; !dup {
				m[o.Value] = o
			}
		}
	}
	return m
}

// staleReason explains a stale write that got through with the ops staleOps names.
func staleReason(s StaleWrite) string {
	newer := fmt.Sprintf("write #%d (client %d, token %d)", s.Newer, s.NewerClient, s.NewerToken)
	if s.NewerSeenBy != 0 {
		newer += fmt.Sprintf(", which read #%d had already seen,", s.NewerSeenBy)
	} else {
		newer += ", which had already returned,"
	}
	if s.SeenBy != 0 {
		return fmt.Sprintf("Read #%d saw write #%d (client %d, token %d) although %s took effect before the read was called: the token went backwards, a stale write got through.",
			s.SeenBy, s.Write, s.Client, s.Token, newer)
	}
	return fmt.Sprintf("Write #%d (client %d, token %d) was accepted although %s took effect before it was called: a stale write got through.",
		s.Write, s.Client, s.Token, newer)
}

// staleOps is the witness of a stale write that got through: it, the newer write it
// overtook, and the reads that show the newer write was in effect first or that the
// stale one took effect.
func staleOps(s StaleWrite) []int {
	ops := []int{s.Write, s.Newer}
	for _, r := range []int{s.SeenBy, s.NewerSeenBy} {
		if r != 0 {
			ops = append(ops, r)
		}
	}
	return ops
}
