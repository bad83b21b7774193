package models

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/harness/history"
)

// pausedHolder: client 0 holds token 42 and pauses; client 1 takes over with 43 and
// writes; client 0 wakes and writes with 42, which the fence rejects.
func pausedHolder() (*builder, int, int) {
	b := newHistory(strict)
	b.acquire(0, 0, 1, ok, 42)
	r0 := b.read(0, 2, 3, 0, "")
	b.acquire(1, 10, 11, ok, 43)
	r1 := b.read(1, 12, 13, 0, "")
	newer := b.rmw(1, 14, 15, ok, 43, "c1-1", r1)
	b.release(1, 16, 17, ok, 43)
	stale := b.rmw(0, 20, 21, rejected, 42, "c0-1", r0)
	b.read(2, 30, 31, 43, "c1-1")
	end := int64(19)
	b.h.Faults = []history.Fault{{Kind: "pause", Target: "client-0", Start: 4, End: &end}}
	return b, newer, stale
}

func effect(id int, v string, tok, at int64, via string) history.Effect {
	return history.Effect{ID: id, Value: v, Token: tok, At: at, Via: via}
}

func check(t *testing.T, h *history.History) *Report {
	t.Helper()
	rep, err := Check(context.Background(), h, Options{})
	require.NoError(t, err)
	require.True(t, rep.Agree)
	return rep
}

// The direct variant: the client announced its write before making it; the fence
// rejected the write, but the side effect was out.
func TestEffectsDirectEscapes(t *testing.T) {
	b, newer, stale := pausedHolder()
	b.h.Effects = []history.Effect{effect(1, "c1-1", 43, 14, history.ViaDirect), effect(2, "c0-1", 42, 20, history.ViaDirect)}
	rep := check(t, b.h)
	require.Equal(t, Violated, rep.Verdicts[Effects])
	require.Equal(t, Held, rep.Verdicts[Register], "the fence itself held")
	res, found := rep.Result(Effects)
	require.True(t, found)
	require.Equal(t, []int{stale, newer}, res.Counterexample, "the stale write, then the write it lost to")
	require.Contains(t, res.Explanation, "side effect 2")
	require.Contains(t, res.Explanation, "escaped the fence")
	require.Equal(t, 1, rep.Effects.Stale)
	require.Equal(t, 1, rep.Effects.OfAccepted)
	require.Equal(t, StaleEffect{Effect: 2, At: 20, Via: "direct", Value: "c0-1", Token: 42, Write: stale, Client: 0,
		WriteStatus: history.Rejected, Newer: newer, Explanation: rep.Effects.StaleEffects[0].Explanation}, rep.Effects.StaleEffects[0])
	require.Len(t, rep.Results, 5)
	require.Equal(t, Effects, rep.Results[4].Property)
}

// The outbox: only the accepted write's effect was delivered.
func TestEffectsOutboxHolds(t *testing.T) {
	b, _, _ := pausedHolder()
	b.h.Effects = []history.Effect{effect(1, "c1-1", 43, 16, history.ViaOutbox), effect(2, "c1-1", 43, 18, history.ViaOutbox)}
	rep := check(t, b.h)
	require.Equal(t, Held, rep.Verdicts[Effects])
	require.Equal(t, 1, rep.Effects.Duplicates, "at-least-once delivery may repeat")
	require.Contains(t, rep.Results[4].Explanation, "1 stale write(s) were attempted and none of their side effects was delivered")
}

func TestEffectsKinds(t *testing.T) {
	// A fault that never bit: inconclusive.
	b := newHistory(strict)
	b.acquire(0, 0, 1, ok, 1)
	r := b.read(0, 2, 3, 0, "")
	b.rmw(0, 4, 5, ok, 1, "c0-1", r)
	end := int64(9)
	b.h.Faults = []history.Fault{{Kind: "pause", Start: 6, End: &end}}
	b.h.Effects = []history.Effect{effect(1, "c0-1", 1, 6, history.ViaOutbox)}
	require.Equal(t, Inconclusive, check(t, b.h).Verdicts[Effects])

	// Without faults it is simply held.
	b.h.Faults = nil
	require.Equal(t, Held, check(t, b.h).Verdicts[Effects])

	// An effect of a write with unknown outcome is not a violation; once a read saw the
	// value, the write took effect.
	b = newHistory(strict)
	b.acquire(0, 0, 1, ok, 1)
	b.write(0, 2, never, unknown, 1, "c0-1")
	b.acquire(1, 3, 4, ok, 2)
	b.write(1, 5, never, unknown, 2, "c1-1")
	b.read(2, 6, 7, 2, "c1-1")
	b.h.Effects = []history.Effect{effect(1, "c0-1", 1, 3, ""), effect(2, "c1-1", 2, 6, "")}
	rep := check(t, b.h)
	require.Equal(t, Held, rep.Verdicts[Effects])
	require.Equal(t, 1, rep.Effects.OfUnknown)
	require.Equal(t, 1, rep.Effects.OfAccepted)

	// A failed write's effect, and an effect no write carries, both escaped.
	b = newHistory(strict)
	b.acquire(0, 0, 1, ok, 1)
	failedW := b.write(0, 2, 3, failed, 1, "c0-1")
	b.h.Effects = []history.Effect{effect(1, "c0-1", 1, 2, ""), effect(2, "nobody", 1, 4, "")}
	rep = check(t, b.h)
	require.Equal(t, Violated, rep.Verdicts[Effects])
	require.Equal(t, 2, rep.Effects.Stale)
	require.Equal(t, []int{failedW}, rep.Results[4].Counterexample)
	require.Contains(t, rep.Effects.StaleEffects[1].Explanation, "no write in the history carries its value")
	require.Zero(t, rep.Effects.StaleEffects[1].Write)
}

// A history without side effects has exactly the four core properties, in reports and
// in JSON, as before the extension.
func TestNoEffectsNoProperty(t *testing.T) {
	b, _, _ := pausedHolder()
	rep := check(t, b.h)
	require.Len(t, rep.Verdicts, 4)
	require.Len(t, rep.Results, 4)
	require.Nil(t, rep.Effects)
	raw, err := json.Marshal(rep)
	require.NoError(t, err)
	assert.NotContains(t, string(raw), "effects")

	b.h.Effects = []history.Effect{effect(1, "c1-1", 43, 16, history.ViaOutbox)}
	raw, err = json.Marshal(check(t, b.h))
	require.NoError(t, err)
	var got struct {
		Verdicts map[string]string `json:"verdicts"`
		Effects  map[string]any    `json:"effects"`
	}
	require.NoError(t, json.Unmarshal(raw, &got))
	assert.Equal(t, "held", got.Verdicts["effects"])
	assert.Equal(t, 1.0, got.Effects["delivered"])
	assert.Equal(t, []any{}, got.Effects["stale_effects"])
	require.Equal(t, []Property{Register, Updates, Tokens, Mutex}, Properties, "the core four are unchanged")
}
