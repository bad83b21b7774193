package history

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// withLost is the example history with the optional lost extension.
func withLost(lost string) string {
	return strings.Replace(example, `"faults": [`, `"lost": `+lost+`,
  "faults": [`, 1)
}

func TestLostRoundTrip(t *testing.T) {
	src := withLost(`[{"client": 0, "acquire_id": 1, "token": 42, "at": 5000, "reason": "renewal refused"},
	                  {"client": 0, "acquire_id": 1, "token": 42, "at": 6000}]`)
	for _, decode := range []struct {
		name string
		fn   func(string) (*History, error)
	}{
		{"fast", func(s string) (*History, error) { return Decode(strings.NewReader(s), "lost.json") }},
		{"encoding/json", func(s string) (*History, error) { return decodeSlow([]byte(s)) }},
	} {
		t.Run(decode.name, func(t *testing.T) {
			h, err := decode.fn(src)
			require.NoError(t, err)
			require.Equal(t, []Lost{
				{Client: 0, AcquireID: 1, Token: 42, At: 5000, Reason: "renewal refused"},
				{Client: 0, AcquireID: 1, Token: 42, At: 6000},
			}, h.Lost)
			var buf bytes.Buffer
			require.NoError(t, Encode(&buf, h))
			h2, err := Decode(&buf, "again")
			require.NoError(t, err)
			require.Equal(t, h, h2)
		})
	}
}

// A v1 file without lost records loads as before and is written back without the field.
func TestNoLostStaysV1(t *testing.T) {
	h, err := Decode(strings.NewReader(example), "plain.json")
	require.NoError(t, err)
	require.Nil(t, h.Lost)
	var buf bytes.Buffer
	require.NoError(t, Encode(&buf, h))
	require.NotContains(t, buf.String(), "lost")
}

func TestLostValidation(t *testing.T) {
	for _, tc := range []struct{ name, lost, want string }{
		{"no such op", `[{"client": 0, "acquire_id": 99, "token": 42, "at": 1}]`, `lost[0]: field "acquire_id": names op 99, which does not exist`},
		{"not an acquire", `[{"client": 0, "acquire_id": 1, "token": 42, "at": 1}, {"client": 0, "acquire_id": 2, "token": 42, "at": 1}]`, `lost[1]: field "acquire_id": names op 2, a read, not an acquire`},
		{"other client", `[{"client": 3, "acquire_id": 1, "token": 42, "at": 1}]`, `lost[0]: field "acquire_id": names op 1, an acquire of client 0, not of client 3`},
		{"negative client", `[{"client": -1, "acquire_id": 1, "token": 42, "at": 1}]`, `lost[0]: field "client": negative client -1`},
		{"negative at", `[{"client": 0, "acquire_id": 1, "token": 42, "at": -3}]`, `lost[0]: field "at": negative time -3`},
		{"wrong type", `[{"client": 0, "acquire_id": "one", "token": 42, "at": 1}]`, `field "lost.acquire_id"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(strings.NewReader(withLost(tc.lost)), "bad.json")
			require.Error(t, err)
			require.Contains(t, err.Error(), "bad.json: ")
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestRecorderLost(t *testing.T) {
	r := NewRecorder()
	a := r.Begin(2, Acquire, 0, "", nil)
	a.Done(OK, 7, "", "")
	r.Lost(2, a.ID(), 7, "renewal refused")
	h := r.History(Run{})
	require.Len(t, h.Lost, 1)
	require.Equal(t, Lost{Client: 2, AcquireID: a.ID(), Token: 7, At: h.Lost[0].At, Reason: "renewal refused"}, h.Lost[0])
	require.LessOrEqual(t, *h.Ops[0].Return, h.Lost[0].At, "one clock")
	require.NoError(t, h.Validate())

	// None recorded: no lost field.
	require.Nil(t, NewRecorder().History(Run{}).Lost)
}

// decodeSlow is Decode by encoding/json alone.
func decodeSlow(data []byte) (*History, error) {
	var h History
	if err := json.Unmarshal(data, &h); err != nil {
		return nil, err
	}
	return &h, h.Validate()
}
