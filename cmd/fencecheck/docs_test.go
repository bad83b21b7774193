package main

import (
	"bytes"
	"os"
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

// README.md's "Which lock?" table and docs/compare/compare.html are what the saved
// comparison (docs/compare/compare.json) says; regenerate them with
// `go generate ./cmd/fencecheck` after saving a new comparison there.
func TestWhichLockIsCurrent(t *testing.T) {
	page, readme, err := whichLockDocs("../..")
	require.NoError(t, err)
	have, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	require.True(t, bytes.Equal(have, readme), "README.md's Which lock? table differs from docs/compare/compare.json: run go generate ./cmd/fencecheck")
	havePage, err := os.ReadFile("../../docs/compare/compare.html")
	require.NoError(t, err)
	require.True(t, bytes.Equal(havePage, page), "docs/compare/compare.html differs from docs/compare/compare.json: run go generate ./cmd/fencecheck")
	require.Contains(t, string(readme), "| service | backend | fencing token |")
}
