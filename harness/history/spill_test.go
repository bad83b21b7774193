package history

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// A recorder that spills writes every op, in id order, to a segmented history that
// reads back as the history a recorder without it would have returned; in memory it
// keeps the latest ops, those since an active fault began, and those still open.
func TestRecorderSpills(t *testing.T) {
	head := filepath.Join(t.TempDir(), "history.json")
	r := NewRecorder()
	run := Run{Scenario: "spill", Seed: 3}
	r.SpillTo(Spill{Head: head, After: 50, PerSegment: 40, Keep: 10}, run)
	open := r.Begin(9, Acquire, 0, "", nil) // stays open for a while
	fi := r.FaultStart("pause", "client-0", "")
	var wg sync.WaitGroup
	var firstKept int // the first op in memory when the fault ended
	for c := range 4 {
		wg.Go(func() {
			for i := range 5000 {
				w := r.Begin(c, Write, int64(i+1), fmt.Sprintf("c%d-%d", c, i), nil)
				w.Done(OK, int64(i+1), fmt.Sprintf("c%d-%d", c, i), "")
				if i == 2500 && c == 0 {
					open.Done(OK, 1, "", "")
					r.FaultEndNote(fi, func(_ Fault, ops []Op) string {
						firstKept = ops[0].ID
						return fmt.Sprintf("%d ops", len(ops))
					})
				}
			}
		})
	}
	wg.Wait()
	require.LessOrEqual(t, firstKept, 2, "the ops since the fault began (after op 1) are in memory when it ends")
	r.Effect("c0-7", 8, ViaOutbox)
	r.Lost(9, 1, 1, "renewal refused")
	r.mu.Lock()
	inMemory := len(r.ops)
	r.mu.Unlock()
	require.Less(t, inMemory, 10+2*flushBatch, "only the latest ops stay in memory")
	h, spilled, err := r.Finish(run)
	require.NoError(t, err)
	require.True(t, spilled)
	require.Nil(t, h.Ops, "a spilled history's ops are on disk")
	require.Equal(t, 20001, r.Ops())

	got, err := ReadFile(head)
	require.NoError(t, err)
	require.Len(t, got.Ops, 20001)
	for i, o := range got.Ops {
		require.Equal(t, i+1, o.ID, "every op, in id order")
		require.Equal(t, OK, o.Status)
	}
	require.Equal(t, run, got.Run)
	require.Len(t, got.Faults, 1)
	require.NotNil(t, got.Faults[0].End)
	require.Len(t, got.Effects, 1)
	require.Equal(t, []Lost{{Client: 9, AcquireID: 1, Token: 1, At: got.Lost[0].At, Reason: "renewal refused"}}, got.Lost)
	files, err := filepath.Glob(filepath.Join(filepath.Dir(head), SegmentsDir, "ops-*.jsonl"))
	require.NoError(t, err)
	require.Len(t, files, 501, "rotated every 40 ops")
}

// A recorder that records fewer ops than Spill.After keeps its history in memory, as
// without SpillTo, and writes nothing.
func TestRecorderShortRunDoesNotSpill(t *testing.T) {
	head := filepath.Join(t.TempDir(), "history.json")
	r := NewRecorder()
	r.SpillTo(Spill{Head: head, After: 100}, Run{})
	for i := range 10 {
		r.Begin(0, Read, 0, "", nil).Done(OK, 0, "", "")
		_ = i
	}
	h, spilled, err := r.Finish(Run{Seed: 1})
	require.NoError(t, err)
	require.False(t, spilled)
	require.Len(t, h.Ops, 10)
	require.NoFileExists(t, head)
}

// What a run learns at its end goes into the head of its segmented history.
func TestSetSegmentsRun(t *testing.T) {
	head := filepath.Join(t.TempDir(), "history.json")
	w, err := CreateSegments(head, Run{Seed: 1}, 10)
	require.NoError(t, err)
	require.NoError(t, w.WriteOp(&Op{ID: 1, Client: 0, Kind: Read, Status: Unknown}, nil, nil))
	require.NoError(t, w.Finish(Run{Seed: 1}, nil, nil))
	require.NoError(t, SetSegmentsRun(head, Run{Seed: 1, NoToken: "random values"}))
	h, err := ReadFile(head)
	require.NoError(t, err)
	require.Equal(t, "random values", h.Run.NoToken)
	require.Len(t, h.Ops, 1)
	require.Error(t, SetSegmentsRun(filepath.Join(t.TempDir(), "none.json"), Run{}))
}
