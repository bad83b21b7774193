package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// runFields are the Run fields with names of their own; everything else is Extra.
var runFields = []string{"scenario", "backend", "resource", "fence", "seed", "ttl_ms", "no_fencing_token", "faults", "random_faults", "granted_ttl_ms", "server_version", "session_timeouts", "client_library"}

type runAlias Run

// MarshalJSON writes the named fields and the free-form Extra fields in one object.
func (r Run) MarshalJSON() ([]byte, error) {
	named, err := json.Marshal(runAlias(r))
	if err != nil {
		return nil, err
	}
	if len(r.Extra) == 0 {
		return named, nil
	}
	m := make(map[string]any, len(r.Extra)+len(runFields))
	for k, v := range r.Extra {
		m[k] = v
	}
	var n map[string]any
	if err := json.Unmarshal(named, &n); err != nil {
		return nil, err
	}
	for k, v := range n {
		m[k] = v
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads the named fields and keeps the rest in Extra.
func (r *Run) UnmarshalJSON(b []byte) error {
	var a runAlias
	if err := json.Unmarshal(b, &a); err != nil {
		return err
	}
	var all map[string]any
	if err := json.Unmarshal(b, &all); err != nil {
		return err
	}
	for _, k := range runFields {
		delete(all, k)
	}
	*r = Run(a)
	if len(all) > 0 {
		r.Extra = all
	}
	return nil
}

// Encode writes h as indented JSON.
func Encode(w io.Writer, h *History) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	if h.Ops == nil || h.Faults == nil { // a history lists both, empty if none
		c := *h
		if c.Ops == nil {
			c.Ops = []Op{}
		}
		if c.Faults == nil {
			c.Faults = []Fault{}
		}
		h = &c
	}
	return enc.Encode(h)
}

// Decode reads and validates one history. name is used in error messages (a file
// name, or "-" for standard input).
func Decode(r io.Reader, name string) (*History, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return decodeBytes(data, name)
}

// errSegmentsHead: the bytes are the head of a segmented history, which is read from
// its path (the segments are files next to it).
var errSegmentsHead = errors.New("the head of a segmented history: give its path to read it with its segments")

// decodeBytes decodes and validates one history held in memory: the fast parser for
// anything it takes, encoding/json (and its error messages) for the rest.
func decodeBytes(data []byte, name string) (*History, error) {
	h, ok, err := decodeFast(data)
	if !ok {
		h, err = decodeJSON(data)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if h.Format == FormatSegments {
		return nil, fmt.Errorf("%s: %w", name, errSegmentsHead)
	}
	if err := h.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return h, nil
}

// decodeJSON words the error in a history the fast parser did not take, with
// encoding/json. The fast parser takes every document encoding/json decodes, reading
// it strictly, so one that encoding/json decodes here is refused all the same: it
// could only be read leniently.
func decodeJSON(data []byte) (*History, error) {
	var h History
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&h); err != nil {
		return nil, describeJSONError(data, err)
	}
	if after := data[dec.InputOffset():]; len(bytes.TrimSpace(after)) > 0 {
		line, col := position(data, int64(len(data)-len(bytes.TrimLeft(after, " \t\r\n"))))
		return nil, fmt.Errorf("%w: line %d, column %d: trailing data after the history object", ErrMalformed, line, col)
	}
	return nil, fmt.Errorf("%w: not in the shape of a v1 history", ErrMalformed)
}

// ReadFile decodes and validates the history at path, whole: a v1 file, or a segmented
// history (its head, its run's directory or its segments' directory; see Scanner).
func ReadFile(path string) (*History, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return readScanner(path)
	}
	// One allocation of the file's size, rather than io.ReadAll's doubling.
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	h, err := decodeBytes(data, path)
	if errors.Is(err, errSegmentsHead) {
		return readScanner(path)
	}
	return h, err
}

// readScanner reads a history whole with a Scanner.
func readScanner(path string) (*History, error) {
	sc, err := OpenScanner(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = sc.Close() }()
	var ops []Op
	buf := make([]Op, 4096)
	for {
		n, err := sc.Read(buf)
		ops = append(ops, buf[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	h := sc.Header()
	h.Ops = ops
	if h.Ops == nil {
		h.Ops = []Op{}
	}
	if err := h.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return h, nil
}

// WriteFile writes h to path.
func WriteFile(path string, h *History) error {
	var buf bytes.Buffer
	if err := Encode(&buf, h); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// ErrMalformed marks a history that is not valid JSON of the v1 shape.
var ErrMalformed = errors.New("malformed history")

func describeJSONError(data []byte, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return fmt.Errorf("%w: truncated JSON (the file ends before the history object closes)", ErrMalformed)
	case errors.As(err, &syn):
		line, col := position(data, syn.Offset-1) // Offset is just past the bad byte
		return fmt.Errorf("%w: line %d, column %d: %v", ErrMalformed, line, col, syn)
	case errors.As(err, &typ):
		line, col := position(data, typ.Offset)
		return fmt.Errorf("%w: line %d, column %d: field %q: got JSON %s, want %s",
			ErrMalformed, line, col, typ.Field, typ.Value, typ.Type)
	default:
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
}

func position(data []byte, off int64) (line, col int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	line, col = 1, 1
	for _, b := range data[:off] {
		if b == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return line, col
}
