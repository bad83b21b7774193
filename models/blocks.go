package models

import (
	"cmp"
	"math"
	"slices"
)

// The direct analyses all reduce to one scheduling question. A block is a group of
// operations that must sit together in the linearization, in an order fixed within the
// block: a write and the reads that saw its value; a chain of read-modify-writes; one
// client's hold of the lock (acquire, then release). Blocks follow one another. Place
// every op at the earliest point allowed (its call, and not before the previous op):
// a block that starts no earlier than E ends no earlier than max(E, end), where end is
// the latest call among its ops, and it fits iff E <= due, the earliest return among
// its ops (plus a condition inside the block that does not depend on E, which the
// caller checks). Earliest placement is optimal because every later step only gets
// harder when the previous one ends later.
//
// When the order of some blocks is free (writes with equal tokens under a monotonic
// fence, chains of updates, holds of the lock), block i may precede block j iff
// end(i) <= due(j), and every block needs E <= due whatever the order. Sorting by
// key = min(end, due), "backward" blocks (end <= due) before "forward" ones (end > due)
// on equal keys, finds an order whenever one exists. Suppose i sorts before j but
// end(i) > due(j). If i is backward, key(i) = end(i) > due(j) >= key(j): impossible. So
// i is forward and key(i) = due(i). Any order must then put j first, which needs
// end(j) <= due(i) = key(i) <= key(j) <= end(j): j is backward with the same key as i,
// and the tie-break would have put it first. So if the sorted order fails, every order
// fails. (This is the Gibbons–Korach zone condition for registers with unique values.)
// The property test checks all of it against porcupine.

// block is one group of operations to be sequenced.
type block struct {
	end   int64 // latest call among its ops; math.MaxInt64 if nothing may follow it
	endOp int   // the op whose call that is
	due   int64 // earliest return among its ops
	dueOp int   // the op whose return that is
	idx   int   // the caller's index
}

func (b *block) addCall(t int64, op int) {
	if t > b.end || b.endOp == 0 {
		b.end, b.endOp = t, op
	}
}

func (b *block) addReturn(t int64, op int) {
	if t < b.due || b.dueOp == 0 {
		b.due, b.dueOp = t, op
	}
}

func newBlock(idx int) block {
	return block{end: math.MinInt64, due: math.MaxInt64, idx: idx}
}

// frontier is the earliest point the next block may start at, and the op that sets it.
type frontier struct {
	at int64
	op int // 0 when nothing constrains it yet
}

func start() frontier { return frontier{at: math.MinInt64} }

func (f *frontier) advance(b block) {
	if b.end > f.at {
		f.at, f.op = b.end, b.endOp
	}
}

// conflict is two ops that cannot both be where the order needs them: op late was
// called after op early returned, yet late must come first.
type conflict struct {
	late, early int
	blockIdx    int // the caller's index of the block that could not be placed
}

// sortFree orders blocks whose relative order is free so that, if any order fits, this
// one does.
func sortFree(bs []block) {
	forward := func(b block) int {
		if b.end > b.due {
			return 1
		}
		return 0
	}
	slices.SortStableFunc(bs, func(a, b block) int {
		if c := cmp.Compare(min(a.end, a.due), min(b.end, b.due)); c != 0 {
			return c
		}
		return cmp.Compare(forward(a), forward(b))
	})
}

// sequence places bs in the given order after f and reports the first block that does
// not fit. It advances f past every block placed.
func sequence(f *frontier, bs []block) *conflict {
	for _, b := range bs {
		if f.at > b.due {
			return &conflict{late: f.op, early: b.dueOp, blockIdx: b.idx}
		}
		f.advance(b)
	}
	return nil
}
