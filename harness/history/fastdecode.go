package history

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// decodeFast parses the shape history files have in practice — the one Encode writes —
// about ten times faster than encoding/json, which matters at a million ops. It handles
// a strict subset of JSON: top-level and op keys spelled exactly as documented, each at
// most once; op strings without escapes; integers without fraction or exponent. On
// anything else it returns ok=false, and the caller decodes with encoding/json, which
// then also gives the error message. Everything but the ops (run, faults, effects) is
// decoded by encoding/json in both cases, so the two paths agree on every input the
// fast one accepts (FuzzDecode holds them to that).
func decodeFast(data []byte) (h *History, ok bool) {
	p := &fastParser{data: data}
	p.ws()
	if !p.eat('{') {
		return nil, false
	}
	rest := []byte{'{'} // the document without its ops, for encoding/json
	var ops []Op
	seen := map[string]bool{}
	p.ws()
	if !p.eat('}') {
		for {
			key, ok := p.str()
			if !ok {
				return nil, false
			}
			switch key {
			case "format", "run", "ops", "faults", "effects":
			default:
				return nil, false
			}
			if seen[key] {
				return nil, false
			}
			seen[key] = true
			p.ws()
			if !p.eat(':') {
				return nil, false
			}
			p.ws()
			if key == "ops" {
				if ops, ok = p.ops(); !ok {
					return nil, false
				}
			} else {
				start := p.i
				if !p.skipValue() {
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

type fastParser struct {
	data []byte
	i    int
	// Return times and read ids are allocated in slabs rather than one by one.
	int64s []int64
	ints   []int
	// Errors and keys repeat ("held", "k3"): one string each rather than one per op.
	repeated map[string]string
}

// shared returns b as a string, the same one for equal short bytes.
func (p *fastParser) shared(b []byte) string {
	if s, ok := p.repeated[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(b) <= 64 && len(p.repeated) < 4096 {
		if p.repeated == nil {
			p.repeated = map[string]string{}
		}
		p.repeated[s] = s
	}
	return s
}

func (p *fastParser) ws() {
	for p.i < len(p.data) {
		switch p.data[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *fastParser) eat(c byte) bool {
	if p.i < len(p.data) && p.data[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *fastParser) lit(s string) bool {
	if bytes.HasPrefix(p.data[p.i:], []byte(s)) {
		p.i += len(s)
		return true
	}
	return false
}

// rawStr returns the bytes of a string without escapes or control characters, whose
// other bytes are valid UTF-8 (encoding/json would rewrite invalid UTF-8).
func (p *fastParser) rawStr() ([]byte, bool) {
	if !p.eat('"') {
		return nil, false
	}
	start := p.i
	ascii := true
	for p.i < len(p.data) {
		c := p.data[p.i]
		switch {
		case c == '"':
			s := p.data[start:p.i]
			p.i++
			if !ascii && !utf8.Valid(s) {
				return nil, false
			}
			return s, true
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= 0x80:
			ascii = false
		}
		p.i++
	}
	return nil, false
}

func (p *fastParser) str() (string, bool) {
	b, ok := p.rawStr()
	return string(b), ok
}

// int64 parses an integer as encoding/json does for an integer field: no leading
// zeros, no fraction or exponent (those are errors there, so they go the slow way), and
// at most 18 digits so it cannot overflow.
func (p *fastParser) int64() (int64, bool) {
	neg := p.eat('-')
	start := p.i
	var v int64
	for p.i < len(p.data) && p.data[p.i] >= '0' && p.data[p.i] <= '9' {
		v = v*10 + int64(p.data[p.i]-'0')
		p.i++
	}
	n := p.i - start
	if n == 0 || n > 18 || (n > 1 && p.data[start] == '0') {
		return 0, false
	}
	if p.i < len(p.data) {
		switch p.data[p.i] {
		case '.', 'e', 'E':
			return 0, false
		}
	}
	if neg {
		v = -v
	}
	return v, true
}

func (p *fastParser) retPtr(v int64) *int64 {
	if len(p.int64s) == 0 {
		p.int64s = make([]int64, 4096)
	}
	r := &p.int64s[0]
	*r = v
	p.int64s = p.int64s[1:]
	return r
}

func (p *fastParser) intPtr(v int) *int {
	if len(p.ints) == 0 {
		p.ints = make([]int, 1024)
	}
	r := &p.ints[0]
	*r = v
	p.ints = p.ints[1:]
	return r
}

// skipValue moves past one JSON value without checking it (encoding/json does, later).
func (p *fastParser) skipValue() bool {
	if p.i >= len(p.data) {
		return false
	}
	switch p.data[p.i] {
	case '"':
		return p.skipString()
	case '{', '[':
		depth := 0
		for p.i < len(p.data) {
			switch p.data[p.i] {
			case '"':
				if !p.skipString() {
					return false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					p.i++
					return true
				}
			}
			p.i++
		}
		return false
	default: // a scalar ends at the next delimiter
		start := p.i
		for p.i < len(p.data) {
			switch p.data[p.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return p.i > start
			}
			p.i++
		}
		return p.i > start
	}
}

func (p *fastParser) skipString() bool {
	p.i++ // the opening quote
	for p.i < len(p.data) {
		switch p.data[p.i] {
		case '\\':
			p.i += 2
			continue
		case '"':
			p.i++
			return true
		}
		p.i++
	}
	return false
}

func (p *fastParser) ops() ([]Op, bool) {
	if !p.eat('[') {
		return nil, false
	}
	// One op is about 150 bytes as Encode writes it.
	ops := make([]Op, 0, len(p.data)/150+1)
	p.ws()
	if p.eat(']') {
		return ops, true
	}
	for {
		o, ok := p.op()
		if !ok {
			return nil, false
		}
		ops = append(ops, o)
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

// opField numbers the op keys (for the at-most-once check), 0 for any other key.
func opField(b []byte) uint {
	switch string(b) {
	case "id":
		return 1
	case "client":
		return 2
	case "kind":
		return 3
	case "call":
		return 4
	case "return":
		return 5
	case "status":
		return 6
	case "token":
		return 7
	case "value":
		return 8
	case "read_id":
		return 9
	case "error":
		return 10
	case "key":
		return 11
	}
	return 0
}

func (p *fastParser) op() (Op, bool) {
	var o Op
	if !p.eat('{') {
		return o, false
	}
	p.ws()
	if p.eat('}') {
		return o, true
	}
	var seen uint
	for {
		kb, ok := p.rawStr()
		if !ok {
			return o, false
		}
		f := opField(kb)
		if f == 0 || seen&(1<<f) != 0 {
			return o, false
		}
		seen |= 1 << f
		p.ws()
		if !p.eat(':') {
			return o, false
		}
		p.ws()
		switch f {
		case 1, 2, 4, 7:
			v, ok := p.int64()
			if !ok {
				return o, false
			}
			switch f {
			case 1:
				o.ID = int(v)
			case 2:
				o.Client = int(v)
			case 4:
				o.Call = v
			case 7:
				o.Token = v
			}
		case 5, 9:
			if p.lit("null") {
				break
			}
			v, ok := p.int64()
			if !ok {
				return o, false
			}
			if f == 5 {
				o.Return = p.retPtr(v)
			} else {
				o.ReadID = p.intPtr(int(v))
			}
		default:
			b, ok := p.rawStr()
			if !ok {
				return o, false
			}
			switch f {
			case 3:
				o.Kind = Kind(intern(b, string(Acquire), string(Release), string(Write), string(Read)))
			case 6:
				o.Status = Status(intern(b, string(OK), string(Fail), string(Unknown), string(Rejected)))
			case 8:
				o.Value = string(b)
			case 10:
				o.Error = p.shared(b)
			case 11:
				o.Key = p.shared(b)
			}
		}
		p.ws()
		if p.eat('}') {
			return o, true
		}
		if !p.eat(',') {
			return o, false
		}
		p.ws()
	}
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
