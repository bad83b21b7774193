package history

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const example = `{
  "format": "fencecheck.history/v1",
  "run": {"scenario": "x", "backend": "naive", "resource": "fenced", "fence": "strict",
          "seed": 7, "ttl_ms": 500, "clients": 3},
  "ops": [
    {"id": 1, "client": 0, "kind": "acquire", "call": 1000, "return": 2000, "status": "ok", "token": 42},
    {"id": 2, "client": 0, "kind": "read", "call": 2100, "return": 2900, "status": "ok", "token": 41, "value": "c1-7"},
    {"id": 3, "client": 0, "kind": "write", "call": 3000, "return": 4000, "status": "ok", "token": 42, "value": "c0-1", "read_id": 2},
    {"id": 4, "client": 0, "kind": "release", "call": 7000, "return": 8000, "status": "ok", "token": 42}
  ],
  "faults": [{"kind": "pause", "target": "client-0", "start": 2500, "end": 900000, "detail": "..."}]
}`

func TestDecodeExample(t *testing.T) {
	h, err := Decode(strings.NewReader(example), "example.json")
	require.NoError(t, err)
	require.Len(t, h.Ops, 4)
	require.Equal(t, 2, *h.Ops[2].ReadID)
	require.Equal(t, int64(500), h.Run.TTLms)
	require.EqualValues(t, 3, h.Run.Extra["clients"])

	// Round trip keeps the free-form run fields.
	var buf bytes.Buffer
	require.NoError(t, Encode(&buf, h))
	h2, err := Decode(&buf, "again")
	require.NoError(t, err)
	require.Equal(t, h, h2)
}

func TestDecodeErrors(t *testing.T) {
	op := func(s string) string {
		return `{"format":"fencecheck.history/v1","run":{"seed":1},"ops":[` +
			`{"id":1,"client":0,"kind":"read","call":5,"return":6,"status":"ok","value":"","token":0},` + s + `],"faults":[]}`
	}
	for _, tc := range []struct {
		name, in, want string
	}{
		{"truncated", example[:200], "truncated JSON"},
		{"not json", "hello", "line 1, column 1"},
		{"wrong type", op(`{"id":2,"client":"zero","kind":"read","call":1,"return":2,"status":"ok"}`), `field "ops.client"`},
		{"wrong format", `{"format":"v0","run":{},"ops":[]}`, `field "format"`},
		{"unknown kind", op(`{"id":2,"client":0,"kind":"cas","call":1,"return":2,"status":"ok"}`), `op 2 (ops[1]): field "kind"`},
		{"unknown status", op(`{"id":2,"client":0,"kind":"read","call":1,"return":2,"status":"maybe"}`), `op 2 (ops[1]): field "status"`},
		{"return before call", op(`{"id":2,"client":0,"kind":"read","call":9,"return":2,"status":"ok","token":0}`), `op 2 (ops[1]): field "return": return 2 is before call 9`},
		{"unknown with return", op(`{"id":2,"client":0,"kind":"write","call":9,"return":12,"status":"unknown","token":1,"value":"v"}`), `op 2 (ops[1]): field "return"`},
		{"missing return", op(`{"id":2,"client":0,"kind":"read","call":9,"status":"ok","token":0}`), `op 2 (ops[1]): field "return"`},
		{"duplicate id", op(`{"id":1,"client":0,"kind":"read","call":9,"return":10,"status":"ok","token":0}`), `op 1 (ops[1]): field "id": duplicate`},
		{"read_id of nothing", op(`{"id":2,"client":0,"kind":"write","call":9,"return":10,"status":"ok","token":3,"value":"v","read_id":77}`), `op 2 (ops[1]): field "read_id"`},
		{"read_id of other client", op(`{"id":2,"client":1,"kind":"write","call":9,"return":10,"status":"ok","token":3,"value":"v","read_id":1}`), `op 2 (ops[1]): field "read_id": names op 1, which is not a read of client 1`},
		{"ok acquire with token 0", op(`{"id":2,"client":0,"kind":"acquire","call":9,"return":10,"status":"ok","token":0}`), `op 2 (ops[1]): field "token": an ok acquire must carry the granted token`},
		{"rejected read", op(`{"id":2,"client":0,"kind":"read","call":9,"return":10,"status":"rejected"}`), `op 2 (ops[1]): field "status"`},
		{"duplicate value", op(`{"id":2,"client":0,"kind":"write","call":9,"return":10,"status":"ok","token":1,"value":"a"},{"id":3,"client":0,"kind":"write","call":11,"return":12,"status":"ok","token":2,"value":"a"}`), `op 3 (ops[2]): field "value"`},
		{"bad fence", `{"format":"fencecheck.history/v1","run":{"fence":"loose"},"ops":[]}`, `run.fence`},
		{"trailing", example + "{}", "trailing data"},
		{"negative ttl", `{"format":"fencecheck.history/v1","run":{"ttl_ms":-1},"ops":[]}`, `field "run.ttl_ms": -1 is negative`},
		{"negative fault start", `{"format":"fencecheck.history/v1","run":{},"ops":[],"faults":[{"kind":"pause","target":"client-0","start":-1,"end":5,"detail":""}]}`, `faults[0]: field "start": negative time -1`},
		{"negative valid_until", op(`{"id":2,"client":0,"kind":"acquire","call":9,"return":10,"status":"ok","token":1,"valid_until":-1}`), `op 2 (ops[1]): field "valid_until": negative time -1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(strings.NewReader(tc.in), "h.json")
			require.Error(t, err)
			require.Contains(t, err.Error(), "h.json")
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestRecorderConcurrent(t *testing.T) {
	r := NewRecorder()
	seen := 0
	var mu sync.Mutex
	r.Watch(func(Op) { mu.Lock(); seen++; mu.Unlock() })
	var wg sync.WaitGroup
	for c := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				p := r.Begin(c, Write, int64(i+1), "", nil)
				p.Done(OK, int64(i+1), strings.Repeat("x", 1)+string(rune('a'+c))+string(rune('0'+i%10))+string(rune('A'+i/10)), "")
			}
		}()
	}
	wg.Wait()
	h := r.History(Run{Seed: 1})
	require.Len(t, h.Ops, 200)
	require.Equal(t, 200, seen)
	require.NoError(t, h.Validate())
	for i, o := range h.Ops {
		require.Equal(t, i+1, o.ID)
		require.LessOrEqual(t, o.Call, *o.Return)
	}
}

func TestPasses(t *testing.T) {
	require.True(t, Passes(FenceStrict, 5, 4))
	require.False(t, Passes(FenceStrict, 4, 4))
	require.True(t, Passes(FenceMonotonic, 4, 4))
	require.False(t, Passes(FenceMonotonic, 3, 4))
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(example))
	f.Add([]byte(`{"format":"fencecheck.history/v1","run":{},"ops":[{"id":1,"client":0,"kind":"write","call":1,"status":"unknown","value":"v","read_id":1}]}`))
	f.Add([]byte(`{"format":"fencecheck.history/v1"`))
	f.Add([]byte(`{"format":"fencecheck.history/v1","run":{"seed":1,"x":[1,{"y":"}"}]},"ops":[{"id":1,"client":0,"kind":"read","call":1,"return":2,"status":"ok","value":"caf\u00e9"},{"id":2,"client":0,"kind":"write","call":3,"return":null,"status":"unknown","token":1,"value":"é","read_id":1,"key":"k"}],"faults":[]}`))
	// Escaped error texts, unknown keys of every type, nulls, a duplicate key, and a
	// key in another case (which encoding/json matches to its field).
	f.Add([]byte(`{"ops":[{"status":"unknown","call":7,"kind":"acquire","id":3,"client":1,"error":"Post \"http://127.0.0.1:4/acquire\": context canceled\n\u00e9\ud83d\ude00","detail":{"a":[true,false,null,-1.5e3,"x"]},"token":null,"return":null,"read_id":null,"value":null}],"lost":[{"client":1,"acquire_id":3,"token":0,"at":9}],"extra":1,"format":"fencecheck.history/v1","run":{}}`))
	f.Add([]byte(`{"format":"fencecheck.history/v1","run":{},"ops":[{"id":1,"client":0,"kind":"read","call":1,"return":2,"return":3,"status":"ok","Value":"x"}]}`))
	f.Add([]byte("{\"format\":\"fencecheck.history/v1\",\"run\":{},\"ops\":[{\"id\":1,\"client\":0,\"kind\":\"read\",\"call\":1,\"return\":2,\"status\":\"ok\",\"value\":\"\xff\"}]}"))
	for _, tc := range strictCases {
		if tc.op != "" {
			f.Add([]byte(strictDoc(tc.op, "")))
		} else {
			f.Add([]byte(tc.doc))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fast, ok, ferr := decodeFast(b)
		var slow History
		jerr := json.Unmarshal(b, &slow)
		// The fast parser takes every document encoding/json decodes (to read it
		// strictly: decodeJSON only words errors) ...
		if jerr == nil {
			require.True(t, ok, "encoding/json decodes what the fast parser does not take")
		}
		// ... and where it finds no strictness error, it agrees with encoding/json.
		if ok && ferr == nil {
			require.NoError(t, jerr, "the fast parser accepted what encoding/json refuses")
			require.Equal(t, &slow, fast)
		}
		h, err := Decode(bytes.NewReader(b), "fuzz")
		if err != nil {
			return
		}
		// Whatever decodes is valid and survives a round trip.
		require.NoError(t, h.Validate())
		var buf bytes.Buffer
		require.NoError(t, Encode(&buf, h))
		_, err = Decode(&buf, "again")
		require.NoError(t, err)
	})
}

// The optional key: absent in v1 files (the default key), round-tripped when present,
// and a write's read_id must name a read of the same key.
func TestKeyField(t *testing.T) {
	for _, tc := range []struct {
		name, ops, err string
	}{
		{"absent", `{"id": 1, "client": 0, "kind": "read", "call": 1, "return": 2, "status": "ok", "token": 0}`, ""},
		{"present", `{"id": 1, "client": 0, "kind": "read", "call": 1, "return": 2, "status": "ok", "token": 0, "key": "k3"}`, ""},
		{"read_id across keys",
			`{"id": 1, "client": 0, "kind": "read", "call": 1, "return": 2, "status": "ok", "token": 0, "key": "a"},
			 {"id": 2, "client": 0, "kind": "write", "call": 3, "return": 4, "status": "ok", "token": 1, "value": "v", "read_id": 1, "key": "b"}`,
			`op 2 (ops[1]): field "read_id": names op 1, a read of key "a", but this write is to key "b"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := `{"format": "fencecheck.history/v1", "run": {"seed": 1}, "ops": [` + tc.ops + `], "faults": []}`
			h, err := Decode(strings.NewReader(doc), "k.json")
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			var buf bytes.Buffer
			require.NoError(t, Encode(&buf, h))
			require.Equal(t, strings.Contains(tc.ops, `"key"`), strings.Contains(buf.String(), `"key"`))
			h2, err := Decode(&buf, "again")
			require.NoError(t, err)
			require.Equal(t, h, h2)
		})
	}
}

// What Encode writes takes the fast path (so a large history does not silently fall
// back to encoding/json), and the fast path gives what encoding/json gives.
func TestFastPathTakesEncodeOutput(t *testing.T) {
	h, err := Decode(strings.NewReader(example), "example.json")
	require.NoError(t, err)
	rid := 2
	h.Ops = append(h.Ops,
		Op{ID: 5, Client: 1, Kind: Write, Call: 9000, Status: Unknown, Token: 43, Value: "ünïcode", ReadID: &rid, Error: "timeout", Key: "k1", ValidUntil: 9500},
		Op{ID: 6, Client: 2, Kind: Read, Call: 9100, Return: new(int64(9200)), Status: OK, Value: `quote " and \ slash`})
	h.Effects = []Effect{{ID: 1, Value: "c0-1", Token: 42, At: 5000, Via: ViaOutbox}}
	var buf bytes.Buffer
	require.NoError(t, Encode(&buf, h))
	fast, ok, err := decodeFast(buf.Bytes())
	require.True(t, ok, "the fast parser refused Encode's output")
	require.NoError(t, err)
	var slow History
	require.NoError(t, json.Unmarshal(buf.Bytes(), &slow))
	require.Equal(t, &slow, fast)
	require.Equal(t, int64(9500), fast.Ops[len(fast.Ops)-2].ValidUntil, "valid_until is read")
}

// A client's validity estimate is recorded on its op, on the run's clock.
func TestRecorderValidUntil(t *testing.T) {
	r := NewRecorder()
	p := r.Begin(0, Acquire, 0, "", nil)
	p.ValidUntil(r.Start().Add(5 * time.Second))
	p.Done(OK, 1, "", "")
	h := r.History(Run{})
	require.Equal(t, (5 * time.Second).Nanoseconds(), h.Ops[0].ValidUntil)
	var buf bytes.Buffer
	require.NoError(t, Encode(&buf, h))
	require.Contains(t, buf.String(), `"valid_until": 5000000000`)
}
