package models

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/harness/history"
)

// ErrInvalid marks a history that is not a valid v1 history (malformed, or failing
// validation): the caller's input, not the checker's failure. The error's message is
// the history package's, which names the file, the op and the field.
var ErrInvalid = errors.New("invalid history")

type invalidError struct{ err error }

func (e invalidError) Error() string   { return e.err.Error() }
func (e invalidError) Unwrap() []error { return []error{ErrInvalid, e.err} }

func invalid(err error) error { return invalidError{err} }

// FileResult is a checked history file.
type FileResult struct {
	Report *Report
	// History is the history whole when it was checked in memory; when it was
	// streamed, only its run, faults, effects and lost records (no ops).
	History *history.History
	// Streamed says it was checked as a stream (Report.Ops counts its ops).
	Streamed bool
}

// DefaultStreamAbove is the size above which CheckFile streams a history file: about
// 50,000 ops, beyond which porcupine's second opinion would be skipped for most
// properties anyway (its memory grows as n², Options.PorcupineMaxBytes).
const DefaultStreamAbove int64 = 8 << 20

func (o Options) streamAbove() int64 {
	if o.StreamAbove == 0 {
		return DefaultStreamAbove
	}
	return o.StreamAbove
}

// CheckFile checks the history at path — a v1 file, or a segmented history (its head,
// its run's directory or its segments' directory) — as Check does. A file of at most
// Options.StreamAbove bytes is read whole and checked in memory, with porcupine's
// second opinion; a larger one, and every segmented history, is checked as a stream,
// in memory that grows with the ops in flight rather than with the history (the
// verdicts are the direct analysis's, each violation certified on a witness kept from
// the stream; the second opinion is skipped, with a note). A history the stream cannot
// take (ops far out of call order, a read_id naming a read long past) is checked in
// memory instead. Errors wrap ErrInvalid when the history is at fault.
func CheckFile(ctx context.Context, path string, opt Options) (*FileResult, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, invalid(err)
	}
	if head := filepath.Join(path, "history.json"); st.IsDir() {
		if hst, err := os.Stat(head); err == nil {
			path, st = head, hst // a run's directory: its history
		}
	}
	if !st.IsDir() && opt.streamAbove() > 0 && st.Size() <= opt.streamAbove() {
		sc, err := history.OpenScanner(path)
		if err != nil {
			return nil, invalid(err)
		}
		segmented := sc.Segmented()
		_ = sc.Close()
		if !segmented {
			return checkInMemory(ctx, path, opt)
		}
	}
	res, err := checkStreamed(ctx, path, opt)
	if errors.Is(err, errNeedsMemory) || errors.Is(err, history.ErrNotStreamable) {
		return checkInMemory(ctx, path, opt)
	}
	return res, err
}

func checkInMemory(ctx context.Context, path string, opt Options) (*FileResult, error) {
	h, err := history.ReadFile(path)
	if err != nil {
		return nil, invalid(err)
	}
	rep, err := Check(ctx, h, opt)
	if err != nil {
		return nil, err
	}
	return &FileResult{Report: rep, History: h}, nil
}

// checkStreamed checks the history at path as a stream. A first run looks ahead for
// the readers of each unknown write; if one comes later than the look-ahead reaches,
// a pass collects every unknown write's readers and the analysis runs again; and a
// single file whose effects or lost records come after its ops is read again with them
// known.
func checkStreamed(ctx context.Context, path string, opt Options) (*FileResult, error) {
	res, err := streamSelect(ctx, func() (opSource, error) { return history.OpenScanner(path) }, opt.Select)
	if errors.Is(err, ErrInvalid) && !strings.HasPrefix(err.Error(), path+": ") {
		err = invalid(fmt.Errorf("%s: %w", path, err))
	}
	return res, err
}

// opSource is what the streaming analysis reads: a history.Scanner, or in tests a
// history in memory.
type opSource interface {
	Read(dst []history.Op) (int, error)
	Header() *history.History
	TailKnown() bool
	Close() error
}

// streamSelect checks the history open gives as a stream, with the opt-in properties
// sel asked for (open may be called more than once: see checkStreamed).
func streamSelect(ctx context.Context, open func() (opSource, error), sel []Property) (*FileResult, error) {
	began := time.Now()
	var seenAll map[keyValue]seenInfo
	var tail *history.History
	for {
		sc, err := open()
		if err != nil {
			return nil, invalid(err)
		}
		hdr := sc.Header()
		known := sc.TailKnown()
		if tail != nil {
			hdr.Effects, hdr.Lost, known = tail.Effects, tail.Lost, true
		}
		c := newStreamChecker(hdr, sel)
		c.seenAll = seenAll
		if known && len(hdr.Effects) > 0 {
			c.effects = newEffectIndex(hdr.Effects)
		}
		if known && len(hdr.Lost) > 0 {
			c.lost = newLostIndex(hdr.Lost)
			c.lostAt = earliestLost(hdr.Lost)
		}
		err = feed(ctx, sc, c, seenAll == nil)
		final := sc.Header()
		_ = sc.Close()
		switch {
		case errors.Is(err, errLateSeen):
			if seenAll, err = collectSeen(ctx, open); err != nil {
				return nil, err
			}
			continue
		case err != nil:
			return nil, classify(err)
		case !known && (len(final.Effects) > 0 || len(final.Lost) > 0):
			tail = final
			continue
		}
		if tail != nil {
			final.Effects, final.Lost = tail.Effects, tail.Lost
		}
		for _, f := range final.Faults {
			c.faultsEnd = max(c.faultsEnd, f.Start)
			if f.End != nil {
				c.faultsEnd = max(c.faultsEnd, *f.End)
			}
		}
		c.lastTime = max(c.lastTime, c.faultsEnd)
		c.finish()
		if c.effects != nil {
			if err := c.effects.check(); err != nil {
				return nil, classify(err)
			}
		}
		if c.lost != nil {
			if err := c.lost.check(); err != nil {
				return nil, classify(err)
			}
		}
		if c.err != nil {
			return nil, classify(c.err)
		}
		rep := c.report(ctx, final, began)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("check: %w", err)
		}
		final.Ops = nil
		return &FileResult{Report: rep, History: final, Streamed: true}, nil
	}
}

// classify marks the history's errors as ErrInvalid.
func classify(err error) error {
	switch {
	case errors.Is(err, errNeedsMemory), errors.Is(err, history.ErrNotStreamable),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	return invalid(err)
}

// batchOps is how many ops the decoder hands over at a time; lookAhead is how many
// ops the analysis lets the decoder run ahead, to find the readers of unknown writes
// and to put ops slightly out of call order back in order.
const (
	batchOps  = 4096
	lookAhead = 1 << 14
)

// feed decodes the scanner's ops in a goroutine of its own and hands them to c in
// call order.
func feed(ctx context.Context, sc opSource, c *streamChecker, lookahead bool) error {
	type batch struct {
		ops []history.Op
		n   int
		err error
	}
	ch := make(chan batch, 4)
	// Batches go back and forth; the first are small, so a small history costs little.
	free := make(chan []history.Op, 6)
	made, size := 0, 64
	dctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	wg.Go(func() {
		defer close(ch)
		for {
			var buf []history.Op
			select {
			case buf = <-free:
			default:
				if made < cap(free) {
					made++
					buf = make([]history.Op, size)
					size = min(2*size, batchOps)
					break
				}
				select {
				case buf = <-free:
				case <-dctx.Done():
					return
				}
			}
			n, err := sc.Read(buf)
			select {
			case ch <- batch{buf, n, err}:
			case <-dctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	})
	win := &window{}
	// The unknown writes in the window, by value (values are unique), with the readers
	// decoded after them.
	type ahead struct {
		key  string
		seen seenInfo
	}
	var unk map[string]*ahead
	if lookahead {
		unk = map[string]*ahead{}
		c.ahead = func(key, value string) seenInfo {
			if a := unk[value]; a != nil && a.key == key {
				return a.seen
			}
			return seenInfo{}
		}
	}
	process := func() error {
		o := win.pop()
		err := c.add(o)
		if len(unk) > 0 && o.Kind == history.Write && o.Status == history.Unknown {
			delete(unk, o.Value)
		}
		return err
	}
	for b := range ch {
		for i := range b.ops[:b.n] {
			o := &b.ops[i]
			if err := c.decoded(o); err != nil {
				return err
			}
			if unk != nil {
				switch {
				case o.Kind == history.Write && o.Status == history.Unknown:
					unk[o.Value] = &ahead{key: o.Key}
				case len(unk) > 0 && o.Kind == history.Read && o.Status == history.OK && o.Value != "":
					if a := unk[o.Value]; a != nil && a.key == o.Key {
						a.seen.add(*o.Return, o.ID)
					}
				}
			}
			win.push(o)
			for win.len() > lookAhead {
				if err := process(); err != nil {
					return err
				}
			}
		}
		select {
		case free <- b.ops:
		default:
		}
		if b.err == io.EOF {
			break
		}
		if b.err != nil {
			return b.err
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("check: %w", err)
		}
	}
	for win.len() > 0 {
		if err := process(); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// window holds the decoded ops not yet analysed, in (call, id) order: an op decoded
// after ops it should precede is moved back among them.
type window struct {
	buf  []history.Op
	head int
	n    int
}

func (w *window) len() int { return w.n }

func (w *window) at(i int) *history.Op { return &w.buf[(w.head+i)%len(w.buf)] }

func (w *window) push(o *history.Op) {
	if w.n == len(w.buf) {
		nb := make([]history.Op, max(2*len(w.buf), 1024))
		for i := range w.n {
			nb[i] = *w.at(i)
		}
		w.buf, w.head = nb, 0
	}
	*w.at(w.n) = *o
	w.n++
	for i := w.n - 1; i > 0; i-- {
		a, b := w.at(i-1), w.at(i)
		if a.Call < b.Call || a.Call == b.Call && a.ID <= b.ID {
			break
		}
		*a, *b = *b, *a
	}
}

func (w *window) pop() *history.Op {
	o := w.at(0)
	w.head = (w.head + 1) % len(w.buf)
	w.n--
	return o
}

// collectSeen reads the history once for every unknown write's first reader.
func collectSeen(ctx context.Context, open func() (opSource, error)) (map[keyValue]seenInfo, error) {
	sc, err := open()
	if err != nil {
		return nil, invalid(err)
	}
	defer func() { _ = sc.Close() }()
	unk := map[keyValue]*seenInfo{}
	// Reads of a value no recent write wrote: they may belong to an unknown write that
	// comes later in the file.
	early := map[keyValue]*seenInfo{}
	recent := map[keyValue]int{}
	var ring []keyValue
	next := 0
	buf := make([]history.Op, batchOps)
	for {
		n, rerr := sc.Read(buf)
		for i := range buf[:n] {
			o := &buf[i]
			kv := keyValue{o.Key, o.Value}
			switch {
			case o.Kind == history.Write:
				if o.Status == history.Unknown {
					si := &seenInfo{}
					if e := early[kv]; e != nil {
						*si = *e
						delete(early, kv)
					}
					unk[kv] = si
				}
				if len(ring) < lookAhead {
					ring = append(ring, kv)
				} else {
					if recent[ring[next]]--; recent[ring[next]] == 0 {
						delete(recent, ring[next])
					}
					ring[next] = kv
					next = (next + 1) % lookAhead
				}
				recent[kv]++
			case o.Kind == history.Read && o.Status == history.OK && o.Value != "":
				if si := unk[kv]; si != nil {
					si.add(*o.Return, o.ID)
				} else if recent[kv] == 0 {
					e := early[kv]
					if e == nil {
						e = &seenInfo{}
						early[kv] = e
					}
					e.add(*o.Return, o.ID)
				}
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return nil, classify(rerr)
		}
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("check: %w", err)
		}
	}
	out := make(map[keyValue]seenInfo, len(unk))
	for kv, si := range unk {
		if si.seen {
			out[kv] = *si
		}
	}
	return out, nil
}

// report turns the streamed analysis into a Report: the direct analysis's verdicts,
// each violation certified on its capture, porcupine's second opinion skipped.
func (c *streamChecker) report(ctx context.Context, h *history.History, began time.Time) *Report {
	d := c.result()
	results := make([]Result, len(c.plugins))
	for i, p := range c.plugins {
		results[i] = directResult(p, h, c.ops, d)
	}
	directTook := time.Since(began)
	for i, p := range c.plugins {
		r := &results[i]
		switch {
		case declaredNoToken(p.name(), h):
			if r.Verdict == Violated {
				r.Certified, r.CertifyNote = true, noTokenNote
			}
			r.Porcupine, r.PorcupineNote = OpinionSkipped, noTokenNote
			continue
		case !p.name().HasModel():
			if r.Verdict == Violated {
				noModelWitness(r)
			}
			continue
		case r.Verdict == Violated:
			ks := c.keyFor(d.Findings[p.name()].Key)
			ks.wit.certifyCapture(ctx, c, ks, r)
		}
		r.Porcupine = OpinionSkipped
		r.PorcupineNote = fmt.Sprintf("skipped: the history was checked as a stream (%d ops); porcupine's second opinion needs it whole in memory, and its memory grows as n²", c.ops)
	}
	rep := &Report{
		Verdicts:    make(map[Property]Verdict, len(Properties)),
		Results:     results,
		StaleWrites: d.StaleWrites,
		LostUpdates: d.LostUpdates,
		Evidence:    d.Evidence,
		Agree:       true,
		DirectNanos: directTook.Nanoseconds(),
		Ops:         c.ops,
	}
	for _, p := range plugins { // the properties judged on the whole history (effects.go)
		if w, ok := p.(wholeChecker); ok && checked(p, h, c.sel) {
			rep.Results = append(rep.Results, w.judgeStream(c, h, d, rep))
		}
	}
	rep.order()
	return rep
}

// keyFor is the key state a finding's key names ("" in a single-key history).
func (c *streamChecker) keyFor(key string) *keyState {
	if len(c.order) == 1 {
		return c.order[0]
	}
	return c.keys[key]
}

// effectIndex joins a streamed history's effects with its writes.
type effectIndex struct {
	effects   []history.Effect
	delivered map[string]bool
	byWriteID map[int][]int
	writes    map[string]*history.Op // the write of each delivered value
	named     map[int]bool           // write_ids found
	seen      map[string]bool        // unknown writes an ok read saw
	without   int
	err       error
}

func newEffectIndex(effects []history.Effect) *effectIndex {
	x := &effectIndex{effects: effects, delivered: map[string]bool{}, byWriteID: map[int][]int{},
		writes: map[string]*history.Op{}, named: map[int]bool{}, seen: map[string]bool{}}
	for i, e := range effects {
		x.delivered[e.Value] = true
		if e.WriteID != nil {
			x.byWriteID[*e.WriteID] = append(x.byWriteID[*e.WriteID], i)
		}
	}
	return x
}

// write notes a write (at its call; the register has classified it).
func (x *effectIndex) write(c *streamChecker, s *sop) {
	if x.delivered[s.value] && x.writes[s.value] == nil {
		o := s.op()
		x.writes[s.value] = &o
		if s.status == history.Unknown {
			if w := c.key(s.key).reg.vals[s.value]; w != nil && w.accepted {
				x.seen[s.value] = true
			}
		}
	}
	if s.status == history.OK && !x.delivered[s.value] {
		x.without++
	}
}

// op checks the effects whose write_id names op s.
func (x *effectIndex) op(s *sop) {
	for _, i := range x.byWriteID[s.id] {
		x.named[i] = true
		o := s.op()
		if err := x.effects[i].CheckWrite(i, &o); err != nil && x.err == nil {
			x.err = err
		}
	}
}

func (x *effectIndex) check() error {
	if x.err != nil {
		return x.err
	}
	for i, e := range x.effects {
		if e.WriteID != nil && !x.named[i] {
			return e.CheckWrite(i, nil)
		}
	}
	return nil
}

func (x *effectIndex) judge(h *history.History, ops int, d *DirectResult, newer map[int]int) (Result, *EffectsReport) {
	lookup := func(e history.Effect) *history.Op { return x.writes[e.Value] }
	return judgeEffects(x.effects, h, ops, d, lookup, func(v string) bool { return x.seen[v] }, newer, x.without)
}

// lostIndex checks a streamed history's lost records against its acquires.
type lostIndex struct {
	lost  []history.Lost
	byID  map[int][]int
	found map[int]bool
	err   error
}

func newLostIndex(lost []history.Lost) *lostIndex {
	x := &lostIndex{lost: lost, byID: map[int][]int{}, found: map[int]bool{}}
	for i, l := range lost {
		x.byID[l.AcquireID] = append(x.byID[l.AcquireID], i)
	}
	return x
}

func (x *lostIndex) op(s *sop) {
	for _, i := range x.byID[s.id] {
		x.found[i] = true
		o := s.op()
		if err := x.lost[i].CheckAcquire(i, &o); err != nil && x.err == nil {
			x.err = err
		}
	}
}

func (x *lostIndex) check() error {
	if x.err != nil {
		return x.err
	}
	for i, l := range x.lost {
		if !x.found[i] {
			return l.CheckAcquire(i, nil)
		}
	}
	return nil
}
