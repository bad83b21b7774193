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
	// The two accepted writes in effect so far with the highest tokens (on equal
	// tokens, the one in effect first): the write a stale one is named against is the
	// newest it fails against, not merely the first, which may be its own client's
	// earlier write with the same token.
	best1, best2 := -1, -1
	better := func(a, b int) bool {
		if b < 0 {
			return true
		}
		ta, tb := jobs[a].w.Token, jobs[b].w.Token
		return ta > tb || (ta == tb && jobs[a].b.due < jobs[b].b.due)
	}
	next := 0
	for _, q := range qs {
		for next < len(byDue) && jobs[byDue[next]].b.due < q.at {
			ji := byDue[next]
			switch {
			case better(ji, best1):
				best1, best2 = ji, best1
			case better(ji, best2):
				best2 = ji
			}
			next++
		}
		ji := best1
		if ji == q.job {
			ji = best2
		}
		if ji < 0 || history.Passes(fence, q.token, jobs[ji].w.Token) {
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
		if n.b.dueOp != n.w.ID {
			s.NewerSeenBy = n.b.dueOp
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
