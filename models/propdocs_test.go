package models_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/models/internal/propdocs"
)

// TestPropertyDocs holds docs/checker.md's properties table and the schemas' property
// enums to the list of properties: run go generate ./models when it fails.
func TestPropertyDocs(t *testing.T) {
	for _, f := range propdocs.Files {
		old, err := os.ReadFile(filepath.Join("..", f))
		require.NoError(t, err)
		out, err := propdocs.Render(f, old)
		require.NoError(t, err, f)
		require.Equal(t, string(out), string(old), "%s is not what the list of properties says: run go generate ./models", f)
	}
}
