package models

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/models/internal/histgen"
)

func writeHistory(t testing.TB, h *history.History) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "history.json")
	require.NoError(t, history.WriteFile(path, h))
	return path
}

// requireSameVerdicts holds a streamed report to the in-memory one of the same history.
func requireSameVerdicts(t *testing.T, want *Report, res *FileResult, ops int) {
	t.Helper()
	got := res.Report
	require.True(t, res.Streamed)
	require.Equal(t, ops, got.Ops)
	require.Equal(t, want.Verdicts, got.Verdicts)
	require.Equal(t, want.Evidence, got.Evidence)
	if want.Verdicts[Register] != Violated {
		require.Equal(t, want.StaleWrites, got.StaleWrites)
	}
	require.Empty(t, got.Trouble())
	for _, r := range got.Results {
		if r.Verdict == Violated && r.Property != Effects {
			require.True(t, r.Certified, "%s: %s (%s)", r.Property, r.Explanation, r.CertifyNote)
		}
		if r.Property != Effects && !declaredNoToken(r.Property, res.History) {
			require.Equal(t, OpinionSkipped, r.Porcupine)
			require.Contains(t, r.PorcupineNote, "checked as a stream")
		}
	}
}

// CheckFile streams a large file (here: every file) to the verdicts Check gives the
// same history in memory, each violation certified.
func TestCheckFileStreamsLikeCheck(t *testing.T) {
	for _, c := range []histgen.Config{
		{Ops: 20000, Seed: 1, Unknown: 0.02, Pause: 0.02, Realistic: true},
		{Ops: 20000, Seed: 2, Unknown: 0.02, Pause: 0.02, Realistic: true, StaleAt: 0.9},
		{Ops: 20000, Seed: 3, Unknown: 0.02, Pause: 0.02, StaleAt: 0.5},
		{Ops: 20000, Seed: 4, Unknown: 0.02, Pause: 0.02, Keys: 16, StaleAt: 0.7},
		{Ops: 20000, Seed: 5, Unknown: 0.05, Pause: 0.02, Fence: history.FenceMonotonic},
	} {
		t.Run(fmt.Sprintf("%+v", c), func(t *testing.T) {
			h := histgen.Generate(c)
			want, err := Check(context.Background(), h, Options{PorcupineBudget: NoPorcupine})
			require.NoError(t, err)
			path := writeHistory(t, h)
			res, err := CheckFile(context.Background(), path, Options{StreamAbove: -1})
			require.NoError(t, err)
			requireSameVerdicts(t, want, res, len(h.Ops))
			require.Nil(t, res.History.Ops, "a streamed history keeps no ops")
			saved, err := history.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, saved.Run, res.History.Run)
		})
	}
}

// A small file is read whole and checked in memory, with porcupine's second opinion.
func TestCheckFileSmallInMemory(t *testing.T) {
	h := histgen.Generate(histgen.Config{Ops: 2000, Seed: 1, Unknown: 0.01, Pause: 0.02})
	res, err := CheckFile(context.Background(), writeHistory(t, h), Options{})
	require.NoError(t, err)
	require.False(t, res.Streamed)
	require.Len(t, res.History.Ops, len(h.Ops))
	r, _ := res.Report.Result(Register)
	require.Equal(t, OpinionAgreed, r.Porcupine, r.PorcupineNote)
}

// A segmented history streams through its head, its run's directory or its segments'
// directory alike.
func TestCheckFileSegmented(t *testing.T) {
	h := histgen.Generate(histgen.Config{Ops: 20000, Seed: 6, Unknown: 0.02, Pause: 0.02, Realistic: true, StaleAt: 0.8})
	h.Faults = append(h.Faults, history.Fault{Kind: "pause", Target: "client-1", Start: 5})
	dir := t.TempDir()
	head := filepath.Join(dir, "history.json")
	w, err := history.CreateSegments(head, h.Run, 3000)
	require.NoError(t, err)
	for i := range h.Ops {
		require.NoError(t, w.WriteOp(&h.Ops[i], nil, nil))
	}
	require.NoError(t, w.Finish(h.Run, h.Faults, nil))
	want, err := Check(context.Background(), h, Options{PorcupineBudget: NoPorcupine})
	require.NoError(t, err)
	for _, path := range []string{head, dir, filepath.Join(dir, history.SegmentsDir)} {
		res, err := CheckFile(context.Background(), path, Options{})
		require.NoError(t, err, path)
		if path == filepath.Join(dir, history.SegmentsDir) {
			// Without its head: no faults known, so held rather than inconclusive.
			require.Equal(t, want.Verdicts[Register], res.Report.Verdicts[Register])
			continue
		}
		requireSameVerdicts(t, want, res, len(h.Ops))
		require.Len(t, res.History.Faults, len(h.Faults))
	}
}

// A stream's errors name the file, the op and the field, and wrap ErrInvalid.
func TestCheckFileInvalid(t *testing.T) {
	base := histgen.Generate(histgen.Config{Ops: 3000, Seed: 7, Unknown: 0.01, Pause: 0.02})
	writeAt := slices.IndexFunc(base.Ops, func(o history.Op) bool { return o.Kind == history.Write && o.ID > 2000 })
	for _, tc := range []struct {
		name   string
		change func(h *history.History)
		want   string
	}{
		{"bad status", func(h *history.History) { h.Ops[2500].Status = "maybe" }, `op 2501 (ops[2500]): field "status"`},
		{"duplicate value", func(h *history.History) {
			prev := slices.IndexFunc(h.Ops[:writeAt], func(o history.Op) bool { return o.Kind == history.Write && o.ID > h.Ops[writeAt].ID-30 })
			if prev < 0 {
				prev = writeAt - 1
				for h.Ops[prev].Kind != history.Write {
					prev--
				}
			}
			h.Ops[writeAt].Value = h.Ops[prev].Value
		}, `field "value": value`},
		{"read_id of nothing", func(h *history.History) {
			id := 1_000_000
			h.Ops[writeAt].ReadID = &id
		}, `field "read_id"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &history.History{Format: base.Format, Run: base.Run, Faults: base.Faults, Ops: slices.Clone(base.Ops)}
			tc.change(h)
			path := writeHistory(t, h)
			_, err := CheckFile(context.Background(), path, Options{StreamAbove: -1})
			require.Error(t, err)
			require.True(t, errors.Is(err, ErrInvalid), "%v", err)
			require.True(t, strings.HasPrefix(err.Error(), path+": "), "%v", err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
	// Malformed JSON in the middle of the ops.
	b, err := os.ReadFile(writeHistory(t, base))
	require.NoError(t, err)
	i := strings.Index(string(b), `"id": 2000,`)
	b = append(b[:i:i], append([]byte(`"id": 2000,,`), b[i+len(`"id": 2000,`):]...)...)
	path := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(path, b, 0o644))
	_, err = CheckFile(context.Background(), path, Options{StreamAbove: -1})
	require.True(t, errors.Is(err, ErrInvalid), "%v", err)
	require.ErrorContains(t, err, path+": malformed history: line ")
}

// Ops the look-ahead window cannot put back in call order: checked in memory instead.
func TestCheckFileFallsBackToMemory(t *testing.T) {
	h := histgen.Generate(histgen.Config{Ops: 3000, Seed: 8, Unknown: 0.01, Pause: 0.02})
	h.Ops[0], h.Ops[len(h.Ops)-1] = h.Ops[len(h.Ops)-1], h.Ops[0] // ids no longer increase
	want, err := Check(context.Background(), h, Options{PorcupineBudget: NoPorcupine})
	require.NoError(t, err)
	res, err := CheckFile(context.Background(), writeHistory(t, h), Options{StreamAbove: -1, PorcupineBudget: NoPorcupine})
	require.NoError(t, err)
	require.False(t, res.Streamed)
	require.Equal(t, want.Verdicts, res.Report.Verdicts)
}

// An unknown write read only after the look-ahead window has passed it: the stream
// collects every unknown write's readers first and checks again, to Check's verdicts.
func TestCheckFileLateReader(t *testing.T) {
	h := histgen.Generate(histgen.Config{Ops: lookAhead + 20000, Seed: 9, Unknown: 0.01, Pause: 0.01})
	seen := map[string]bool{}
	for _, o := range h.Ops {
		if o.Kind == history.Read && o.Status == history.OK {
			seen[o.Value] = true
		}
	}
	w := slices.IndexFunc(h.Ops, func(o history.Op) bool {
		return o.Kind == history.Write && o.Status == history.Unknown && !seen[o.Value]
	})
	require.GreaterOrEqual(t, w, 0)
	last := h.Ops[len(h.Ops)-1]
	end := h.LastTime() + 10
	h.Ops = append(h.Ops, history.Op{ID: last.ID + 1, Client: 99, Kind: history.Read, Call: end, Return: &end, Status: history.OK, Token: h.Ops[w].Token, Value: h.Ops[w].Value})
	want, err := Check(context.Background(), h, Options{PorcupineBudget: NoPorcupine})
	require.NoError(t, err)
	res, err := CheckFile(context.Background(), writeHistory(t, h), Options{StreamAbove: -1})
	require.NoError(t, err)
	requireSameVerdicts(t, want, res, len(h.Ops))
}

// Effects and lost records that come after the ops in a file: read again with them
// known, to the effects verdict Check gives; lost records are checked against the
// acquires and change no verdict.
func TestCheckFileEffectsAndLost(t *testing.T) {
	h := histgen.Generate(histgen.Config{Ops: 20000, Seed: 10, Unknown: 0.02, Pause: 0.02})
	n := 0
	for _, o := range h.Ops {
		switch {
		case o.Kind == history.Write && (o.Status == history.OK || o.Status == history.Rejected) && n < 200:
			n++
			h.Effects = append(h.Effects, history.Effect{ID: n, Value: o.Value, Token: o.Token, At: o.End(), Via: history.ViaOutbox})
		case o.Kind == history.Acquire && o.Status == history.OK && len(h.Lost) < 5:
			h.Lost = append(h.Lost, history.Lost{Client: o.Client, AcquireID: o.ID, Token: o.Token, At: o.End() + 1, Reason: "renewal refused"})
		}
	}
	want, err := Check(context.Background(), h, Options{PorcupineBudget: NoPorcupine})
	require.NoError(t, err)
	require.Equal(t, Violated, want.Verdicts[Effects], "an effect of a rejected write")
	res, err := CheckFile(context.Background(), writeHistory(t, h), Options{StreamAbove: -1})
	require.NoError(t, err)
	requireSameVerdicts(t, want, res, len(h.Ops))
	require.Equal(t, want.Effects, res.Report.Effects)
	require.Equal(t, h.Lost, res.History.Lost)

	h.Lost = append(h.Lost, history.Lost{Client: 0, AcquireID: h.Ops[1].ID, At: 1})
	if h.Ops[1].Kind == history.Acquire && h.Ops[1].Client == 0 {
		h.Lost[len(h.Lost)-1].Client = 77
	}
	_, err = CheckFile(context.Background(), writeHistory(t, h), Options{StreamAbove: -1})
	require.True(t, errors.Is(err, ErrInvalid), "%v", err)
	require.ErrorContains(t, err, fmt.Sprintf(`lost[%d]: field "acquire_id"`, len(h.Lost)-1))
}

// A history with a misspelled, unknown or missing field is refused, naming the file,
// the op (index and id) and the field, whether it is checked as a stream or in memory:
// never read with a default that could change the verdict.
func TestCheckFileStrict(t *testing.T) {
	base := histgen.Generate(histgen.Config{Ops: 3000, Seed: 7, Unknown: 0.01, Pause: 0.02})
	base.Faults = []history.Fault{{Kind: "pause", Target: "client-0", Start: 1000, End: new(int64(2000)), Detail: "x"}}
	b, err := os.ReadFile(writeHistory(t, base))
	require.NoError(t, err)
	doc := string(b)
	// op2001 is the text of op 2001 (Encode writes one field a line).
	at := strings.Index(doc, "\"id\": 2001,")
	end := at + strings.Index(doc[at:], "}")
	op2001 := doc[at:end]
	for _, tc := range []struct {
		name, doc, want string
		is              error
	}{
		{"misspelled token", doc[:at] + strings.Replace(op2001, `"token":`, `"tokn":`, 1) + doc[end:],
			`op 2001 (ops[2000]): field "tokn": unknown field (did you mean "token"?)`, history.ErrUnknownField},
		{"no client", doc[:at] + strings.Replace(op2001, "\"client\":", "\"clients\":", 1) + doc[end:],
			`op 2001 (ops[2000]): field "clients": unknown field (did you mean "client"?)`, history.ErrUnknownField},
		{"no status", doc[:at] + strings.Replace(op2001, `"status":`, `"x":`, 1) + doc[end:],
			`op 2001 (ops[2000]): field "x": unknown field`, history.ErrUnknownField},
		{"unknown member", strings.Replace(doc, `"faults": [`, `"comment": "x", "faults": [`, 1),
			`field "comment": unknown field`, history.ErrUnknownField},
		{"fault without end", strings.Replace(doc, `"end":`, `"ends":`, 1),
			`faults[0]: field "ends": unknown field (did you mean "end"?)`, history.ErrUnknownField},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NotEqual(t, doc, tc.doc)
			path := filepath.Join(t.TempDir(), "history.json")
			require.NoError(t, os.WriteFile(path, []byte(tc.doc), 0o644))
			for _, above := range []int64{-1, 0} { // a stream; in memory
				_, err := CheckFile(context.Background(), path, Options{StreamAbove: above})
				require.Error(t, err)
				require.True(t, errors.Is(err, ErrInvalid), "%v", err)
				require.True(t, errors.Is(err, tc.is), "%v", err)
				require.True(t, strings.HasPrefix(err.Error(), path+": "), "%v", err)
				require.Contains(t, err.Error(), tc.want)
			}
		})
	}
	// A missing token, by removing its line from a write.
	w := slices.IndexFunc(base.Ops, func(o history.Op) bool { return o.Kind == history.Write && o.ID > 2000 })
	at = strings.Index(doc, fmt.Sprintf("\"id\": %d,", base.Ops[w].ID))
	tok := at + strings.Index(doc[at:], `"token":`)
	eol := tok + strings.Index(doc[tok:], "\n")
	path := filepath.Join(t.TempDir(), "history.json")
	require.NoError(t, os.WriteFile(path, []byte(doc[:tok]+`"x_": 0,`+doc[eol:]), 0o644))
	for _, above := range []int64{-1, 0} {
		_, err := CheckFile(context.Background(), path, Options{StreamAbove: above})
		require.True(t, errors.Is(err, ErrInvalid), "%v", err)
		require.ErrorContains(t, err, fmt.Sprintf("op %d (ops[%d]): field \"x_\": unknown field", base.Ops[w].ID, w))
	}
	require.NoError(t, os.WriteFile(path, []byte(doc[:tok]+doc[eol+1:]), 0o644))
	for _, above := range []int64{-1, 0} {
		_, err := CheckFile(context.Background(), path, Options{StreamAbove: above})
		require.True(t, errors.Is(err, ErrInvalid), "%v", err)
		require.True(t, errors.Is(err, history.ErrMissingField), "%v", err)
		require.ErrorContains(t, err, fmt.Sprintf("op %d (ops[%d]): field \"token\": missing: a write carries the token it sent", base.Ops[w].ID, w))
	}
}
