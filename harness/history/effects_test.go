package history

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// withEffects is the example history with the optional effects extension.
func withEffects(effects string) string {
	return strings.Replace(example, `"faults": [`, `"effects": `+effects+`,
  "faults": [`, 1)
}

func TestEffectsRoundTrip(t *testing.T) {
	src := withEffects(`[{"id": 1, "value": "c0-1", "token": 42, "write_id": 3, "at": 5000, "via": "outbox"},
	                     {"id": 2, "value": "c9-9", "token": 7, "at": 6000, "via": "direct"}]`)
	h, err := Decode(strings.NewReader(src), "effects.json")
	require.NoError(t, err)
	require.Len(t, h.Effects, 2)
	require.Equal(t, 3, *h.Effects[0].WriteID)
	require.Equal(t, ViaOutbox, h.Effects[0].Via)
	require.Nil(t, h.Effects[1].WriteID, "write_id is optional")
	require.Equal(t, 3, h.WriteFor(h.Effects[0]).ID)
	require.Nil(t, h.WriteFor(h.Effects[1]), "no write carries c9-9")
	var buf bytes.Buffer
	require.NoError(t, Encode(&buf, h))
	h2, err := Decode(&buf, "again")
	require.NoError(t, err)
	require.Equal(t, h, h2)
}

// A v1 file without effects loads as before and is written back without the field.
func TestNoEffectsStaysV1(t *testing.T) {
	h, err := Decode(strings.NewReader(example), "plain.json")
	require.NoError(t, err)
	require.Nil(t, h.Effects)
	var buf bytes.Buffer
	require.NoError(t, Encode(&buf, h))
	require.NotContains(t, buf.String(), "effects")
}

func TestEffectsValidation(t *testing.T) {
	for _, tc := range []struct{ name, effects, want string }{
		{"zero id", `[{"id": 0, "value": "c0-1", "token": 1, "at": 1}]`, `effects[0] (id 0): field "id": got 0`},
		{"duplicate id", `[{"id": 1, "value": "c0-1", "token": 1, "at": 1}, {"id": 1, "value": "c0-1", "token": 1, "at": 2}]`, `effects[1] (id 1): field "id": duplicate id`},
		{"empty value", `[{"id": 1, "value": "", "token": 1, "at": 1}]`, `effects[0] (id 1): field "value"`},
		{"negative at", `[{"id": 1, "value": "c0-1", "token": 1, "at": -5}]`, `effects[0] (id 1): field "at": negative time -5`},
		{"missing write", `[{"id": 1, "value": "c0-1", "write_id": 99, "token": 1, "at": 1}]`, `field "write_id": names op 99, which does not exist`},
		{"not a write", `[{"id": 1, "value": "c1-7", "write_id": 2, "token": 1, "at": 1}]`, `field "write_id": names op 2, a read, not a write`},
		{"other value", `[{"id": 4, "value": "c5-5", "write_id": 3, "token": 1, "at": 1}]`, `effects[0] (id 4): field "write_id": names op 3, which wrote "c0-1", not "c5-5"`},
		{"wrong type", `[{"id": 1, "value": 12, "token": 1, "at": 1}]`, `field "effects.value"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(strings.NewReader(withEffects(tc.effects)), "bad.json")
			require.Error(t, err)
			require.Contains(t, err.Error(), "bad.json: ")
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestRecorderEffects(t *testing.T) {
	r := NewRecorder()
	w := r.Begin(0, Write, 5, "c0-1", nil)
	r.Effect("c0-1", 5, ViaDirect)
	w.Done(Rejected, 5, "c0-1", "")
	r.Effect("ghost", 1, ViaOutbox)
	h := r.History(Run{})
	require.Len(t, h.Effects, 2)
	require.Equal(t, 1, h.Effects[0].ID)
	require.Equal(t, w.ID(), *h.Effects[0].WriteID, "linked to the write by its value")
	require.Nil(t, h.Effects[1].WriteID)
	require.LessOrEqual(t, h.Ops[0].Call, h.Effects[0].At, "one clock")
	require.NoError(t, h.Validate())

	// No effects recorded: no effects field.
	require.Nil(t, NewRecorder().History(Run{}).Effects)
}
