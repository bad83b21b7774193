package mdblock

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSetGet(t *testing.T) {
	doc := []byte("# T\n\n<!-- generated: a -->\nold\n<!-- end generated: a -->\n\ntail\n")
	out, err := Set(doc, "a", "new\nlines")
	require.NoError(t, err)
	require.Equal(t, "# T\n\n<!-- generated: a -->\nnew\nlines\n<!-- end generated: a -->\n\ntail\n", string(out))
	got, err := Get(out, "a")
	require.NoError(t, err)
	require.Equal(t, "new\nlines\n", got)

	empty, err := Set(doc, "a", "")
	require.NoError(t, err)
	require.Equal(t, "# T\n\n<!-- generated: a -->\n<!-- end generated: a -->\n\ntail\n", string(empty))
}

func TestRefusals(t *testing.T) {
	for name, doc := range map[string]string{
		"no begin": "text\n",
		"no end":   "<!-- generated: a -->\nx\n",
		"twice":    "<!-- generated: a -->\n<!-- end generated: a -->\n<!-- generated: a -->\n<!-- end generated: a -->\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Set([]byte(doc), "a", "x")
			require.Error(t, err)
		})
	}
}
