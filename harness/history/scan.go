package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Scanner reads a history a batch of ops at a time, in memory that does not grow with
// the history: a v1 file (any member order), or a segmented history given by its head
// file or by its segments' directory. Each op is checked on its own (Op.Check) as it is
// read; what relates ops to one another (unique write values, read_id, effects'
// write_id, lost records' acquire_id) is the reader's to check, with the helpers
// Validate uses.
//
// The run and the format are known when OpenScanner returns. The faults, effects and
// lost records are known from the start in a segmented history, and in a single file
// once Read has returned io.EOF (TailKnown says which).
type Scanner struct {
	name      string
	hdr       History // no ops
	tailKnown bool
	src       opSource
	segmented bool
	complete  bool
	done      bool
	// read is how many ops were read before this Read: where its ops stand in the file.
	read int
}

type opSource interface {
	// read fills dst with the next ops and returns io.EOF (possibly with n > 0) at the
	// end; a single file's tail is then in tail.
	read(dst []Op) (int, error)
	tail() *History
	close() error
}

// ErrNotStreamable marks a file the Scanner cannot read op by op in bounded memory (two
// ops members, say); read it whole with ReadFile.
var ErrNotStreamable = errors.New("history cannot be read as a stream")

// OpenScanner opens the history at path: a v1 file, the head of a segmented history, a
// run's directory holding history.json, or a directory of ops segments.
func OpenScanner(path string) (*Scanner, error) { return openScanner(path, 1<<20) }

// openScanner is OpenScanner reading a single file through a buffer of bufSize bytes
// to begin with (tests make it small, to cross buffer ends everywhere).
func openScanner(path string, bufSize int) (*Scanner, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		if _, err := os.Stat(filepath.Join(path, "history.json")); err == nil {
			return openScanner(filepath.Join(path, "history.json"), bufSize)
		}
		return openBareSegments(path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	src := &jsonSource{f: f, name: path, buf: make([]byte, bufSize), size: st.Size()}
	src.p.data = src.buf[:0]
	isHead, err := src.open()
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if isHead {
		_ = f.Close()
		return openHead(path)
	}
	s := &Scanner{name: path, src: src, complete: true}
	s.hdr = *src.header()
	if src.prescanned {
		s.tailKnown = true
		s.hdr = *src.tail()
	}
	if err := s.checkHeader(); err != nil {
		_ = f.Close()
		return nil, err
	}
	return s, nil
}

func (s *Scanner) checkHeader() error {
	want := Format
	if s.segmented {
		want = FormatSegments
	}
	if s.hdr.Format != want {
		return fmt.Errorf("%s: field \"format\": got %q, want %q", s.name, s.hdr.Format, want)
	}
	if err := s.hdr.Run.Check(); err != nil {
		return fmt.Errorf("%s: %w", s.name, err)
	}
	if s.tailKnown {
		return s.checkTail()
	}
	return nil
}

func (s *Scanner) checkTail() error {
	err := ValidateFaults(s.hdr.Faults)
	if err == nil {
		err = CheckEffects(s.hdr.Effects)
	}
	if err == nil {
		err = CheckLost(s.hdr.Lost)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", s.name, err)
	}
	return nil
}

// Name is the path the scanner was opened with.
func (s *Scanner) Name() string { return s.name }

// Run is the history's run.
func (s *Scanner) Run() Run { return s.hdr.Run }

// Header is the history without its ops: format (always Format), run, and the faults,
// effects and lost records once TailKnown.
func (s *Scanner) Header() *History {
	h := s.hdr
	h.Format = Format
	return &h
}

// Segmented reports whether the history is segmented.
func (s *Scanner) Segmented() bool { return s.segmented }

// Complete is false for a segmented history whose run stopped before it finished
// writing it (its head does not say complete), or a directory of segments without a
// head: its last line may have been cut short, and is then left out.
func (s *Scanner) Complete() bool { return s.complete }

// TailKnown reports whether Header's faults, effects and lost records are final.
func (s *Scanner) TailKnown() bool { return s.tailKnown }

// Read fills dst with the next ops, each checked on its own, and returns how many; at
// the end it returns io.EOF (possibly with n > 0), and the tail is then known. The ops'
// Return and ReadID point into memory the scanner allocates in slabs: copy an op with
// Clone to keep it long after.
func (s *Scanner) Read(dst []Op) (int, error) {
	if s.done {
		return 0, io.EOF
	}
	n, err := s.src.read(dst)
	for i := range dst[:n] {
		if cerr := dst[i].Check(); cerr != nil {
			return i, fmt.Errorf("%s: %w", s.name, atIndex(cerr, s.read+i))
		}
	}
	s.read += n
	switch {
	case err == io.EOF:
		s.done = true
		if !s.tailKnown {
			s.hdr = *s.src.tail()
			s.tailKnown = true
			if terr := s.checkTail(); terr != nil {
				return n, terr
			}
		}
		return n, io.EOF
	case err != nil:
		return n, fmt.Errorf("%s: %w", s.name, err)
	}
	return n, nil
}

// Close releases the file.
func (s *Scanner) Close() error { return s.src.close() }

// Clone returns a copy of o that shares no memory with it.
func (o Op) Clone() Op {
	if o.Return != nil {
		r := *o.Return
		o.Return = &r
	}
	if o.ReadID != nil {
		r := *o.ReadID
		o.ReadID = &r
	}
	return o
}

// jsonSource streams a single v1 document.
type jsonSource struct {
	f    *os.File
	name string
	size int64
	buf  []byte // buf[:len(p.data)] holds the file from offset base
	base int64
	eof  bool
	p    opParser
	// members is the document without its ops, as the inside of a JSON object, for
	// encoding/json; seen tracks the members read (all of them, ops included).
	members    []byte
	seen       members
	state      int
	prescanned bool
	hdr, tl    *History
	// index is the next op's index in the ops array.
	index int
}

const (
	stHeader = iota
	stOpsFirst
	stOp
	stOpsSep
	stTail
	stDone
)

// off is the file offset of the parser's position.
func (s *jsonSource) off() int64 { return s.base + int64(s.p.i) }

// refill moves the bytes from keep on to the front of the buffer and reads more; it
// reports false at the end of the file.
func (s *jsonSource) refill(keep int) (bool, error) {
	if s.eof {
		return false, nil
	}
	n := copy(s.buf, s.buf[keep:len(s.p.data)])
	s.base += int64(keep)
	s.p.i -= keep
	if n == len(s.buf) { // one value longer than the buffer: grow it
		s.buf = append(s.buf, make([]byte, len(s.buf))...)
		s.buf = s.buf[:cap(s.buf)]
	}
	m, err := io.ReadAtLeast(s.f, s.buf[n:], 1)
	s.p.data = s.buf[:n+m]
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		s.eof = true
		return m > 0, nil
	}
	return true, err
}

// wsRefill skips white space, reading more as needed; false at the end of the file.
func (s *jsonSource) wsRefill() (bool, error) {
	for {
		s.p.ws()
		if s.p.i < len(s.p.data) {
			return true, nil
		}
		more, err := s.refill(s.p.i)
		if err != nil || !more {
			return false, err
		}
	}
}

// open reads the document up to its ops (or to its end if it has none). It reports
// whether the file is the head of a segmented history instead.
func (s *jsonSource) open() (isHead bool, err error) {
	ok, err := s.wsRefill()
	if err != nil {
		return false, err
	}
	if !ok {
		return false, fmt.Errorf("%w: truncated JSON (the file ends before the history object closes)", ErrMalformed)
	}
	for s.p.data[s.p.i] == 'n' && len(s.p.data)-s.p.i < 4 {
		if more, err := s.refill(s.p.i); err != nil {
			return false, err
		} else if !more {
			break
		}
	}
	if bytes.HasPrefix(s.p.data[s.p.i:], []byte("null")) {
		return false, &FieldError{Err: ErrNullRecord, Msg: "null, want the history object"}
	}
	if !s.p.eat('{') {
		return false, s.syntax("want the history object, {")
	}
	if err := s.members_(); err != nil {
		return false, err
	}
	h := s.header()
	if h.Format == FormatSegments {
		return true, nil
	}
	if s.state != stDone && (!s.seen.has("run") || !s.seen.has("format")) {
		// The run comes after the ops: read past them for it, then come back.
		if err := s.prescan(); err != nil {
			return false, err
		}
	}
	return false, nil
}

// members_ parses members up to the ops array's '[' (state stOpsFirst) or the end of
// the document (stDone).
func (s *jsonSource) members_() error {
	first := s.state == stHeader
	for {
		if ok, err := s.wsRefill(); err != nil {
			return err
		} else if !ok {
			return fmt.Errorf("%w: truncated JSON (the file ends before the history object closes)", ErrMalformed)
		}
		if first && s.p.eat('}') {
			return s.end()
		}
		if !first {
			if s.p.eat('}') {
				return s.end()
			}
			if !s.p.eat(',') {
				return s.syntax("want , or } after a member of the history object")
			}
			if ok, err := s.wsRefill(); err != nil {
				return err
			} else if !ok {
				return fmt.Errorf("%w: truncated JSON (the file ends before the history object closes)", ErrMalformed)
			}
		}
		first = false
		isOps, err := s.member()
		if err != nil {
			return err
		}
		if isOps {
			return nil
		}
	}
}

// member parses one member; for the ops member it stops after the '['.
func (s *jsonSource) member() (isOps bool, err error) {
	for {
		start := s.p.i
		key, value, isOps, res := s.tryMember()
		switch res {
		case parsed:
			if isOps {
				if err := s.seen.add("ops", false); err != nil {
					return false, err
				}
				s.state = stOpsFirst
				return true, nil
			}
			return false, s.keep(key, value)
		case parseShort:
			more, err := s.refill(start)
			if err != nil {
				return false, err
			}
			if !more {
				return false, fmt.Errorf("%w: truncated JSON (the file ends before the history object closes)", ErrMalformed)
			}
			s.p.i = 0
		default:
			s.p.i = start
			if string(key) == "ops" && value != nil { // null
				if err := s.seen.add("ops", true); err != nil {
					return false, err
				}
				return false, docShape.missing("", "ops", true)
			}
			if string(key) == "ops" {
				return false, fmt.Errorf("%w: its ops member is not an array", ErrNotStreamable)
			}
			return false, s.describeValue(start, key != nil)
		}
	}
}

// tryMember parses "key": value at the parser's position within the buffer.
func (s *jsonSource) tryMember() (key, value []byte, isOps bool, res parseResult) {
	kb, escaped, res := s.p.stringBytes()
	if res != parsed {
		return nil, nil, false, res
	}
	if escaped {
		var k string
		if err := json.Unmarshal(kb, &k); err != nil {
			return nil, nil, false, parseOther
		}
		key = []byte(k)
	} else {
		key = kb[1 : len(kb)-1]
	}
	s.p.ws()
	if s.p.i >= len(s.p.data) {
		return nil, nil, false, parseShort
	}
	if !s.p.eat(':') {
		return key, nil, false, parseOther
	}
	s.p.ws()
	if s.p.i >= len(s.p.data) {
		return nil, nil, false, parseShort
	}
	if string(key) == "ops" {
		if s.p.data[s.p.i] == 'n' {
			if res := s.p.literal("null"); res != parsed {
				return nil, nil, false, res
			}
			return key, []byte("null"), false, parseOther
		}
		if s.p.data[s.p.i] != '[' {
			return key, nil, false, parseOther
		}
		s.p.i++
		return key, nil, true, parsed
	}
	vstart := s.p.i
	if res := s.p.skip(0); res != parsed {
		return key, nil, false, res
	}
	return key, s.p.data[vstart:s.p.i], false, parsed
}

// keep adds a member other than ops to the document encoding/json decodes, after
// checking its name and, for faults, effects and lost, its records' fields.
func (s *jsonSource) keep(key, value []byte) error {
	if s.prescanned && s.state == stTail {
		return nil // already kept when reading past the ops
	}
	if err := s.seen.add(string(key), string(value) == "null"); err != nil {
		return err
	}
	if sh := recordShapes[string(key)]; sh != nil {
		// A wrong type is encoding/json's error, first (decodeMembers).
		doc := fmt.Appendf(nil, `{%q:%s}`, key, value)
		if json.Unmarshal(doc, &History{}) == nil {
			if err := checkRecords(value, sh, string(key)); err != nil {
				return err
			}
		}
	}
	if len(s.members) > 0 {
		s.members = append(s.members, ',')
	}
	k, _ := json.Marshal(string(key))
	s.members = append(s.members, k...)
	s.members = append(s.members, ':')
	s.members = append(s.members, value...)
	s.hdr = nil
	return nil
}

// end checks that only white space follows the history object.
func (s *jsonSource) end() error {
	for {
		s.p.ws()
		if s.p.i < len(s.p.data) {
			return fmt.Errorf("%w: line %d, column %d: trailing data after the history object", ErrMalformed, s.line(s.off()), s.col(s.off()))
		}
		more, err := s.refill(s.p.i)
		if err != nil {
			return err
		}
		if !more {
			s.state = stDone
			return s.seen.finish(s.header().Format)
		}
	}
}

// header decodes the members kept so far.
func (s *jsonSource) header() *History {
	if s.hdr == nil {
		var h History
		// Every member was checked by skip; a wrong type is reported by tail().
		_ = json.Unmarshal(append(append([]byte{'{'}, s.members...), '}'), &h)
		s.hdr = &h
	}
	return s.hdr
}

// tail is the whole document without its ops.
func (s *jsonSource) tail() *History {
	if s.tl == nil {
		s.tl = s.header()
	}
	return s.tl
}

// decodeMembers decodes the kept members, with encoding/json's error if one has the
// wrong type.
func (s *jsonSource) decodeMembers() error {
	var h History
	if err := json.Unmarshal(append(append([]byte{'{'}, s.members...), '}'), &h); err != nil {
		var typ *json.UnmarshalTypeError
		if errors.As(err, &typ) {
			return fmt.Errorf("%w: field %q: got JSON %s, want %s", ErrMalformed, typ.Field, typ.Value, typ.Type)
		}
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	s.hdr, s.tl = &h, &h
	return nil
}

// prescan reads past the ops array to the end of the document, keeping the members
// after it, then goes back to the first op.
func (s *jsonSource) prescan() error {
	opsAt := s.off()
	scratch := make([]Op, 256)
	for {
		_, err := s.readOps(scratch)
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	if err := s.decodeMembers(); err != nil {
		return err
	}
	if _, err := s.f.Seek(opsAt, io.SeekStart); err != nil {
		return err
	}
	s.base, s.eof, s.p.i = opsAt, false, 0
	s.p.data = s.buf[:0]
	s.state, s.prescanned, s.index = stOpsFirst, true, 0
	return nil
}

func (s *jsonSource) read(dst []Op) (int, error) {
	n, err := s.readOps(dst)
	if err == nil && s.state == stDone {
		err = io.EOF
	}
	if err == io.EOF && !s.prescanned {
		if derr := s.decodeMembers(); derr != nil {
			return n, derr
		}
	}
	return n, err
}

func (s *jsonSource) readOps(dst []Op) (int, error) {
	n := 0
	for n < len(dst) {
		switch s.state {
		case stDone:
			return n, io.EOF
		case stHeader:
			return n, errors.New("history: scanner not opened")
		case stOpsFirst, stOpsSep:
			ok, err := s.wsRefill()
			if err != nil {
				return n, err
			}
			if !ok {
				return n, fmt.Errorf("%w: truncated JSON (the file ends before the history object closes)", ErrMalformed)
			}
			switch {
			case s.p.eat(']'):
				s.state = stTail
				continue
			case s.state == stOpsFirst:
				s.state = stOp
			case s.p.eat(','):
				if _, err := s.wsRefill(); err != nil {
					return n, err
				}
				s.state = stOp
			default:
				return n, s.syntax("want , or ] after an op")
			}
		case stOp:
			start := s.p.i
			dst[n] = Op{}
			switch s.p.op(&dst[n]) {
			case parsed:
				if err := s.p.fieldsError(&dst[n], s.index); err != nil {
					return n, err
				}
				n++
				s.index++
				s.state = stOpsSep
			case parseShort:
				more, err := s.refill(start)
				if err != nil {
					return n, err
				}
				if !more {
					return n, fmt.Errorf("%w: truncated JSON (the file ends before the history object closes)", ErrMalformed)
				}
				s.p.i = 0
			default:
				s.p.i = start
				return n, s.slowOp(&dst[n])
			}
		case stTail:
			if err := s.members_(); err != nil {
				return n, err
			}
			if s.state == stOpsFirst {
				return n, duplicate("", "ops") // members_ stops at an ops member: the second
			}
		}
	}
	return n, nil
}

// slowOp words, with encoding/json, the error in the op at the parser's position,
// which the fast parser did not take, with its position. The fast parser takes every
// op encoding/json decodes, strictly: one it decodes here is refused all the same.
func (s *jsonSource) slowOp(o *Op) error {
	at := s.off()
	dec := json.NewDecoder(io.NewSectionReader(s.f, at, s.size-at))
	*o = Op{}
	if err := dec.Decode(o); err != nil {
		return s.jsonError(at, err, "ops.")
	}
	return fmt.Errorf("%w: ops[%d]: not in the shape of an op", ErrMalformed, s.index)
}

// describeValue words the error in the member value at the parser's position.
func (s *jsonSource) describeValue(start int, haveKey bool) error {
	if !haveKey {
		return s.syntax("want a member name (a string)")
	}
	// Find the value: past the key and the colon.
	p := opParser{data: s.p.data, i: start}
	if _, _, res := p.stringBytes(); res != parsed {
		return s.syntax("want a member name (a string)")
	}
	p.ws()
	if !p.eat(':') {
		s.p.i = p.i
		return s.syntax("want : after a member name")
	}
	p.ws()
	at := s.base + int64(p.i)
	var v any
	err := json.NewDecoder(io.NewSectionReader(s.f, at, s.size-at)).Decode(&v)
	if err == nil {
		err = errors.New("unexpected value")
	}
	return s.jsonError(at, err, "")
}

// jsonError words an encoding/json error of a value decoded from file offset at.
func (s *jsonSource) jsonError(at int64, err error, field string) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return fmt.Errorf("%w: truncated JSON (the file ends before the history object closes)", ErrMalformed)
	case errors.As(err, &syn):
		off := at + syn.Offset - 1
		return fmt.Errorf("%w: line %d, column %d: %v", ErrMalformed, s.line(off), s.col(off), syn)
	case errors.As(err, &typ):
		off := at + typ.Offset
		return fmt.Errorf("%w: line %d, column %d: field %q: got JSON %s, want %s", ErrMalformed, s.line(off), s.col(off), field+typ.Field, typ.Value, typ.Type)
	}
	return fmt.Errorf("%w: %v", ErrMalformed, err)
}

// syntax is a syntax error at the parser's position.
func (s *jsonSource) syntax(want string) error {
	off := s.off()
	return fmt.Errorf("%w: line %d, column %d: %s", ErrMalformed, s.line(off), s.col(off), want)
}

// line and col find the position of file offset off (by reading the file up to it:
// errors only).
func (s *jsonSource) line(off int64) int {
	l, _ := s.position(off)
	return l
}

func (s *jsonSource) col(off int64) int {
	_, c := s.position(off)
	return c
}

func (s *jsonSource) position(off int64) (line, col int) {
	line, col = 1, 1
	r := io.NewSectionReader(s.f, 0, off)
	buf := make([]byte, 64<<10)
	for {
		n, err := r.Read(buf)
		for _, b := range buf[:n] {
			if b == '\n' {
				line++
				col = 1
			} else {
				col++
			}
		}
		if err != nil {
			return line, col
		}
	}
}

func (s *jsonSource) close() error { return s.f.Close() }

// segSource streams the ops segments of a segmented history, line by line.
type segSource struct {
	files    []string
	complete bool
	next     int
	f        *os.File
	name     string
	buf      []byte
	n, pos   int
	eof      bool
	line     int
	p        opParser
	hdr      *History
	// index is the next op's index in the history.
	index int
	// Truncated: the last segment's last line was cut short (the run stopped while
	// writing it) and was left out.
	truncated bool
}

// openHead opens a segmented history by its head file.
func openHead(path string) (*Scanner, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var hd head
	if err := json.Unmarshal(b, &hd); err != nil {
		return nil, fmt.Errorf("%s: %w", path, describeJSONError(b, err))
	}
	if err := checkHead(b); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	dir := filepath.Dir(path)
	src := &segSource{complete: hd.Complete, buf: make([]byte, 1<<20)}
	for _, f := range hd.Segments.Ops {
		if filepath.IsAbs(f) || strings.HasPrefix(filepath.Clean(f), "..") {
			return nil, fmt.Errorf("%s: field \"segments.ops\": %q is not a path inside the history's directory", path, f)
		}
		src.files = append(src.files, filepath.Join(dir, f))
	}
	h := &History{Format: hd.Format, Run: hd.Run, Faults: hd.Faults, Lost: hd.Lost}
	for _, f := range hd.Segments.Effects {
		if filepath.IsAbs(f) || strings.HasPrefix(filepath.Clean(f), "..") {
			return nil, fmt.Errorf("%s: field \"segments.effects\": %q is not a path inside the history's directory", path, f)
		}
		effects, err := readEffects(filepath.Join(dir, f), hd.Complete, len(h.Effects))
		if err != nil {
			return nil, err
		}
		h.Effects = append(h.Effects, effects...)
	}
	src.hdr = h
	s := &Scanner{name: path, hdr: *h, tailKnown: true, src: src, segmented: true, complete: hd.Complete}
	if err := s.checkHeader(); err != nil {
		return nil, err
	}
	return s, nil
}

// openBareSegments opens a directory of ops segments without a head: a run that did
// not get to write one. Its run is unknown (the strict fence) and it has no faults.
func openBareSegments(dir string) (*Scanner, error) {
	files, err := filepath.Glob(filepath.Join(dir, "ops-*.jsonl"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: a directory without history.json or ops segments (ops-*.jsonl)", dir)
	}
	slices.Sort(files)
	h := &History{Format: FormatSegments, Faults: []Fault{}}
	src := &segSource{files: files, buf: make([]byte, 1<<20), hdr: h}
	return &Scanner{name: dir, hdr: *h, tailKnown: true, src: src, segmented: true}, nil
}

// checkHead checks the fields of a segmented history's head (valid JSON).
func checkHead(b []byte) error {
	return checkObject(b, headShape, "", func(name string, p *opParser) error {
		start := p.i
		p.skip(0)
		v := p.data[start:p.i]
		if name == "segments" {
			return checkObject(v, segmentsShape, "segments", nil)
		}
		if sh := recordShapes[name]; sh != nil {
			return checkRecords(v, sh, name)
		}
		return nil
	})
}

// readEffects reads an effects segment whole (effects are few next to ops); the
// segments before it held index effects.
func readEffects(path string, complete bool, index int) ([]Effect, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []Effect
	for i, line := range bytes.Split(b, []byte{'\n'}) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var e Effect
		if err := json.Unmarshal(line, &e); err != nil {
			if !complete && i == bytes.Count(b, []byte{'\n'}) {
				break // the last line, cut short by a run that stopped
			}
			return nil, fmt.Errorf("%s: line %d: %w", path, i+1, describeJSONError(line, err))
		}
		where := recordWhere(line, fmt.Sprintf("effects[%d]", index+len(out)))
		if err := checkObject(line, effectShape, where, nil); err != nil {
			return nil, fmt.Errorf("%s: line %d: %w", path, i+1, err)
		}
		out = append(out, e)
	}
	return out, nil
}

func (s *segSource) tail() *History { return s.hdr }

func (s *segSource) close() error {
	if s.f != nil {
		err := s.f.Close()
		s.f = nil
		return err
	}
	return nil
}

func (s *segSource) read(dst []Op) (int, error) {
	n := 0
	for n < len(dst) {
		if s.f == nil {
			if s.next == len(s.files) {
				return n, io.EOF
			}
			f, err := os.Open(s.files[s.next])
			if err != nil {
				return n, err
			}
			s.f, s.name = f, s.files[s.next]
			s.next++
			s.n, s.pos, s.eof, s.line = 0, 0, false, 0
		}
		j := bytes.IndexByte(s.buf[s.pos:s.n], '\n')
		var line []byte
		switch {
		case j >= 0:
			line = s.buf[s.pos : s.pos+j]
			s.pos += j + 1
		case !s.eof:
			if err := s.refill(); err != nil {
				return n, err
			}
			continue
		default: // the file's last line has no newline
			line = s.buf[s.pos:s.n]
			s.pos = s.n
			if err := s.close(); err != nil {
				return n, err
			}
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			if !s.complete && s.next == len(s.files) && !json.Valid(line) {
				s.truncated = true
				continue
			}
		}
		s.line++
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if err := s.parse(line, &dst[n]); err != nil {
			return n, err
		}
		n++
		s.index++
	}
	return n, nil
}

func (s *segSource) refill() error {
	m := copy(s.buf, s.buf[s.pos:s.n])
	s.n, s.pos = m, 0
	if s.n == len(s.buf) {
		s.buf = append(s.buf, make([]byte, len(s.buf))...)
		s.buf = s.buf[:cap(s.buf)]
	}
	k, err := s.f.Read(s.buf[s.n:])
	s.n += k
	if err == io.EOF {
		s.eof = true
		return nil
	}
	return err
}

// parse decodes one line's op: the fast parser, or encoding/json for the rest and the
// error.
func (s *segSource) parse(line []byte, o *Op) error {
	*o = Op{}
	if string(bytes.TrimSpace(line)) == "null" {
		return fmt.Errorf("%s: line %d: %w", s.name, s.line, &FieldError{Where: fmt.Sprintf("ops[%d]", s.index), Err: ErrNullRecord, Msg: "null, want an op object"})
	}
	s.p.data, s.p.i = line, 0
	s.p.ws()
	if s.p.op(o) == parsed {
		s.p.ws()
		if s.p.i == len(line) {
			if err := s.p.fieldsError(o, s.index); err != nil {
				return fmt.Errorf("%s: line %d: %w", s.name, s.line, err)
			}
			return nil
		}
	}
	*o = Op{}
	err := json.Unmarshal(line, o)
	if err == nil { // the fast parser takes every op encoding/json decodes, strictly
		return fmt.Errorf("%s: line %d: %w: not in the shape of an op", s.name, s.line, ErrMalformed)
	}
	return fmt.Errorf("%s: line %d: %w", s.name, s.line, describeJSONError(line, err))
}
