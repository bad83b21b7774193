package history

import (
	"errors"
	"fmt"
	"strings"

	"github.com/fencecheck/fencecheck/internal/editdist"
)

// A v1 history is read strictly (docs/history-format.md, "Fields"): a member or field
// the format does not define, a field given twice, or a required field that is absent
// or null is an error naming the record and the field, never a default. A misspelled
// "tokn" read as token 0 would change the verdict. The run object is the one open
// place: its free-form members are kept in Run.Extra.

// Errors a FieldError wraps.
var (
	// ErrUnknownField: a member or field the format does not define.
	ErrUnknownField = errors.New("unknown field")
	// ErrMissingField: a required field is absent or null.
	ErrMissingField = errors.New("missing field")
	// ErrDuplicateField: a field given twice in one object.
	ErrDuplicateField = errors.New("duplicate field")
	// ErrNullRecord: an array element that is null instead of a record.
	ErrNullRecord = errors.New("null record")
)

// FieldError is a strictness error: Where names the record ("op 3 (ops[2])",
// "faults[0]", "effects[1] (id 2)", "lost[0]"; "" for the document itself), Field the
// field, Err the kind of error, Msg the words.
type FieldError struct {
	Where string
	Field string
	Err   error
	Msg   string
}

func (e *FieldError) Error() string {
	var b strings.Builder
	if e.Where != "" {
		b.WriteString(e.Where)
		b.WriteString(": ")
	}
	if e.Field != "" {
		fmt.Fprintf(&b, "field %q: ", e.Field)
	}
	b.WriteString(e.Msg)
	return b.String()
}

func (e *FieldError) Unwrap() error { return e.Err }

// shape is the fields of one kind of object: names, and which must be there.
type shape struct {
	// what names the object for people: "an op", "a fault".
	what   string
	fields []string
	// required must be present and not null; present must be present (null allowed).
	required, present uint32
	// why explains a required field, by name (optional).
	why map[string]string
}

func (sh *shape) index(name string) int {
	for i, f := range sh.fields {
		if f == name {
			return i
		}
	}
	return -1
}

func (sh *shape) bits(names ...string) uint32 {
	var m uint32
	for _, n := range names {
		i := sh.index(n)
		if i < 0 {
			panic("history: shape has no field " + n)
		}
		m |= 1 << i
	}
	return m
}

// unknown is the error for a field named name that sh does not define.
func (sh *shape) unknown(where, name string) error {
	msg := "unknown field"
	if near := nearest(name, sh.fields); near != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", near)
	}
	return &FieldError{Where: where, Field: name, Err: ErrUnknownField,
		Msg: fmt.Sprintf("%s; the fields of %s are %s", msg, sh.what, strings.Join(sh.fields, ", "))}
}

func duplicate(where, name string) error {
	return &FieldError{Where: where, Field: name, Err: ErrDuplicateField, Msg: "given twice"}
}

// check reports the first field that must be there and is not: seen holds the fields
// present, set those present with a value other than null; need adds fields required
// for this object (by its kind), beyond sh.required.
func (sh *shape) check(where string, seen, set, need uint32) error {
	need |= sh.required
	for i, name := range sh.fields {
		bit := uint32(1) << i
		switch {
		case need&bit != 0 && set&bit == 0:
			return sh.missing(where, name, seen&bit != 0)
		case sh.present&bit != 0 && seen&bit == 0:
			return sh.missing(where, name, false)
		}
	}
	return nil
}

// missing is the error for required field name, absent or (null) null.
func (sh *shape) missing(where, name string, null bool) error {
	msg := "missing"
	switch {
	case null:
		msg = "null"
	case sh.present&sh.bits(name) != 0:
		msg = "missing (null is allowed)"
	}
	if why := sh.why[name]; why != "" {
		msg += ": " + why
	}
	return &FieldError{Where: where, Field: name, Err: ErrMissingField, Msg: msg}
}

// The shapes of a v1 history. An op's token and value are required by its kind (see
// opNeeds); Encode writes every required field, and omits only optional ones.
var (
	opShape = func() *shape {
		sh := &shape{what: "an op", fields: opKeys[:], why: map[string]string{
			"id":     "every op has a unique integer id",
			"client": "every op names its client",
			"kind":   "every op has a kind (acquire, read, write or release)",
			"call":   "every op has a call time",
			"status": "every op has a status (ok, fail, unknown or rejected)",
			"token":  "", // by kind: opNeeds
			"value":  "a write carries the value it sent",
		}}
		sh.required = sh.bits("id", "client", "kind", "call", "status")
		return sh
	}()
	faultShape = func() *shape {
		sh := &shape{what: "a fault", fields: []string{"kind", "target", "start", "end", "detail", "signal", "pids"}, why: map[string]string{
			"end": "null when the fault never healed",
		}}
		sh.required = sh.bits("kind", "target", "start")
		sh.present = sh.bits("end")
		return sh
	}()
	effectShape = func() *shape {
		sh := &shape{what: "an effect", fields: []string{"id", "value", "token", "write_id", "at", "via"}}
		sh.required = sh.bits("id", "value", "token", "at")
		return sh
	}()
	lostShape = func() *shape {
		sh := &shape{what: "a lost record", fields: []string{"client", "acquire_id", "token", "at", "reason"}}
		sh.required = sh.bits("client", "acquire_id", "token", "at")
		return sh
	}()
	// docShape is a v1 file's members; headShape a segmented history's head's.
	docShape = func() *shape {
		sh := &shape{what: "a v1 history", fields: []string{"format", "run", "ops", "faults", "effects", "lost"},
			why: map[string]string{"ops": "a history lists its ops (an empty list if none)"}}
		sh.required = sh.bits("format", "ops")
		return sh
	}()
	headShape = func() *shape {
		sh := &shape{what: "the head of a segmented history", fields: []string{"format", "run", "segments", "op_count", "complete", "faults", "lost"}}
		sh.required = sh.bits("format", "segments")
		return sh
	}()
	segmentsShape = func() *shape {
		sh := &shape{what: "a head's segments", fields: []string{"ops", "effects"}}
		sh.required = sh.bits("ops")
		return sh
	}()
)

// Op field bits, in the order of opKeys.
const (
	opFieldToken = 1 << 6
	opFieldValue = 1 << 7
)

// opNeeds is what an op of o's kind and status must carry beyond every op's fields: a
// write its token and value; an ok acquire the token granted; an ok read the token
// stored (its value may be absent: "" is the initial value, which Encode omits).
func opNeeds(o *Op) (uint32, string) {
	switch {
	case o.Kind == Write:
		return opFieldToken | opFieldValue, "a write carries the token it sent"
	case o.Kind == Acquire && o.Status == OK:
		return opFieldToken, "an ok acquire carries the token granted"
	case o.Kind == Read && o.Status == OK:
		return opFieldToken, "an ok read carries the token stored with the value it returned"
	}
	return 0, ""
}

// opWhere names op o, the index-th of the history: by id when it has one.
func opWhere(o *Op, index int, seen uint32) string {
	if seen&1 == 0 { // no id
		return fmt.Sprintf("ops[%d]", index)
	}
	return fmt.Sprintf("op %d (ops[%d])", o.ID, index)
}

// fieldsError is the strictness error of op o (the index-th of the history) as the
// parser read it, nil if it has none.
func (p *opParser) fieldsError(o *Op, index int) error {
	if p.nullOp {
		return &FieldError{Where: fmt.Sprintf("ops[%d]", index), Err: ErrNullRecord, Msg: "null, want an op object"}
	}
	if p.unknown == "" && p.dup == "" && p.set&opShape.required == opShape.required {
		need, _ := opNeeds(o)
		if p.set&need == need {
			return nil // the usual case, without building a message
		}
	}
	where := opWhere(o, index, p.seen)
	if p.unknown != "" {
		return opShape.unknown(where, p.unknown)
	}
	if p.dup != "" {
		return duplicate(where, p.dup)
	}
	need, why := opNeeds(o)
	if err := opShape.check(where, p.seen, p.set, need); err != nil {
		var fe *FieldError
		if errors.As(err, &fe) && fe.Field == "token" {
			fe.Msg += ": " + why
		}
		return err
	}
	return nil
}

// object walks the JSON object at p's position (already known to be well-formed),
// calling member for each member with its name (unescaped) and whether its value is
// null; member skips the value. It reports false if it is not an object.
func (p *opParser) object(member func(name string, null bool) error) (bool, error) {
	p.ws()
	if !p.eat('{') {
		return false, nil
	}
	p.ws()
	if p.eat('}') {
		return true, nil
	}
	for {
		kb, escaped, res := p.stringBytes()
		if res != parsed {
			return false, nil
		}
		name := string(kb[1 : len(kb)-1])
		if escaped {
			var ok bool
			if name, ok = unquote(kb); !ok {
				return false, nil
			}
		}
		p.ws()
		if !p.eat(':') {
			return false, nil
		}
		p.ws()
		null := p.i+4 <= len(p.data) && string(p.data[p.i:p.i+4]) == "null"
		if err := member(name, null); err != nil {
			return true, err
		}
		p.ws()
		if p.eat('}') {
			return true, nil
		}
		if !p.eat(',') {
			return false, nil
		}
		p.ws()
	}
}

// checkObject checks the members of the JSON object data against sh; where names it.
// sub checks the value of a member (the parser at its start; it must skip it), or
// is nil.
func checkObject(data []byte, sh *shape, where string, sub func(name string, p *opParser) error) error {
	p := &opParser{data: data}
	var seen, set uint32
	var first error
	_, err := p.object(func(name string, null bool) error {
		i := sh.index(name)
		switch {
		case i < 0:
			return sh.unknown(where, name)
		case seen&(1<<i) != 0:
			return duplicate(where, name)
		}
		seen |= 1 << i
		if !null {
			set |= 1 << i
		}
		if sub != nil && !null {
			if err := sub(name, p); err != nil && first == nil {
				first = err
			}
			return nil
		}
		p.skip(0)
		return nil
	})
	if err != nil {
		return err
	}
	if first != nil {
		return first
	}
	return sh.check(where, seen, set, 0)
}

// checkRecords checks each record of the JSON array data (a member's value, already
// known to be well-formed) against sh; name is the member ("faults"), and a record's
// id, when sh has one, is named with its index. A value that is not an array is left
// to encoding/json, which says what is wrong with its type.
func checkRecords(data []byte, sh *shape, name string) error {
	p := &opParser{data: data}
	p.ws()
	if !p.eat('[') {
		return nil
	}
	p.ws()
	if p.eat(']') {
		return nil
	}
	hasID := sh.index("id") == 0
	for i := 0; ; i++ {
		where := fmt.Sprintf("%s[%d]", name, i)
		start := p.i
		if p.literal("null") == parsed {
			return &FieldError{Where: where, Err: ErrNullRecord, Msg: fmt.Sprintf("null, want %s object", sh.what)}
		}
		p.i = start
		if p.skip(0) != parsed {
			return nil
		}
		rec := data[start:p.i]
		if hasID {
			where = recordWhere(rec, where)
		}
		if err := checkObject(rec, sh, where, nil); err != nil {
			return err
		}
		p.ws()
		if !p.eat(',') {
			return nil
		}
		p.ws()
	}
}

// recordWhere adds a record's integer id to where: "effects[1] (id 2)".
func recordWhere(rec []byte, where string) string {
	p := &opParser{data: rec}
	var id string
	_, _ = p.object(func(name string, null bool) error {
		start := p.i
		p.skip(0)
		if name == "id" && !null {
			id = string(rec[start:p.i])
		}
		return nil
	})
	if id != "" {
		where += " (id " + id + ")"
	}
	return where
}

// nearest is the name among names a misspelling of s is most likely of (at most two
// edits away, or the same but for case), "" if none.
func nearest(s string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		if strings.EqualFold(s, n) {
			return n
		}
		if d := editDistance(s, n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// editDistance is the edit distance between a and b, for short names only (a long
// input is far from every field name).
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64
	}
	return editdist.Levenshtein(a, b)
}

// members tracks the members of a v1 document as they are read, in any order. A
// member of a segmented history's head is let by until the format is known: the head
// is read by openHead, which checks its own members.
type members struct {
	seen, set uint32
	headOnly  string // the first member a head has and a v1 document does not
}

// add notes member name (null: its value is null).
func (m *members) add(name string, null bool) error {
	i := docShape.index(name)
	switch {
	case i < 0 && headShape.index(name) >= 0:
		if m.headOnly == "" {
			m.headOnly = name
		}
		return nil
	case i < 0:
		return docShape.unknown("", name)
	case m.seen&(1<<i) != 0:
		return duplicate("", name)
	}
	m.seen |= 1 << i
	if !null {
		m.set |= 1 << i
	}
	return nil
}

// has reports whether member name was seen.
func (m *members) has(name string) bool { return m.seen&(1<<docShape.index(name)) != 0 }

// finish reports what is wrong with the members of a document of the given format
// once all were read: nothing for a head; a head's member, or a required member not
// seen, for a v1 document.
func (m *members) finish(format string) error {
	if format == FormatSegments {
		return nil
	}
	if m.headOnly != "" {
		return docShape.unknown("", m.headOnly)
	}
	return docShape.check("", m.seen, m.set, 0)
}

// recordShapes are the shapes of the record arrays a history document holds, by
// member.
var recordShapes = map[string]*shape{"faults": faultShape, "effects": effectShape, "lost": lostShape}
