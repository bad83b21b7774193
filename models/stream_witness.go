package models

import (
	"cmp"
	"context"
	"slices"

	"github.com/fencecheck/fencecheck/harness/history"
)

// Witnesses of a streamed history. Certifying a violation cuts a witness out of the
// key's sub-history (witness.go), which a stream does not hold. So each key keeps its
// last witnessRing ops, and when a property is first found violated on it, those ops,
// the ops the finding names (which may be older: the write that set F, say) and the
// next witnessAfter ops of the key become the capture the witness is cut from.
// Certifying on a capture is sound as long as the cut's closure rules find in it what
// they would find in the whole history (witness.go): so a hold's release is waited for
// (a hold the capture saw begin must end in it, or it would last to the end), the
// candidates of a refusal come with it, and a read whose write is not in the capture is
// left out (a read only ever constrains: leaving it out keeps the cut sound), unless
// the finding names it.
const (
	witnessRing  = 2048
	witnessAfter = 2048
)

type capture struct {
	p       Property
	f       *streamFinding
	ops     map[int]sop
	core    map[int]bool
	left    int
	holding map[int]bool // clients with a hold begun in the capture and not released
	// want are ops to take whenever they come: the reads that showed an unknown write
	// the finding names took effect (without them the write may never have).
	want     map[int]bool
	finished bool
}

type witnessState struct {
	ring []sop
	next int
	caps []*capture
	open int // captures not finished
}

func (w *witnessState) init() { w.ring = make([]sop, 0, 64) }

// record adds op s (a key's next op) to the ring and to the captures still open. Once
// a capture has its ops after the finding, it takes only the releases that end the
// holds it saw begin.
func (w *witnessState) record(s *sop) {
	if len(w.ring) < witnessRing {
		w.ring = append(w.ring, *s)
	} else {
		w.ring[w.next] = *s
		w.next = (w.next + 1) % witnessRing
	}
	if w.open == 0 {
		return
	}
	for _, cp := range w.caps {
		if cp.finished {
			continue
		}
		switch {
		case cp.left > 0:
			cp.add(s)
			cp.left--
		case s.kind == history.Release && cp.holding[s.client] || cp.want[s.id]:
			cp.add(s)
		}
		delete(cp.want, s.id)
		if cp.left <= 0 && len(cp.holding) == 0 && len(cp.want) == 0 {
			cp.finished = true
			w.open--
		}
	}
}

func (cp *capture) add(s *sop) {
	if _, ok := cp.ops[s.id]; ok {
		return
	}
	cp.ops[s.id] = *s
	switch {
	case s.kind == history.Acquire && s.status == history.OK:
		cp.holding[s.client] = true
	case s.kind == history.Release:
		delete(cp.holding, s.client)
	}
}

// begin opens the capture of p's first violation f on key ks, with the ring and the
// ops the finding names (refs).
func (w *witnessState) begin(c *streamChecker, ks *keyState, p Property, f *streamFinding, refs []*sop) {
	cp := &capture{p: p, f: f, ops: map[int]sop{}, core: map[int]bool{}, left: witnessAfter, holding: map[int]bool{}, want: map[int]bool{}}
	for i := range w.ring {
		cp.add(&w.ring[(w.next+i)%len(w.ring)])
	}
	for _, s := range refs {
		if s != nil {
			if _, ok := cp.ops[s.id]; !ok {
				cp.ops[s.id] = *s
			}
		}
	}
	for _, id := range f.ops {
		cp.core[id] = true
	}
	for _, s := range refs {
		if s == nil || s.kind != history.Write || s.status != history.Unknown {
			continue
		}
		if w := ks.reg.vals[s.value]; w != nil && w.accepted && w.seen.seen {
			if _, ok := cp.ops[w.seen.read]; !ok && w.seen.read > c.lastOp {
				cp.want[w.seen.read] = true
			}
			if !slices.Contains(f.ops, w.seen.read) {
				f.ops = append(f.ops, w.seen.read) // the read is part of the counterexample
				cp.core[w.seen.read] = true
			}
		}
	}
	if cr, ok := pluginOf(p).(capturer); ok {
		cr.capture(c, ks, cp)
	}
	w.caps = append(w.caps, cp)
	w.open++
}

// certifyCapture certifies result r from its capture on key ks.
func (w *witnessState) certifyCapture(ctx context.Context, c *streamChecker, ks *keyState, r *Result) {
	var cp *capture
	for _, x := range w.caps {
		if x.p == r.Property {
			cp = x
		}
	}
	if cp == nil {
		r.CertifyNote = "the streaming check kept no witness for it"
		return
	}
	ops := make([]history.Op, 0, len(cp.ops))
	for _, s := range cp.ops {
		ops = append(ops, s.op())
	}
	slices.SortFunc(ops, func(a, b history.Op) int { return cmp.Or(cmp.Compare(a.Call, b.Call), cmp.Compare(a.ID, b.ID)) })
	// A read whose write the capture lacks (and that is not known never to have taken
	// effect) is left out, unless the finding names it; the write is added when the
	// key still knows it.
	writes := map[string]bool{}
	for _, o := range ops {
		if o.Kind == history.Write {
			writes[o.Value] = true
		}
	}
	var extra []history.Op
	kept := ops[:0]
	for _, o := range ops {
		if o.Kind == history.Read && o.Status == history.OK && o.Value != "" && !writes[o.Value] {
			if s := ks.reg.writer(o.Value); s != nil {
				if s.status == history.OK || s.status == history.Unknown {
					extra = append(extra, s.op())
					writes[o.Value] = true
				}
			} else if s := ks.upd.writer(o.Value); s != nil {
				extra = append(extra, s.op())
				writes[o.Value] = true
			} else if !cp.core[o.ID] {
				continue
			}
		}
		kept = append(kept, o)
	}
	ops = append(kept, extra...)
	slices.SortFunc(ops, func(a, b history.Op) int { return cmp.Or(cmp.Compare(a.Call, b.Call), cmp.Compare(a.ID, b.ID)) })
	sub := &history.History{Format: history.Format, Run: history.Run{Fence: c.fence}, Ops: ops}
	core := slices.Clone(cp.f.ops)
	certify(ctx, r, newPartIndex(sub), core)
}
