package history

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// decodeFast parses a whole history file many times faster than encoding/json, which
// matters at a million ops. The ops are parsed by opParser, which handles every op
// encoding/json decodes (any key order and spacing, null fields, escaped strings and
// keys), and reads strictly (fields.go): an unknown, duplicate or missing field is err.
// It gives up (ok=false) on what is not valid JSON of the history's shape, where the
// caller decodes with encoding/json for the error message. Everything but the ops
// (run, faults, effects, lost) is decoded by encoding/json in both cases, so the two
// paths agree on every input the fast one accepts (FuzzDecode holds them to that).
func decodeFast(data []byte) (h *History, ok bool, err error) {
	p := &opParser{data: data}
	p.ws()
	if string(bytes.TrimRight(data[p.i:], " \t\r\n")) == "null" { // encoding/json takes it for no history
		return nil, true, &FieldError{Err: ErrNullRecord, Msg: "null, want the history object"}
	}
	if !p.eat('{') {
		return nil, false, nil
	}
	rest := []byte{'{'} // the document without its ops, for encoding/json
	var ops []Op
	var m members
	// The faults, effects and lost members, checked once encoding/json has decoded
	// them (a wrong type is its error, first).
	type member struct {
		key   string
		value []byte
	}
	var records []member
	p.ws()
	if !p.eat('}') {
		for {
			kb, escaped, res := p.stringBytes()
			if res != parsed {
				return nil, false, nil
			}
			key := string(kb[1 : len(kb)-1])
			if escaped {
				if key, ok = unquote(kb); !ok {
					return nil, false, nil
				}
			}
			p.ws()
			if !p.eat(':') {
				return nil, false, nil
			}
			p.ws()
			null := p.i < len(p.data) && p.data[p.i] == 'n'
			if err := m.add(key, null); err != nil {
				return nil, true, err
			}
			start := p.i
			switch {
			case key == "ops" && !null:
				if ops, ok, err = p.ops(); !ok || err != nil {
					return nil, ok, err
				}
			default:
				if p.skip(0) != parsed {
					return nil, false, nil
				}
				if recordShapes[key] != nil {
					records = append(records, member{key, data[start:p.i]})
				}
				if key != "ops" {
					if len(rest) > 1 {
						rest = append(rest, ',')
					}
					rest = append(rest, kb...)
					rest = append(rest, ':')
					rest = append(rest, data[start:p.i]...)
				}
			}
			p.ws()
			if p.eat('}') {
				break
			}
			if !p.eat(',') {
				return nil, false, nil
			}
			p.ws()
		}
	}
	p.ws()
	if p.i != len(data) {
		return nil, false, nil
	}
	rest = append(rest, '}')
	h = &History{}
	if err := json.Unmarshal(rest, h); err != nil {
		return nil, false, nil
	}
	if h.Format == FormatSegments {
		return h, true, nil // read by openHead
	}
	for _, r := range records {
		if err := checkRecords(r.value, recordShapes[r.key], r.key); err != nil {
			return nil, true, err
		}
	}
	if err := m.finish(h.Format); err != nil {
		return nil, true, err
	}
	h.Ops = ops
	return h, true, nil
}

// parseResult is how parsing one value went.
type parseResult uint8

const (
	parsed parseResult = iota
	// parseShort: the input ended inside the value; a stream reads more and retries.
	parseShort
	// parseOther: not the shape the fast parser handles, or not valid JSON: decode
	// with encoding/json, which decides (and words the error).
	parseOther
)

// opParser parses ops out of data from position i.
type opParser struct {
	data []byte
	i    int
	// Return times and read ids are allocated in slabs rather than one by one.
	int64s []int64
	ints   []int
	// Errors and keys repeat ("refused by the fence", "k3"): one string each rather
	// than one per op.
	repeated map[string]string
	// What the last op parsed had: its fields (bits in opKeys order) present, and
	// present and not null; the first unknown and the first duplicate field; whether
	// it was null rather than an object. fieldsError words them.
	seen, set    uint32
	unknown, dup string
	nullOp       bool
}

// shared returns b as a string, the same one for equal short bytes.
func (p *opParser) shared(b []byte) string {
	if s, ok := p.repeated[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(b) <= 256 && len(p.repeated) < 4096 {
		if p.repeated == nil {
			p.repeated = map[string]string{}
		}
		p.repeated[s] = s
	}
	return s
}

func (p *opParser) ws() {
	i, data := p.i, p.data
	for i < len(data) && space[data[i]] {
		i++
	}
	p.i = i
}

// space marks JSON's white space; plain marks the bytes a string may hold as they are
// (not a quote, a backslash, a control character or a byte of a multi-byte rune).
var space, plain = func() (s, pl [256]bool) {
	s[' '], s['\t'], s['\n'], s['\r'] = true, true, true, true
	for c := 0x20; c < 0x80; c++ {
		pl[c] = c != '"' && c != '\\'
	}
	return s, pl
}()

func (p *opParser) eat(c byte) bool {
	if p.i < len(p.data) && p.data[p.i] == c {
		p.i++
		return true
	}
	return false
}

// ops parses a whole ops array held in memory; err is the first op's strictness error.
func (p *opParser) ops() (ops []Op, ok bool, err error) {
	if !p.eat('[') {
		return nil, false, nil
	}
	// One op is about 150 bytes as Encode writes it.
	ops = make([]Op, 0, (len(p.data)-p.i)/150+1)
	p.ws()
	if p.eat(']') {
		return ops, true, nil
	}
	for {
		ops = append(ops, Op{})
		o := &ops[len(ops)-1]
		if p.op(o) != parsed {
			return nil, false, nil
		}
		if err := p.fieldsError(o, len(ops)-1); err != nil {
			return nil, true, err
		}
		p.ws()
		if p.eat(']') {
			return ops, true, nil
		}
		if !p.eat(',') {
			return nil, false, nil
		}
		p.ws()
	}
}

// opKeys are the op's JSON keys; an op's field bits (seen, set) are in this order.
var opKeys = [...]string{"id", "client", "kind", "call", "return", "status", "token", "value", "read_id", "error", "key", "valid_until"}

// op parses one op object (or null) at p.i into o (which must be zero), as
// encoding/json would decode it into an Op: later duplicate keys win, null leaves a
// field as it is (nil for return and read_id), unknown keys are skipped. What it saw
// of the fields is left for fieldsError.
func (p *opParser) op(o *Op) parseResult {
	p.seen, p.set, p.unknown, p.dup, p.nullOp = 0, 0, "", "", false
	if p.i >= len(p.data) {
		return parseShort
	}
	if p.data[p.i] == 'n' {
		res := p.literal("null")
		p.nullOp = res == parsed
		return res
	}
	if !p.eat('{') {
		return parseOther
	}
	p.ws()
	if p.i >= len(p.data) {
		return parseShort
	}
	if p.eat('}') {
		return parsed
	}
	for {
		kb, escaped, res := p.stringBytes()
		if res != parsed {
			return res
		}
		if escaped {
			k, ok := unquote(kb)
			if !ok {
				return parseOther
			}
			kb = []byte(k)
		} else {
			kb = kb[1 : len(kb)-1]
		}
		p.ws()
		if p.i >= len(p.data) {
			return parseShort
		}
		if !p.eat(':') {
			return parseOther
		}
		p.ws()
		if p.i >= len(p.data) {
			return parseShort
		}
		null := false
		if p.data[p.i] == 'n' {
			if res := p.literal("null"); res != parsed {
				return res
			}
			null = true
		}
		p.note(kb, null)
		switch string(kb) {
		case "id", "client", "call", "token", "valid_until":
			if null {
				break
			}
			v, res := p.integer()
			if res != parsed {
				return res
			}
			switch string(kb) {
			case "id":
				o.ID = int(v)
			case "client":
				o.Client = int(v)
			case "call":
				o.Call = v
			case "valid_until":
				o.ValidUntil = v
			default:
				o.Token = v
			}
		case "return":
			if null {
				o.Return = nil
				break
			}
			v, res := p.integer()
			if res != parsed {
				return res
			}
			o.Return = p.retPtr(v)
		case "read_id":
			if null {
				o.ReadID = nil
				break
			}
			v, res := p.integer()
			if res != parsed {
				return res
			}
			o.ReadID = p.intPtr(int(v))
		case "kind", "status", "value", "error", "key":
			if null {
				break
			}
			b, escaped, res := p.stringBytes()
			if res != parsed {
				return res
			}
			var s string
			if escaped {
				var ok bool
				if s, ok = unquote(b); !ok {
					return parseOther
				}
			} else {
				b = b[1 : len(b)-1]
			}
			switch string(kb) {
			case "kind":
				if !escaped {
					s = intern(b, string(Acquire), string(Release), string(Write), string(Read))
				}
				o.Kind = Kind(s)
			case "status":
				if !escaped {
					s = intern(b, string(OK), string(Fail), string(Unknown), string(Rejected))
				}
				o.Status = Status(s)
			case "value":
				if !escaped {
					s = string(b)
				}
				o.Value = s
			case "error":
				if !escaped {
					s = p.shared(b)
				}
				o.Error = s
			default:
				if !escaped {
					s = p.shared(b)
				}
				o.Key = s
			}
		default:
			if !null {
				if res := p.skip(0); res != parsed {
					return res
				}
			}
		}
		p.ws()
		if p.i >= len(p.data) {
			return parseShort
		}
		if p.eat('}') {
			return parsed
		}
		if !p.eat(',') {
			return parseOther
		}
		p.ws()
	}
}

// note records that the op has field kb (null: with a null value).
func (p *opParser) note(kb []byte, null bool) {
	bit := uint32(0)
	for i, k := range opKeys {
		if string(kb) == k {
			bit = 1 << i
			break
		}
	}
	switch {
	case bit == 0:
		if p.unknown == "" {
			p.unknown = string(kb)
		}
	case p.seen&bit != 0:
		if p.dup == "" {
			p.dup = string(kb)
		}
	}
	p.seen |= bit
	if !null {
		p.set |= bit
	}
}

// unquote decodes a JSON string with escapes as encoding/json does (kept apart so that
// only such strings pay for it).
func unquote(b []byte) (string, bool) {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return "", false
	}
	return s, true
}

// stringBytes moves past one string and returns it with its quotes. escaped says it
// needs decoding (escapes, or bytes that are not valid UTF-8, which encoding/json
// replaces).
func (p *opParser) stringBytes() (b []byte, escaped bool, res parseResult) {
	if p.i >= len(p.data) {
		return nil, false, parseShort
	}
	if p.data[p.i] != '"' {
		return nil, false, parseOther
	}
	start := p.i
	p.i++
	ascii := true
	for p.i < len(p.data) {
		if plain[p.data[p.i]] {
			p.i++
			continue
		}
		c := p.data[p.i]
		switch {
		case c == '"':
			p.i++
			b = p.data[start:p.i]
			if !ascii && !utf8.Valid(b) {
				escaped = true
			}
			return b, escaped, parsed
		case c == '\\':
			escaped = true
			if p.i+1 >= len(p.data) {
				return nil, false, parseShort
			}
			switch p.data[p.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p.i += 2
			case 'u':
				if p.i+6 > len(p.data) {
					return nil, false, parseShort
				}
				for _, h := range p.data[p.i+2 : p.i+6] {
					if !isHex(h) {
						return nil, false, parseOther
					}
				}
				p.i += 6
			default:
				return nil, false, parseOther
			}
			continue
		case c < 0x20:
			return nil, false, parseOther
		case c >= 0x80:
			ascii = false
		}
		p.i++
	}
	return nil, false, parseShort
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// literal moves past the literal s (true, false or null).
func (p *opParser) literal(s string) parseResult {
	n := min(len(s), len(p.data)-p.i)
	if string(p.data[p.i:p.i+n]) != s[:n] {
		return parseOther
	}
	if n < len(s) {
		return parseShort
	}
	p.i += n
	return p.delimited()
}

// delimited checks that a scalar ends where it should: a scalar is followed by a
// delimiter or white space, never run into another token ("nullx", "12a").
func (p *opParser) delimited() parseResult {
	if p.i >= len(p.data) {
		return parseShort
	}
	switch p.data[p.i] {
	case ',', '}', ']', ' ', '\t', '\n', '\r':
		return parsed
	}
	return parseOther
}

// integer parses an integer as encoding/json does for an integer field: no leading
// zeros, no fraction or exponent (an error there, so left to it), within int64.
func (p *opParser) integer() (int64, parseResult) {
	start := p.i
	neg := p.eat('-')
	if p.i >= len(p.data) {
		return 0, parseShort
	}
	var v int64
	switch c := p.data[p.i]; {
	case c == '0':
		p.i++
	case '1' <= c && c <= '9':
		for p.i < len(p.data) && p.data[p.i] >= '0' && p.data[p.i] <= '9' {
			v = v*10 + int64(p.data[p.i]-'0')
			p.i++
		}
	default:
		return 0, parseOther
	}
	if res := p.delimited(); res != parsed {
		return 0, res
	}
	if digits := p.i - start; digits > 18 {
		n, err := strconv.ParseInt(string(p.data[start:p.i]), 10, 64)
		if err != nil {
			return 0, parseOther
		}
		return n, parsed
	}
	if neg {
		v = -v
	}
	return v, parsed
}

// number moves past any JSON number.
func (p *opParser) number() parseResult {
	p.eat('-')
	digits := func() int {
		n := 0
		for p.i < len(p.data) && p.data[p.i] >= '0' && p.data[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.i >= len(p.data) {
		return parseShort
	}
	switch c := p.data[p.i]; {
	case c == '0':
		p.i++
	case '1' <= c && c <= '9':
		digits()
	default:
		return parseOther
	}
	if p.eat('.') {
		if digits() == 0 {
			if p.i >= len(p.data) {
				return parseShort
			}
			return parseOther
		}
	}
	if p.eat('e') || p.eat('E') {
		if !p.eat('+') {
			p.eat('-')
		}
		if digits() == 0 {
			if p.i >= len(p.data) {
				return parseShort
			}
			return parseOther
		}
	}
	return p.delimited()
}

// maxDepth is encoding/json's nesting limit.
const maxDepth = 10000

// skip moves past one JSON value, checking that it is well-formed as encoding/json
// would (so that skipping an unknown key never accepts what it refuses).
func (p *opParser) skip(depth int) parseResult {
	if p.i >= len(p.data) {
		return parseShort
	}
	switch c := p.data[p.i]; {
	case c == '"':
		_, _, res := p.stringBytes()
		return res
	case c == 't':
		return p.literal("true")
	case c == 'f':
		return p.literal("false")
	case c == 'n':
		return p.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		return p.number()
	case c == '{' || c == '[':
		if depth >= maxDepth {
			return parseOther
		}
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		p.i++
		p.ws()
		if p.i >= len(p.data) {
			return parseShort
		}
		if p.eat(end) {
			return parsed
		}
		for {
			if c == '{' {
				if _, _, res := p.stringBytes(); res != parsed {
					return res
				}
				p.ws()
				if p.i >= len(p.data) {
					return parseShort
				}
				if !p.eat(':') {
					return parseOther
				}
				p.ws()
			}
			if res := p.skip(depth + 1); res != parsed {
				return res
			}
			p.ws()
			if p.i >= len(p.data) {
				return parseShort
			}
			if p.eat(end) {
				return parsed
			}
			if !p.eat(',') {
				return parseOther
			}
			p.ws()
		}
	}
	return parseOther
}

func (p *opParser) retPtr(v int64) *int64 {
	if len(p.int64s) == 0 {
		p.int64s = make([]int64, 4096)
	}
	r := &p.int64s[0]
	*r = v
	p.int64s = p.int64s[1:]
	return r
}

func (p *opParser) intPtr(v int) *int {
	if len(p.ints) == 0 {
		p.ints = make([]int, 1024)
	}
	r := &p.ints[0]
	*r = v
	p.ints = p.ints[1:]
	return r
}

// intern returns the known string equal to b without allocating, or a copy of b.
func intern(b []byte, known ...string) string {
	for _, k := range known {
		if string(b) == k {
			return k
		}
	}
	return string(b)
}
