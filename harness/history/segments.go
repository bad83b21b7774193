package history

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// A segmented history is how a long run writes its history without holding it in
// memory (docs/history-format.md, "Segmented histories"): a head file, history.json,
// whose format is FormatSegments, next to a directory of ops segments — JSON lines,
// one op per line in the v1 op shape, in id order — rotated every so many ops, and, if
// the run had side effects, effects segments of the same kind. The head carries the
// run, the faults and the lost records, and lists the segments; it is rewritten (to a
// temporary file, then renamed) at every rotation, so that a run that dies leaves a
// readable history of every op up to the last line it wrote.

// FormatSegments is the "format" of the head of a segmented history. It is not Format,
// so that a version of fencecheck that does not know segments refuses the head rather
// than reading it as a history without ops.
const FormatSegments = "fencecheck.history/v1+segments"

// SegmentsDir is the directory, next to the head, that holds the segments.
const SegmentsDir = "history"

// head is the head file of a segmented history.
type head struct {
	Format string `json:"format"`
	Run    Run    `json:"run"`
	// Segments names the segment files, relative to the head's directory, in order.
	Segments segmentList `json:"segments"`
	// Ops counts the ops in all segments; Complete is set by the last rewrite, when the
	// run has ended. A head without it belongs to a run that stopped while writing.
	Ops      int     `json:"op_count"`
	Complete bool    `json:"complete"`
	Faults   []Fault `json:"faults"`
	Lost     []Lost  `json:"lost,omitempty"`
}

type segmentList struct {
	Ops     []string `json:"ops"`
	Effects []string `json:"effects,omitempty"`
}

// SegmentWriter writes a segmented history: ops and effects are appended as they come
// and rotated every PerSegment ops; the head is rewritten at each rotation and by
// Finish. It is not safe for concurrent use (the Recorder calls it under its lock).
type SegmentWriter struct {
	headPath   string
	dir        string // the segments' directory
	run        Run
	perSegment int

	ops, effects segmentFile
	n            int
	list         segmentList
	// effectsFor is the number of ops segments when the current effects segment was
	// started: effects segments rotate with the ops segments.
	effectsFor int
}

// segmentFile is the JSON-lines file being appended to.
type segmentFile struct {
	f     *os.File
	w     *bufio.Writer
	lines int
}

func (s *segmentFile) close() error {
	if s.f == nil {
		return nil
	}
	err := s.w.Flush()
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	s.f, s.w, s.lines = nil, nil, 0
	return err
}

// CreateSegments starts a segmented history whose head is headPath (its segments go
// to the directory SegmentsDir next to it), rotating every perSegment ops.
func CreateSegments(headPath string, run Run, perSegment int) (*SegmentWriter, error) {
	if perSegment <= 0 {
		return nil, fmt.Errorf("segments: %d ops per segment", perSegment)
	}
	dir := filepath.Join(filepath.Dir(headPath), SegmentsDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	w := &SegmentWriter{headPath: headPath, dir: dir, run: run, perSegment: perSegment}
	if err := w.writeHead(nil, nil, false); err != nil {
		return nil, err
	}
	return w, nil
}

// Ops is how many ops have been written.
func (w *SegmentWriter) Ops() int { return w.n }

// WriteOp appends op o. Ops must come in id order. It rotates the ops segment when it
// is full, rewriting the head with faults and lost as they stand.
func (w *SegmentWriter) WriteOp(o *Op, faults []Fault, lost []Lost) error {
	if w.ops.f != nil && w.ops.lines >= w.perSegment {
		if err := w.ops.close(); err != nil {
			return err
		}
		if err := w.writeHead(faults, lost, false); err != nil {
			return err
		}
	}
	if w.ops.f == nil {
		if err := w.open(&w.ops, "ops", &w.list.Ops, faults, lost); err != nil {
			return err
		}
	}
	if err := writeLine(&w.ops, o); err != nil {
		return err
	}
	w.n++
	return nil
}

// WriteEffect appends effect e, in the effects segment of the current ops segment.
func (w *SegmentWriter) WriteEffect(e *Effect, faults []Fault, lost []Lost) error {
	if w.effects.f != nil && w.effectsFor < len(w.list.Ops) {
		if err := w.effects.close(); err != nil {
			return err
		}
	}
	if w.effects.f == nil {
		w.effectsFor = len(w.list.Ops)
		if err := w.open(&w.effects, "effects", &w.list.Effects, faults, lost); err != nil {
			return err
		}
	}
	return writeLine(&w.effects, e)
}

func (w *SegmentWriter) open(s *segmentFile, kind string, list *[]string, faults []Fault, lost []Lost) error {
	name := fmt.Sprintf("%s-%06d.jsonl", kind, len(*list)+1)
	f, err := os.Create(filepath.Join(w.dir, name))
	if err != nil {
		return err
	}
	s.f, s.w = f, bufio.NewWriterSize(f, 256<<10)
	*list = append(*list, filepath.Join(SegmentsDir, name))
	return w.writeHead(faults, lost, false) // the head names every segment as it starts
}

func writeLine(s *segmentFile, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if _, err := s.w.Write(b); err != nil {
		return err
	}
	s.lines++
	return nil
}

// Flush writes out what is buffered and rewrites the head with faults and lost as
// they stand, so that a reader sees every op written so far.
func (w *SegmentWriter) Flush(faults []Fault, lost []Lost) error {
	for _, s := range []*segmentFile{&w.ops, &w.effects} {
		if s.w != nil {
			if err := s.w.Flush(); err != nil {
				return err
			}
		}
	}
	return w.writeHead(faults, lost, false)
}

// Finish closes the segments and writes the head of the complete history.
func (w *SegmentWriter) Finish(run Run, faults []Fault, lost []Lost) error {
	err := errors.Join(w.ops.close(), w.effects.close())
	if err != nil {
		return err
	}
	w.run = run
	return w.writeHead(faults, lost, true)
}

// Abort closes the segments without completing the head (the run failed; what was
// written stays readable).
func (w *SegmentWriter) Abort(faults []Fault, lost []Lost) error {
	return errors.Join(w.ops.close(), w.effects.close(), w.writeHead(faults, lost, false))
}

func (w *SegmentWriter) writeHead(faults []Fault, lost []Lost, complete bool) error {
	if faults == nil {
		faults = []Fault{}
	}
	hd := head{Format: FormatSegments, Run: w.run, Segments: w.list, Ops: w.n, Complete: complete, Faults: faults, Lost: lost}
	if hd.Segments.Ops == nil {
		hd.Segments.Ops = []string{}
	}
	b, err := json.MarshalIndent(hd, "", " ")
	if err != nil {
		return err
	}
	tmp := w.headPath + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, w.headPath)
}

// SetSegmentsRun rewrites the run of the segmented history whose head is headPath
// (what a run learns only at its end, once the recorder has finished).
func SetSegmentsRun(headPath string, run Run) error {
	b, err := os.ReadFile(headPath)
	if err != nil {
		return err
	}
	var hd head
	if err := json.Unmarshal(b, &hd); err != nil {
		return fmt.Errorf("%s: %w", headPath, err)
	}
	if hd.Format != FormatSegments {
		return fmt.Errorf("%s: not the head of a segmented history", headPath)
	}
	hd.Run = run
	b, err = json.MarshalIndent(hd, "", " ")
	if err != nil {
		return err
	}
	tmp := headPath + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, headPath)
}
