package history

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// decodeFast parses a whole history file many times faster than encoding/json, which
// matters at a million ops. The ops are parsed by opParser, which handles every op as
// encoding/json would (any key order and spacing, unknown keys ignored, null fields,
// escaped strings) and gives up (ok=false) on what it does not handle — a key spelled
// in another case, a malformed or truncated document —, where the caller decodes with
// encoding/json, which then also gives the error message. Everything but the ops (run,
// faults, effects, lost, unknown members) is decoded by encoding/json in both cases, so
// the two paths agree on every input the fast one accepts (FuzzDecode holds them to
// that).
func decodeFast(data []byte) (h *History, ok bool) {
	p := &opParser{data: data}
	p.ws()
	if !p.eat('{') {
		return nil, false
	}
	rest := []byte{'{'} // the document without its ops, for encoding/json
	var ops []Op
	sawOps := false
	p.ws()
	if !p.eat('}') {
		for {
			key, res := p.rawString()
			if res != parsed {
				return nil, false
			}
			if string(key) != "ops" && bytes.EqualFold(key, []byte("ops")) {
				return nil, false // encoding/json would take it for "ops"
			}
			p.ws()
			if !p.eat(':') {
				return nil, false
			}
			p.ws()
			if string(key) == "ops" {
				if sawOps {
					return nil, false
				}
				sawOps = true
				if ops, ok = p.ops(); !ok {
					return nil, false
				}
			} else {
				start := p.i
				if p.skip(0) != parsed {
					return nil, false
				}
				if len(rest) > 1 {
					rest = append(rest, ',')
				}
				rest = append(rest, '"')
				rest = append(rest, key...)
				rest = append(rest, '"', ':')
				rest = append(rest, data[start:p.i]...)
			}
			p.ws()
			if p.eat('}') {
				break
			}
			if !p.eat(',') {
				return nil, false
			}
			p.ws()
		}
	}
	p.ws()
	if p.i != len(data) {
		return nil, false
	}
	rest = append(rest, '}')
	h = &History{}
	if err := json.Unmarshal(rest, h); err != nil {
		return nil, false
	}
	h.Ops = ops
	return h, true
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

// ops parses a whole ops array held in memory.
func (p *opParser) ops() ([]Op, bool) {
	if !p.eat('[') {
		return nil, false
	}
	// One op is about 150 bytes as Encode writes it.
	ops := make([]Op, 0, (len(p.data)-p.i)/150+1)
	p.ws()
	if p.eat(']') {
		return ops, true
	}
	for {
		ops = append(ops, Op{})
		if p.op(&ops[len(ops)-1]) != parsed {
			return nil, false
		}
		p.ws()
		if p.eat(']') {
			return ops, true
		}
		if !p.eat(',') {
			return nil, false
		}
		p.ws()
	}
}

// opKeys are the op's JSON keys, for spotting one spelled in another case.
var opKeys = [...]string{"id", "client", "kind", "call", "return", "status", "token", "value", "read_id", "error", "key"}

// op parses one op object at p.i into o (which must be zero), as encoding/json would
// decode it into an Op: later duplicate keys win, null leaves a field as it is (nil for
// return and read_id), unknown keys are skipped.
func (p *opParser) op(o *Op) parseResult {
	if p.i >= len(p.data) {
		return parseShort
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
		kb, res := p.rawString()
		if res != parsed {
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
		switch string(kb) {
		case "id", "client", "call", "token":
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
			for _, k := range opKeys {
				if bytes.EqualFold(kb, []byte(k)) {
					return parseOther // encoding/json would match it to that field
				}
			}
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

// unquote decodes a JSON string with escapes as encoding/json does (kept apart so that
// only such strings pay for it).
func unquote(b []byte) (string, bool) {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return "", false
	}
	return s, true
}

// rawString returns the bytes of a string without escapes (an object key), without
// its quotes.
func (p *opParser) rawString() ([]byte, parseResult) {
	b, escaped, res := p.stringBytes()
	if res != parsed {
		return nil, res
	}
	if escaped {
		return nil, parseOther
	}
	return b[1 : len(b)-1], parsed
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
