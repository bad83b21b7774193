package models

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/fencecheck/fencecheck/harness/history"
)

// analyzeTokens decides the tokens model: grants sorted by token must be strictly
// increasing and placeable in that order, each at max(previous point, its call) no later
// than its return.
func analyzeTokens(h *history.History) Finding {
	if h.Run.NoToken != "" {
		return Finding{Violated: true, Reason: "The backend says: " + h.Run.NoToken + ". Its grants carry only the order in which the harness saw them granted, which the checker uses to tell stale writes, and which no resource can use as a fence."}
	}
	var acqs []*history.Op
	for i := range h.Ops {
		if o := &h.Ops[i]; o.Kind == history.Acquire && o.Status == history.OK {
			acqs = append(acqs, o)
		}
	}
	slices.SortStableFunc(acqs, func(a, b *history.Op) int { return cmp.Compare(a.Token, b.Token) })
	if len(acqs) > 0 && acqs[0].Token <= 0 {
		a := acqs[0]
		return Finding{Violated: true, Ops: []int{a.ID}, Reason: fmt.Sprintf("Acquire #%d was granted token %d; tokens must be positive (above the initial 0).", a.ID, a.Token)}
	}
	for i := 1; i < len(acqs); i++ {
		if a, b := acqs[i-1], acqs[i]; a.Token == b.Token {
			return Finding{Violated: true, Ops: []int{a.ID, b.ID}, Reason: fmt.Sprintf(
				"Acquires #%d (client %d) and #%d (client %d) were both granted token %d: a token was reused.", a.ID, a.Client, b.ID, b.Client, a.Token)}
		}
	}
	find := h.Finder()
	f := start()
	for _, a := range acqs {
		if f.at > a.End() {
			late := find(f.op)
			return Finding{Violated: true, Ops: []int{late.ID, a.ID}, Reason: fmt.Sprintf(
				"Acquire #%d (client %d) was granted token %d after acquire #%d (client %d) had already been granted the higher token %d: tokens went backwards.",
				late.ID, late.Client, late.Token, a.ID, a.Client, a.Token)}
		}
		if a.Call > f.at {
			f.at, f.op = a.Call, a.ID
		}
	}
	return Finding{}
}

// analyzeMutex decides the mutex model: each hold (acquire, then its release) is a
// block, and holds must follow one another in some order.
func analyzeMutex(h *history.History) Finding {
	hs := holds(h)
	holdOf := map[int]int{} // op id -> hold index
	bs := make([]block, len(hs))
	for i, hd := range hs {
		b := newBlock(i)
		b.addCall(hd.acq.Call, hd.acq.ID)
		b.addReturn(hd.acq.End(), hd.acq.ID)
		holdOf[hd.acq.ID] = i
		if hd.rel == nil {
			b.end, b.endOp = math.MaxInt64, hd.acq.ID // nobody can acquire after it
		} else {
			holdOf[hd.rel.ID] = i
			if hd.acq.Call > releaseEnd(hd.rel) {
				return Finding{Violated: true, Ops: []int{hd.acq.ID, hd.rel.ID}, Reason: fmt.Sprintf(
					"Client %d's release #%d ended before its acquire #%d began.", hd.acq.Client, hd.rel.ID, hd.acq.ID)}
			}
			b.addCall(hd.rel.Call, hd.rel.ID)
			b.addReturn(releaseEnd(hd.rel), hd.rel.ID)
		}
		bs[i] = b
	}
	sortFree(bs)
	f := start()
	cf := sequence(&f, bs)
	if cf == nil {
		return Finding{}
	}
	a, b := hs[holdOf[cf.late]], hs[cf.blockIdx]
	return Finding{Violated: true, Ops: []int{a.acq.ID, b.acq.ID}, Reason: fmt.Sprintf(
		"Client %d (acquire #%d) and client %d (acquire #%d) both believed they held the lock at the same time.",
		a.acq.Client, a.acq.ID, b.acq.Client, b.acq.ID)}
}
