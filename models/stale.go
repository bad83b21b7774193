package models

import (
	"cmp"
	"slices"
	"sort"

	"github.com/fencecheck/fencecheck/harness/history"
)

// staleWrites lists every write that carried a token older, by the fence rule, than
// that of an accepted write already in effect:
//   - an ok write called after a newer accepted write was known to be in effect (it
//     returned, or a read saw it): it got through;
//   - an accepted write whose value a read saw, the read called after a newer accepted
//     write was in effect: it got through, and the read is the evidence;
//   - a rejected write with a newer accepted write called before it returned: the
//     fence stopped it.
//
// Each stale write is listed once, naming the earliest newer write in effect before it:
// the first write it overtook, which is what a reader wants to see next to it.
// jobs are the accepted writes sorted by token. Every accepted stale write listed is a
// register violation (the fence order puts it after the newer write, where it cannot
// pass), so StaleAccepted > 0 implies the register is violated.
func staleWrites(h *history.History, fence string, jobs []*regJob) []StaleWrite {
	if len(jobs) == 0 {
		return nil
	}
	// Distinct accepted tokens, ascending; a write with token t is stale against the
	// accepted writes from rank threshold(t) on.
	var toks []int64
	for _, j := range jobs {
		if len(toks) == 0 || toks[len(toks)-1] != j.w.Token {
			toks = append(toks, j.w.Token)
		}
	}
	rank := func(t int64) int { return sort.Search(len(toks), func(i int) bool { return toks[i] >= t }) }
	threshold := func(t int64) int {
		return sort.Search(len(toks), func(i int) bool { return !history.Passes(fence, t, toks[i]) })
	}

	type query struct {
		at    int64 // find newer writes in effect strictly before this time
		job   int   // index in jobs of the write asking, or -1
		op    *history.Op
		token int64
		read  *history.Op // the read that saw the value, for the second kind
	}
	var qs []query
	for ji, j := range jobs {
		if j.w.Status == history.OK {
			qs = append(qs, query{at: j.w.Call, job: ji, op: j.w, token: j.w.Token})
		}
		for _, r := range j.reads {
			qs = append(qs, query{at: r.Call, job: ji, op: j.w, token: j.w.Token, read: r})
		}
	}
	var rejected []*history.Op
	for i := range h.Ops {
		if x := &h.Ops[i]; x.Kind == history.Write && x.Status == history.Rejected {
			rejected = append(rejected, x)
			qs = append(qs, query{at: x.Call, job: -1, op: x, token: x.Token})
		}
	}
	slices.SortStableFunc(qs, func(a, b query) int { return cmp.Compare(a.at, b.at) })
	byDue := make([]int, len(jobs))
	for i := range byDue {
		byDue[i] = i
	}
	slices.SortStableFunc(byDue, func(a, b int) int { return cmp.Compare(jobs[a].b.due, jobs[b].b.due) })

	type hit struct {
		newer int // index in jobs
		read  *history.Op
	}
	found := map[*history.Op]hit{}
	direct := map[*history.Op]bool{} // found by the first kind (preferred)
	ft := newBestFenwick(len(toks), func(i int) int64 { return jobs[i].b.due })
	next := 0
	for _, q := range qs {
		for next < len(byDue) && jobs[byDue[next]].b.due < q.at {
			ji := byDue[next]
			ft.add(len(toks)-1-rank(jobs[ji].w.Token), ji)
			next++
		}
		th := threshold(q.token)
		if th == len(toks) {
			continue
		}
		ji := ft.best(len(toks)-1-th, q.job)
		if ji < 0 {
			continue
		}
		switch {
		case q.job >= 0 && q.read == nil:
			found[q.op], direct[q.op] = hit{newer: ji}, true
		case q.job >= 0:
			if _, ok := found[q.op]; !ok {
				found[q.op] = hit{newer: ji, read: q.read}
			}
		default:
			found[q.op] = hit{newer: ji}
		}
	}
	// A rejected write not preceded by a newer write in effect may still have raced
	// one: a newer accepted write called before it returned.
	minCall := make([]int, len(jobs)+1) // minCall[i]: index of the earliest call among jobs[i:]
	minCall[len(jobs)] = -1
	for i := len(jobs) - 1; i >= 0; i-- {
		minCall[i] = i
		if m := minCall[i+1]; m >= 0 && jobs[m].w.Call < jobs[i].w.Call {
			minCall[i] = m
		}
	}
	for _, x := range rejected {
		if _, ok := found[x]; ok {
			continue
		}
		i := sort.Search(len(jobs), func(i int) bool { return !history.Passes(fence, x.Token, jobs[i].w.Token) })
		if m := minCall[i]; m >= 0 && jobs[m].w.Call < x.End() {
			found[x] = hit{newer: m}
		}
	}

	out := make([]StaleWrite, 0, len(found))
	for w, ht := range found {
		n := jobs[ht.newer]
		s := StaleWrite{
			Write: w.ID, Client: w.Client, Token: w.Token, At: w.Call, Status: statusAccepted,
			Newer: n.w.ID, NewerClient: n.w.Client, NewerToken: n.w.Token, NewerAt: n.b.due,
		}
		if w.Status == history.Rejected {
			s.Status = statusRejected
		}
		if ht.read != nil && !direct[w] {
			s.SeenBy = ht.read.ID
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b StaleWrite) int {
		if c := cmp.Compare(a.At, b.At); c != 0 {
			return c
		}
		return cmp.Compare(a.Write, b.Write)
	})
	return out
}

// bestFenwick answers "the item with the smallest key among those added at positions
// <= p", keeping the best two so that a query can exclude one item (a write is never
// stale against itself).
type bestFenwick struct {
	key          func(item int) int64
	best1, best2 []int
}

func newBestFenwick(n int, key func(int) int64) *bestFenwick {
	f := &bestFenwick{key: key, best1: make([]int, n+1), best2: make([]int, n+1)}
	for i := range f.best1 {
		f.best1[i], f.best2[i] = -1, -1
	}
	return f
}

func (f *bestFenwick) better(a, b int) bool {
	if b < 0 {
		return a >= 0
	}
	return a >= 0 && f.key(a) < f.key(b)
}

func (f *bestFenwick) add(p, item int) {
	for i := p + 1; i < len(f.best1); i += i & -i {
		switch {
		case item == f.best1[i] || item == f.best2[i]:
		case f.better(item, f.best1[i]):
			f.best1[i], f.best2[i] = item, f.best1[i]
		case f.better(item, f.best2[i]):
			f.best2[i] = item
		}
	}
}

// best returns the best item at positions <= p other than exclude, or -1.
func (f *bestFenwick) best(p, exclude int) int {
	res := -1
	for i := p + 1; i > 0; i -= i & -i {
		for _, c := range []int{f.best1[i], f.best2[i]} {
			if c != exclude && f.better(c, res) {
				res = c
			}
		}
	}
	return res
}
