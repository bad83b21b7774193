package history

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// scanAll reads the history at path whole through a Scanner whose buffer starts at
// bufSize bytes, reading bufOps ops at a time.
func scanAll(t testing.TB, path string, bufSize, bufOps int) (*History, error) {
	t.Helper()
	sc, err := openScanner(path, bufSize)
	if err != nil {
		return nil, err
	}
	defer func() { require.NoError(t, sc.Close()) }()
	var ops []Op
	buf := make([]Op, bufOps)
	for {
		n, err := sc.Read(buf)
		for _, o := range buf[:n] {
			ops = append(ops, o.Clone())
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	h := sc.Header()
	h.Ops = ops
	return h, nil
}

func writeTemp(t testing.TB, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "h.json")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	return path
}

// The scanner reads what Decode reads, member order, spacing and buffer ends
// notwithstanding.
func TestScannerMatchesDecode(t *testing.T) {
	docs := map[string]string{
		"example":   example,
		"effects":   withEffects(`[{"id": 1, "value": "c0-1", "token": 42, "write_id": 3, "at": 5000, "via": "outbox"}]`),
		"lost":      withLost(`[{"client": 0, "acquire_id": 1, "token": 42, "at": 5000, "reason": "renewal \"refused\""}]`),
		"run last":  `{"ops": [{"id": 1, "client": 0, "kind": "read", "call": 1, "return": 2, "status": "ok", "token": 0}], "faults": [], "run": {"fence": "monotonic", "seed": 3, "x": "]}"}, "format": "fencecheck.history/v1"}`,
		"empty ops": "{\"format\":\"fencecheck.history/v1\",\"run\":{},\"ops\":[ \n ],\"faults\":[]}\n\n",
		"escaped":   `{"form\u0061t": "fencecheck.history/v1", "run": {}, "ops": [{"\u0069d": 1, "client": 0, "kind": "read", "call": 1, "return": 2, "status": "ok", "token": 0, "value": "\u00e9"}]}`,
	}
	var buf bytes.Buffer
	require.NoError(t, Encode(&buf, historyOf(t, example)))
	docs["encoded"] = buf.String()
	for name, doc := range docs {
		t.Run(name, func(t *testing.T) {
			want, err := Decode(strings.NewReader(doc), "h.json")
			require.NoError(t, err)
			path := writeTemp(t, []byte(doc))
			for _, size := range []int{1, 7, 64, 1 << 20} {
				for _, ops := range []int{1, 3, 100} {
					got, err := scanAll(t, path, size, ops)
					require.NoError(t, err, "buffer %d", size)
					if want.Ops == nil && len(got.Ops) == 0 {
						got.Ops = nil
					}
					if len(want.Ops) == 0 && got.Ops == nil {
						got.Ops = want.Ops
					}
					require.Equal(t, want, got, "buffer %d, %d ops at a time", size, ops)
				}
			}
			whole, err := ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, want, whole)
		})
	}
}

func historyOf(t testing.TB, doc string) *History {
	h, err := Decode(strings.NewReader(doc), "h.json")
	require.NoError(t, err)
	return h
}

func TestScannerErrors(t *testing.T) {
	for _, tc := range []struct{ name, doc, want string }{
		{"truncated", example[:300], "truncated JSON"},
		{"not an object", `[1, 2]`, "line 1, column 1: want the history object"},
		{"bad op", "{\"format\":\"fencecheck.history/v1\",\"run\":{},\"ops\":[\n{\"id\":1,\"client\":\"zero\",\"kind\":\"read\",\"call\":1,\"return\":2,\"status\":\"ok\"}]}", `line 2, column 24: field "ops.client": got JSON string, want int`},
		{"op syntax", "{\"format\":\"fencecheck.history/v1\",\"run\":{},\"ops\":[\n{\"id\":1,,}]}", "line 2, column 9: invalid character ','"},
		{"invalid op", `{"format":"fencecheck.history/v1","run":{},"ops":[{"id":4,"client":0,"kind":"cas","call":1,"return":2,"status":"ok"}]}`, `op 4 (ops[0]): field "kind"`},
		{"wrong format", `{"format":"v0","run":{},"ops":[]}`, `field "format": got "v0"`},
		{"bad fence", `{"format":"fencecheck.history/v1","run":{"fence":"loose"},"ops":[]}`, `field "run.fence"`},
		{"bad fault", `{"format":"fencecheck.history/v1","run":{},"ops":[],"faults":[{"kind":"","target":"x","start":1,"end":null}]}`, `faults[0]: field "kind": empty`},
		{"trailing", `{"format":"fencecheck.history/v1","run":{},"ops":[]} x`, "trailing data"},
		{"two ops", `{"format":"fencecheck.history/v1","run":{},"ops":[],"ops":[]}`, `field "ops": given twice`},
		{"null ops", `{"format":"fencecheck.history/v1","run":{},"ops":null}`, `field "ops": null`},
		{"wrong tail type", `{"format":"fencecheck.history/v1","run":{},"ops":[],"faults":{"kind":"x"}}`, `field "faults"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeTemp(t, []byte(tc.doc))
			for _, size := range []int{5, 1 << 20} {
				_, err := scanAll(t, path, size, 10)
				require.Error(t, err)
				require.Contains(t, err.Error(), path+": ")
				require.Contains(t, err.Error(), tc.want, "buffer %d", size)
			}
		})
	}
	_, err := scanAll(t, writeTemp(t, []byte(`{"format":"fencecheck.history/v1","run":{},"ops":{}}`)), 1<<20, 10)
	require.True(t, errors.Is(err, ErrNotStreamable), "%v", err)
}

func FuzzScanner(f *testing.F) {
	f.Add([]byte(example))
	f.Add([]byte(withLost(`[{"client": 0, "acquire_id": 1, "token": 42, "at": 5000}]`)))
	f.Add([]byte(`{"ops":[{"id":1,"client":0,"kind":"read","call":1,"return":2,"status":"ok","error":"a \"b\""}],"run":{},"format":"fencecheck.history/v1"}`))
	for _, tc := range strictCases {
		if tc.op != "" {
			f.Add([]byte(strictDoc(tc.op, "")))
		} else {
			f.Add([]byte(tc.doc))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		want, werr := Decode(bytes.NewReader(b), "h.json")
		path := writeTemp(t, b)
		got, gerr := scanAll(t, path, 16, 2)
		if errors.Is(gerr, ErrNotStreamable) {
			return
		}
		if werr != nil {
			// The scanner checks ops one by one; what relates them is the reader's.
			if gerr == nil {
				got.Ops = append([]Op{}, got.Ops...)
				require.Error(t, got.Validate(), "Decode refuses (%v), the scanner reads it and it validates", werr)
			}
			return
		}
		require.NoError(t, gerr)
		if len(want.Ops) == 0 && len(got.Ops) == 0 {
			got.Ops = want.Ops
		}
		require.Equal(t, want, got)
	})
}

// A segmented history reads as the history it was written from, through its head,
// its run's directory, or its segments' directory.
func TestSegmentsRoundTrip(t *testing.T) {
	h := historyOf(t, withLost(`[{"client": 0, "acquire_id": 1, "token": 42, "at": 5000}]`))
	h.Effects = []Effect{{ID: 1, Value: "c0-1", Token: 42, At: 3500, Via: ViaOutbox}}
	dir := t.TempDir()
	headPath := filepath.Join(dir, "history.json")
	w, err := CreateSegments(headPath, h.Run, 3)
	require.NoError(t, err)
	for i := range h.Ops {
		require.NoError(t, w.WriteOp(&h.Ops[i], h.Faults[:0], nil))
		if i == 2 {
			require.NoError(t, w.WriteEffect(&h.Effects[0], h.Faults[:0], nil))
		}
	}
	require.NoError(t, w.Finish(h.Run, h.Faults, h.Lost))
	files, err := filepath.Glob(filepath.Join(dir, SegmentsDir, "*"))
	require.NoError(t, err)
	require.Len(t, files, 3, "two ops segments of 3 and 1 ops, one effects segment: %v", files)

	for _, path := range []string{headPath, dir} {
		got, err := ReadFile(path)
		require.NoError(t, err, path)
		require.Equal(t, h, got, path)
		sc, err := OpenScanner(path)
		require.NoError(t, err)
		require.True(t, sc.Segmented())
		require.True(t, sc.Complete())
		require.True(t, sc.TailKnown(), "a segmented history's tail is in its head")
		require.NoError(t, sc.Close())
	}
	// Without the head, the segments alone.
	got, err := ReadFile(filepath.Join(dir, SegmentsDir))
	require.NoError(t, err)
	require.Equal(t, h.Ops, got.Ops)

	// An old reader refuses the head rather than reading it as an empty history.
	b, err := os.ReadFile(headPath)
	require.NoError(t, err)
	_, err = Decode(bytes.NewReader(b), "head")
	require.Error(t, err)
}

// A run that stops mid-line leaves a readable history of every complete line.
func TestSegmentsOfAStoppedRun(t *testing.T) {
	h := historyOf(t, example)
	dir := t.TempDir()
	headPath := filepath.Join(dir, "history.json")
	w, err := CreateSegments(headPath, h.Run, 100)
	require.NoError(t, err)
	for i := range h.Ops {
		require.NoError(t, w.WriteOp(&h.Ops[i], nil, nil))
	}
	require.NoError(t, w.Flush(nil, nil))
	seg := filepath.Join(dir, SegmentsDir, "ops-000001.jsonl")
	f, err := os.OpenFile(seg, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"id":5,"client":1,"kin`)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	sc, err := OpenScanner(headPath)
	require.NoError(t, err)
	require.False(t, sc.Complete())
	require.NoError(t, sc.Close())
	got, err := ReadFile(headPath)
	require.NoError(t, err)
	require.Equal(t, h.Ops, got.Ops)

	// Once complete, a cut line is an error naming the segment and line.
	require.NoError(t, w.Finish(h.Run, nil, nil))
	_, err = ReadFile(headPath)
	require.ErrorContains(t, err, "ops-000001.jsonl: line 5")
}
