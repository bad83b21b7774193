package term

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"naive-fenced-pause", "naive-fenced-pause"},
		{"café × 2 — ok µs", "café × 2 — ok µs"},
		{"\x1b]0;pwned\x07", `\u001b]0;pwned\u0007`},
		{"a\r\nresult: safe: fake line", `a\r\nresult: safe: fake line`},
		{"tab\there", `tab\there`},
		{"del\x7f", `del\u007f`},
		{"c1 \u0085 \u009b", `c1 \u0085 \u009b`},
		{"bidi \u202e txt", `bidi \u202e txt`},
		{"sep \u2028", `sep \u2028`},
		{"bad \xff\x9b", `bad \xff\x9b`},
	} {
		require.Equal(t, tc.want, Text(tc.in), "%q", tc.in)
	}
}

func TestFprintf(t *testing.T) {
	var b bytes.Buffer
	_, err := Fprintf(&b, "%s\t%d\t%v\n", "x\ny", 3, errors.New("e\x1b"))
	require.NoError(t, err)
	require.Equal(t, "x\\ny\t3\te\\u001b\n", b.String())
}

// The net keeps newlines and tabs, escapes the rest, and leaves a JSON document valid
// and meaning the same.
func TestWriter(t *testing.T) {
	var b bytes.Buffer
	w := Writer(&b)
	n, err := w.Write([]byte("a\tb\n\x1b[31mred\r\n"))
	require.NoError(t, err)
	require.Equal(t, 14, n)
	require.Equal(t, "a\tb\n\\u001b[31mred\\r\n", b.String())

	b.Reset()
	v := map[string]string{"s": "del\x7f c1\u0085 bidi\u202e \x1b"}
	require.NoError(t, json.NewEncoder(w).Encode(v))
	for _, c := range b.Bytes() {
		require.False(t, c < 0x20 && c != '\n' || c == 0x7f, "byte %#x in %q", c, b.String())
	}
	var got map[string]string
	require.NoError(t, json.Unmarshal(b.Bytes(), &got))
	require.Equal(t, v, got)
}
