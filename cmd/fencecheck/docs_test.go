package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// docs/cli.md is what the command tree says; regenerate it with
// `go generate ./cmd/fencecheck` after changing a command or a flag.
func TestCLIDocIsCurrent(t *testing.T) {
	for k, v := range docsEnv {
		t.Setenv(k, v)
	}
	var b bytes.Buffer
	writeCLIDoc(&b)
	have, err := os.ReadFile("../../docs/cli.md")
	require.NoError(t, err)
	if !bytes.Equal(have, b.Bytes()) {
		t.Fatalf("docs/cli.md differs from what the command tree writes: run go generate ./cmd/fencecheck")
	}
	for _, w := range []string{"## fencecheck run", "## fencecheck doctor", "`--postgres-dsn string`", "| 2 |"} {
		require.Contains(t, b.String(), w)
	}
}

// README.md's "Which lock?" table and docs/compare's pages are what the saved
// comparison (docs/compare/compare.json) says; regenerate them with
// `go generate ./cmd/fencecheck` after saving a new comparison there.
func TestWhichLockIsCurrent(t *testing.T) {
	files, err := whichLockDocs("../..")
	require.NoError(t, err)
	require.Len(t, files, 3)
	for path, want := range files {
		have, err := os.ReadFile(filepath.Join("../..", filepath.FromSlash(path)))
		require.NoError(t, err)
		require.True(t, bytes.Equal(have, want), "%s differs from what docs/compare/compare.json says: run go generate ./cmd/fencecheck", path)
	}
	require.Contains(t, string(files["README.md"]), "| service | backend | fencing token |")
	require.Contains(t, string(files["docs/compare/README.md"]), "## What it means, per service")
	schema := loadSchema(t, "../../docs/compare.schema.json")
	require.Empty(t, schema.validate(readJSON(t, "../../docs/compare/compare.json")), "the saved comparison matches the schema")
}
