package history

import (
	"errors"
	"slices"
)

// Spill says where and when a Recorder writes its history to disk as it goes (see
// SpillTo): a run that records more than After ops becomes a segmented history at Head
// (its segments next to it, docs/history-format.md), so that a run of a day never holds
// its history in memory.
type Spill struct {
	// Head is the path of the head file, history.json in a run's directory.
	Head string
	// After is how many ops the recorder holds before it starts writing (default
	// 1,000,000): a shorter run's history stays whole in memory, and is written as one
	// v1 file by its caller, as before.
	After int
	// PerSegment is how many ops each segment holds (default 1,000,000).
	PerSegment int
	// Keep is how many of the latest ops stay in memory once writing (default 100,000),
	// for the nemesis (a fault's end note reads the ops since it began, which are kept
	// too, however many).
	Keep int
}

func (s Spill) withDefaults() Spill {
	if s.After <= 0 {
		s.After = 1_000_000
	}
	if s.PerSegment <= 0 {
		s.PerSegment = 1_000_000
	}
	if s.Keep <= 0 {
		s.Keep = 100_000
	}
	return s
}

type spiller struct {
	cfg Spill
	run Run
	w   *SegmentWriter
	err error
	// effects written so far (ids go on from there)
	effects int
}

// SpillTo makes the recorder write the history to disk once it has more than
// s.After ops, as a segmented history whose head (at s.Head) records run. Call it
// before the run starts. Finish completes the head.
func (r *Recorder) SpillTo(s Spill, run Run) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.spill = &spiller{cfg: s.withDefaults(), run: run}
}

// flushBatch is how many ops the recorder lets pile up before it writes the written-out
// prefix, so that most ops are written in batches.
const flushBatch = 4096

// maybeFlush writes out the ops no longer needed in memory, starting the segmented
// history once there are enough. r.mu is held.
func (sp *spiller) maybeFlush(r *Recorder) {
	if sp.err != nil {
		return
	}
	if sp.w == nil {
		if r.base+len(r.ops) <= sp.cfg.After {
			return
		}
		w, err := CreateSegments(sp.cfg.Head, sp.run, sp.cfg.PerSegment)
		if err != nil {
			sp.err = err
			return
		}
		sp.w = w
		for _, e := range r.effects {
			if err := sp.w.WriteEffect(&e, r.faults, r.lost); err != nil {
				sp.err = err
				return
			}
		}
		sp.effects = len(r.effects)
		r.effects = nil
	}
	if len(r.ops) < sp.cfg.Keep+flushBatch {
		return
	}
	sp.flush(r, sp.keepFrom(r))
}

// keepFrom is the index in r.ops of the first op to keep in memory: the latest Keep
// ops, every op recorded since the earliest fault still active began, and every op from
// the first one still open on.
func (sp *spiller) keepFrom(r *Recorder) int {
	k := len(r.ops) - sp.cfg.Keep
	if i := slices.Index(r.done, false); i >= 0 {
		k = min(k, i)
	}
	for _, f := range r.faults {
		if f.End == nil {
			i, _ := slices.BinarySearchFunc(r.ops, f.Start, func(o Op, t int64) int {
				switch {
				case o.Call < t:
					return -1
				case o.Call > t:
					return 1
				}
				return 0
			})
			k = min(k, i)
		}
	}
	return max(k, 0)
}

// flush writes out ops[:n] and drops them from memory.
func (sp *spiller) flush(r *Recorder, n int) {
	for i := range r.ops[:n] {
		if err := sp.w.WriteOp(&r.ops[i], r.faults, r.lost); err != nil {
			sp.err = err
			return
		}
	}
	r.ops = slices.Delete(r.ops, 0, n)
	r.done = slices.Delete(r.done, 0, n)
	r.base += n
}

func (sp *spiller) effect(r *Recorder, e Effect) {
	sp.effects++
	e.ID = sp.effects
	if sp.err == nil {
		if err := sp.w.WriteEffect(&e, r.faults, r.lost); err != nil {
			sp.err = err
		}
	}
}

// Ops counts the ops recorded.
func (r *Recorder) Ops() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.base + len(r.ops)
}

// Finish ends the recording. A history that spilled to disk is completed there (every
// op written, the head rewritten with run, the faults and the lost records) and Finish
// returns spilled true with a history holding its run and faults but no ops (nil Ops):
// read the ops from the head with ReadFile or a Scanner. Otherwise it returns the whole
// history, as History does.
func (r *Recorder) Finish(run Run) (h *History, spilled bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	sp := r.spill
	run = r.withGranted(run)
	if sp == nil || sp.w == nil {
		if sp != nil && sp.err != nil {
			return r.historyLocked(run), false, sp.err
		}
		return r.historyLocked(run), false, nil
	}
	if sp.err == nil {
		sp.flush(r, len(r.ops))
	}
	faults := append([]Fault{}, r.faults...)
	var lost []Lost
	if len(r.lost) > 0 {
		lost = append(lost, r.lost...)
	}
	if sp.err != nil {
		return &History{Format: Format, Run: run, Faults: faults, Lost: lost}, true, errors.Join(sp.err, sp.w.Abort(faults, lost))
	}
	err = sp.w.Finish(run, faults, lost)
	return &History{Format: Format, Run: run, Faults: faults, Lost: lost}, true, err
}
