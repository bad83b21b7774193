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
