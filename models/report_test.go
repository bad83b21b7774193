package models

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/models/internal/histgen"
)

// staleHistory: a paused client's stale write gets through an unfenced register.
func staleHistory() *history.History {
	b := newHistory(strict)
	b.acquire(0, 0, 1, ok, 42)
	r0 := b.read(0, 2, 3, 0, "")
	b.acquire(1, 10, 11, ok, 43) // client 0's lease expired while it was paused
	r1 := b.read(1, 12, 13, 0, "")
	b.rmw(1, 14, 15, ok, 43, "c1-1", r1)
	b.release(1, 16, 17, ok, 43)
	b.rmw(0, 20, never, unknown, 42, "c0-1", r0) // wakes up and writes
	b.read(2, 30, 31, 42, "c0-1")
	end := int64(25)
	b.h.Faults = []history.Fault{{Kind: "pause", Target: "client-0", Start: 4, End: &end, Detail: "GC-like pause"}}
	return b.h
}

func TestReportJSON(t *testing.T) {
	rep, err := Check(context.Background(), staleHistory(), Options{})
	require.NoError(t, err)
	require.True(t, rep.Agree)
	b, err := json.Marshal(rep)
	require.NoError(t, err)
	var got struct {
		Verdicts    map[string]string `json:"verdicts"`
		Results     []map[string]any  `json:"results"`
		StaleWrites []map[string]any  `json:"stale_writes"`
		LostUpdates []map[string]any  `json:"lost_updates"`
		Evidence    map[string]any    `json:"evidence"`
		Agree       bool              `json:"direct_agrees"`
	}
	require.NoError(t, json.Unmarshal(b, &got))
	assert.Equal(t, map[string]string{"register": "violated", "updates": "violated", "tokens": "held", "mutex": "violated"}, got.Verdicts)
	require.Len(t, got.Results, 4)
	assert.Equal(t, "register", got.Results[0]["property"])
	require.Len(t, got.StaleWrites, 1)
	assert.Equal(t, map[string]any{"write": 7.0, "client": 0.0, "token": 42.0, "at": 20.0, "status": "accepted",
		"newer": 5.0, "newer_client": 1.0, "newer_token": 43.0, "newer_at": 15.0, "seen_by": 8.0}, got.StaleWrites[0])
	require.Len(t, got.LostUpdates, 1)
	assert.Equal(t, 7.0, got.LostUpdates[0]["write"])
	assert.Equal(t, 5.0, got.LostUpdates[0]["lost"])
	assert.Equal(t, 1.0, got.Evidence["stale_accepted"])
	// Client 0 believed from 1 to the end (31), never releasing; client 1 took the lock
	// at 11, so client 0 went on believing for 20 ns after its lease was taken over.
	assert.Equal(t, 20.0, got.Evidence["validity_gap_ns"])
	assert.Equal(t, 5.0, got.Evidence["validity_gap_total_ns"])
	assert.True(t, got.Agree)

	res, _ := rep.Result(Register)
	assert.Equal(t, []int{7, 5, 8}, res.Counterexample)
	assert.Contains(t, res.Explanation, "stale write got through")
}

func TestVisualize(t *testing.T) {
	for _, h := range []*history.History{staleHistory(), realisticHistory(300)} {
		for _, p := range Properties {
			var buf bytes.Buffer
			require.NoError(t, Visualize(context.Background(), &buf, p, h), p)
			html := buf.String()
			assert.True(t, strings.Contains(html, "<html"), p)
			if h.Run.Scenario == "" {
				assert.Contains(t, html, "fault client-0", "faults are drawn")
			}
		}
	}
	var buf bytes.Buffer
	require.NoError(t, Visualize(context.Background(), &buf, Register, staleHistory()))
	assert.Contains(t, buf.String(), "stale writes")
	assert.Contains(t, buf.String(), `#7 c0 write(v=c0-1, token 42)`)

	assert.Error(t, Visualize(context.Background(), &buf, Property("nope"), staleHistory()))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, Visualize(ctx, &buf, Register, staleHistory()), context.Canceled)
}

// Past porcupine's memory cap, a violated property is drawn as its witness and a held
// one is not drawn at all, with the reason.
func TestVisualizeLargeHistory(t *testing.T) {
	h := histgen.Generate(histgen.Config{Ops: 100_000, Seed: 9, Unknown: 0.01, Pause: 0.01, StaleAt: 0.99})
	ok, why := Drawable(Register, h)
	require.False(t, ok)
	assert.Contains(t, why, "grows as n²")

	var buf bytes.Buffer
	require.NoError(t, Visualize(context.Background(), &buf, Register, h))
	assert.Contains(t, buf.String(), "witness of the register violation")
	assert.Less(t, buf.Len(), 1<<20, "a few ops, not the whole history")

	held := histgen.Generate(histgen.Config{Ops: 100_000, Seed: 9, Unknown: 0.01, Pause: 0.01})
	buf.Reset()
	assert.ErrorContains(t, Visualize(context.Background(), &buf, Register, held), "not drawn")
}
