package history

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// strictDoc is a v1 document whose second op is op (the first is an ok acquire), with
// the members tail after the ops.
func strictDoc(op, tail string) string {
	return `{"format": "fencecheck.history/v1", "run": {"seed": 1}, "ops": [
 {"id": 1, "client": 0, "kind": "acquire", "call": 1, "return": 2, "status": "ok", "token": 4},
 ` + op + `
], "faults": []` + tail + `}`
}

// withFaults is strictDoc with a valid op and the faults given.
func withFaults(faults string) string {
	return strings.Replace(strictDoc(okOp, ""), `"faults": []`, `"faults": `+faults, 1)
}

// okOp is a valid second op.
const okOp = `{"id": 3, "client": 0, "kind": "write", "call": 5, "return": 6, "status": "ok", "token": 4, "value": "v"}`

// strictCases are documents every reader must refuse (want names the record and the
// field; is is the error's kind), or accept (want "").
var strictCases = []struct {
	name, doc, want string
	is              error
	op              string // the case's op, when the case is about the op alone
}{
	{name: "misspelled token", op: `{"id": 3, "client": 0, "kind": "write", "call": 5, "return": 6, "status": "ok", "tokn": 4, "value": "v"}`,
		want: `op 3 (ops[1]): field "tokn": unknown field (did you mean "token"?); the fields of an op are id, client,`, is: ErrUnknownField},
	{name: "token in another case", op: `{"id": 3, "client": 0, "kind": "write", "call": 5, "return": 6, "status": "ok", "Token": 4, "value": "v"}`,
		want: `op 3 (ops[1]): field "Token": unknown field (did you mean "token"?)`, is: ErrUnknownField},
	{name: "unknown before id", op: `{"note": "x", "id": 3, "client": 0, "kind": "write", "call": 5, "return": 6, "status": "ok", "token": 4, "value": "v"}`,
		want: `op 3 (ops[1]): field "note": unknown field;`, is: ErrUnknownField},
	{name: "write without token", op: `{"id": 3, "client": 0, "kind": "write", "call": 5, "return": 6, "status": "rejected", "value": "v"}`,
		want: `op 3 (ops[1]): field "token": missing: a write carries the token it sent`, is: ErrMissingField},
	{name: "write with null token", op: `{"id": 3, "client": 0, "kind": "write", "call": 5, "return": null, "status": "unknown", "token": null, "value": "v"}`,
		want: `op 3 (ops[1]): field "token": null: a write carries the token it sent`, is: ErrMissingField},
	{name: "write without value", op: `{"id": 3, "client": 0, "kind": "write", "call": 5, "return": 6, "status": "ok", "token": 4}`,
		want: `op 3 (ops[1]): field "value": missing: a write carries the value it sent`, is: ErrMissingField},
	{name: "ok read without token", op: `{"id": 3, "client": 0, "kind": "read", "call": 5, "return": 6, "status": "ok", "value": "v"}`,
		want: `op 3 (ops[1]): field "token": missing: an ok read carries the token stored`, is: ErrMissingField},
	{name: "ok acquire without token", op: `{"id": 3, "client": 1, "kind": "acquire", "call": 5, "return": 6, "status": "ok"}`,
		want: `op 3 (ops[1]): field "token": missing: an ok acquire carries the token granted`, is: ErrMissingField},
	{name: "no id", op: `{"client": 0, "kind": "write", "call": 5, "return": 6, "status": "ok", "token": 4, "value": "v"}`,
		want: `ops[1]: field "id": missing`, is: ErrMissingField},
	{name: "no client", op: `{"id": 3, "kind": "write", "call": 5, "return": 6, "status": "ok", "token": 4, "value": "v"}`,
		want: `op 3 (ops[1]): field "client": missing`, is: ErrMissingField},
	{name: "no kind", op: `{"id": 3, "client": 0, "call": 5, "return": 6, "status": "ok", "token": 4, "value": "v"}`,
		want: `op 3 (ops[1]): field "kind": missing`, is: ErrMissingField},
	{name: "no call", op: `{"id": 3, "client": 0, "kind": "write", "return": 6, "status": "ok", "token": 4, "value": "v"}`,
		want: `op 3 (ops[1]): field "call": missing`, is: ErrMissingField},
	{name: "no status", op: `{"id": 3, "client": 0, "kind": "write", "call": 5, "return": 6, "token": 4, "value": "v"}`,
		want: `op 3 (ops[1]): field "status": missing`, is: ErrMissingField},
	{name: "field twice", op: `{"id": 3, "client": 0, "kind": "write", "call": 5, "return": 6, "return": 7, "status": "ok", "token": 4, "value": "v"}`,
		want: `op 3 (ops[1]): field "return": given twice`, is: ErrDuplicateField},
	{name: "null op", op: `null`, want: `ops[1]: null, want an op object`, is: ErrNullRecord},
	{name: "unknown fault field", doc: withFaults(`[{"kind": "pause", "target": "client-0", "start": 1, "end": 2, "detial": "x"}]`),
		want: `faults[0]: field "detial": unknown field (did you mean "detail"?); the fields of a fault are kind, target, start, end, detail`, is: ErrUnknownField},
	{name: "fault without end", doc: withFaults(`[{"kind": "pause", "target": "client-0", "start": 1}]`),
		want: `faults[0]: field "end": missing (null is allowed): null when the fault never healed`, is: ErrMissingField},
	{name: "fault without target", doc: withFaults(`[{"kind": "pause", "start": 1, "end": null}]`),
		want: `faults[0]: field "target": missing`, is: ErrMissingField},
	{name: "null fault", doc: withFaults(`[null]`),
		want: `faults[0]: null, want a fault object`, is: ErrNullRecord},
	{name: "effect without token", doc: strictDoc(okOp, `, "effects": [{"id": 7, "value": "v", "at": 9}]`),
		want: `effects[0] (id 7): field "token": missing`, is: ErrMissingField},
	{name: "unknown effect field", doc: strictDoc(okOp, `, "effects": [{"id": 7, "value": "v", "token": 4, "at": 9, "writeid": 3}]`),
		want: `effects[0] (id 7): field "writeid": unknown field (did you mean "write_id"?)`, is: ErrUnknownField},
	{name: "lost without at", doc: strictDoc(okOp, `, "lost": [{"client": 0, "acquire_id": 1, "token": 4}]`),
		want: `lost[0]: field "at": missing`, is: ErrMissingField},
	{name: "unknown lost field", doc: strictDoc(okOp, `, "lost": [{"client": 0, "acquire_id": 1, "token": 4, "at": 9, "why": "x"}]`),
		want: `lost[0]: field "why": unknown field; the fields of a lost record are client, acquire_id, token, at, reason`, is: ErrUnknownField},
	{name: "unknown member", doc: strictDoc(okOp, `, "comment": "hand-written"`),
		want: `field "comment": unknown field; the fields of a v1 history are format, run, ops, faults, effects, lost`, is: ErrUnknownField},
	{name: "member in another case", doc: strictDoc(okOp, `, "Faults": []`),
		want: `field "Faults": unknown field (did you mean "faults"?)`, is: ErrUnknownField},
	{name: "member twice", doc: strictDoc(okOp, `, "faults": []`),
		want: `field "faults": given twice`, is: ErrDuplicateField},
	{name: "a head's member", doc: strictDoc(okOp, `, "op_count": 2`),
		want: `field "op_count": unknown field`, is: ErrUnknownField},
	{name: "no ops", doc: `{"format": "fencecheck.history/v1", "run": {}, "faults": []}`,
		want: `field "ops": missing: a history lists its ops`, is: ErrMissingField},
	{name: "null document", doc: `null`, want: `null, want the history object`, is: ErrNullRecord},

	// What the format allows.
	{name: "run is open", doc: strings.Replace(strictDoc(okOp, ""), `"run": {"seed": 1}`, `"run": {"seed": 1, "planned": [{"kind": "pause"}], "note": null}`, 1)},
	{name: "escaped keys", op: `{"\u0069d": 3, "client": 0, "kind": "write", "call": 5, "return": 6, "status": "ok", "tok\u0065n": 4, "value": "v"}`},
	{name: "failed acquire without token", op: `{"id": 3, "client": 1, "kind": "acquire", "call": 5, "return": 6, "status": "fail", "error": "refused"}`},
	{name: "read of the initial value", op: `{"id": 3, "client": 1, "kind": "read", "call": 5, "return": 6, "status": "ok", "token": 0}`},
	{name: "unknown op without return", op: `{"id": 3, "client": 1, "kind": "write", "call": 5, "status": "unknown", "token": 4, "value": "v", "read_id": null, "key": null}`},
	{name: "optional members", doc: strings.Replace(strictDoc(okOp, `, "effects": [{"id": 7, "value": "v", "token": 4, "at": 9}], "lost": [{"client": 0, "acquire_id": 1, "token": 4, "at": 9}]`), `, "faults": []`, ``, 1)},
}

// Every reader of a v1 file refuses a field the format does not define or a required
// field that is absent, naming the record and the field: Decode (the fast parser),
// ReadFile, the Scanner (at buffer sizes that cut the document everywhere), and, for
// an op alone, an ops segment of a segmented history.
func TestStrictFields(t *testing.T) {
	for _, tc := range strictCases {
		t.Run(tc.name, func(t *testing.T) {
			doc := tc.doc
			if tc.op != "" {
				doc = strictDoc(tc.op, "")
			}
			check := func(t *testing.T, err error, name string) {
				t.Helper()
				if tc.want == "" {
					require.NoError(t, err)
					return
				}
				require.Error(t, err)
				require.Contains(t, err.Error(), name+": ")
				require.Contains(t, err.Error(), tc.want)
				require.True(t, errors.Is(err, tc.is), "%v is not %v", err, tc.is)
			}
			_, err := Decode(strings.NewReader(doc), "h.json")
			check(t, err, "h.json")
			path := writeTemp(t, []byte(doc))
			_, err = ReadFile(path)
			check(t, err, path)
			for _, size := range []int{3, 64, 1 << 20} {
				_, err := scanAll(t, path, size, 2)
				check(t, err, path)
			}
			if tc.op == "" {
				return
			}
			dir := t.TempDir()
			seg := filepath.Join(dir, SegmentsDir, "ops-000001.jsonl")
			require.NoError(t, os.MkdirAll(filepath.Dir(seg), 0o755))
			lines := `{"id":1,"client":0,"kind":"acquire","call":1,"return":2,"status":"ok","token":4}` + "\n" + tc.op + "\n"
			require.NoError(t, os.WriteFile(seg, []byte(lines), 0o644))
			head := filepath.Join(dir, "history.json")
			require.NoError(t, os.WriteFile(head, []byte(`{"format": "fencecheck.history/v1+segments", "run": {}, "segments": {"ops": ["history/ops-000001.jsonl"]}, "op_count": 2, "complete": true, "faults": []}`), 0o644))
			_, err = ReadFile(head)
			check(t, err, seg+": line 2")
		})
	}
}

// A segmented history's head and effects segments are read as strictly.
func TestStrictSegments(t *testing.T) {
	const op = `{"id":1,"client":0,"kind":"write","call":1,"return":2,"status":"ok","token":4,"value":"v"}` + "\n"
	for _, tc := range []struct{ name, head, effects, want string }{
		{"valid", `{"format": "fencecheck.history/v1+segments", "run": {"x": 1}, "segments": {"ops": ["history/ops-000001.jsonl"], "effects": ["history/effects-000001.jsonl"]}, "op_count": 1, "complete": true, "faults": [], "lost": []}`,
			`{"id":1,"value":"v","token":4,"at":3}`, ""},
		{"unknown head member", `{"format": "fencecheck.history/v1+segments", "segments": {"ops": ["history/ops-000001.jsonl"]}, "complete": true, "ops": []}`,
			"", `field "ops": unknown field; the fields of the head of a segmented history are format, run, segments, op_count, complete, faults, lost`},
		{"unknown segments member", `{"format": "fencecheck.history/v1+segments", "segments": {"ops": ["history/ops-000001.jsonl"], "effect": []}, "complete": true}`,
			"", `segments: field "effect": unknown field (did you mean "effects"?)`},
		{"no segments", `{"format": "fencecheck.history/v1+segments", "complete": true}`, "", `field "segments": missing`},
		{"fault without end", `{"format": "fencecheck.history/v1+segments", "segments": {"ops": ["history/ops-000001.jsonl"]}, "complete": true, "faults": [{"kind": "pause", "target": "client-0", "start": 1}]}`,
			"", `faults[0]: field "end": missing`},
		{"effect without at", `{"format": "fencecheck.history/v1+segments", "segments": {"ops": ["history/ops-000001.jsonl"], "effects": ["history/effects-000001.jsonl"]}, "complete": true}`,
			`{"id":1,"value":"v","token":4}`, `effects-000001.jsonl: line 1: effects[0] (id 1): field "at": missing`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.MkdirAll(filepath.Join(dir, SegmentsDir), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, SegmentsDir, "ops-000001.jsonl"), []byte(op), 0o644))
			if tc.effects != "" {
				require.NoError(t, os.WriteFile(filepath.Join(dir, SegmentsDir, "effects-000001.jsonl"), []byte(tc.effects+"\n"), 0o644))
			}
			head := filepath.Join(dir, "history.json")
			require.NoError(t, os.WriteFile(head, []byte(tc.head), 0o644))
			for _, path := range []string{head, dir} {
				_, err := ReadFile(path)
				if tc.want == "" {
					require.NoError(t, err)
					continue
				}
				require.ErrorContains(t, err, tc.want)
				require.ErrorContains(t, err, dir+"/", "the error names the file")
			}
		})
	}
}

// What Encode and the recorder write carries every required field, whatever the op.
func TestEncodeWritesRequiredFields(t *testing.T) {
	r := NewRecorder()
	a := r.Begin(0, Acquire, 0, "", nil)
	a.Done(Fail, 0, "", "refused")
	a = r.Begin(0, Acquire, 0, "", nil)
	a.Done(OK, 3, "", "")
	rd := r.Begin(0, Read, 3, "", nil)
	rd.Done(OK, 0, "", "") // the initial value: Encode omits the empty value
	w := r.Begin(0, Write, 3, "c0-1", nil)
	w.Done(Unknown, 3, "c0-1", "timeout")
	r.Begin(0, Release, 3, "", nil)
	f := r.FaultStart("pause", "client-0", "")
	r.FaultEnd(f, "")
	r.FaultStart("crash", "node-1", "never healed")
	r.Effect("c0-1", 3, ViaOutbox)
	r.Lost(0, 2, 3, "")
	h := r.History(Run{Seed: 1})
	path := filepath.Join(t.TempDir(), "h.json")
	require.NoError(t, WriteFile(path, h))
	_, err := ReadFile(path)
	require.NoError(t, err)
}
