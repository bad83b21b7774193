package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	execlock "github.com/fencecheck/fencecheck/backend/execlock"
	"github.com/fencecheck/fencecheck/harness/proc/proctest"
)

func execFile(t *testing.T, rel string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "backend", "execlock", rel))
	require.NoError(t, err)
	return p
}

// TestRunExec: the exec backend's exit codes from the command line: the verdicts for a
// working client, 2 for a client that breaks the protocol, cannot run or dies (the run
// could not be made as asked); a broken client's message is one line, and the history so
// far is kept. The broken clients break at their second request and the run's duration
// (a minute) is only a ceiling: the break ends the run, however slow the machine.
func TestRunExec(t *testing.T) {
	t.Parallel()
	template := "python3 " + execFile(t, "examples/naive_http.py")
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout []string
		stderr string
	}{
		{"unfenced", []string{"--client-cmd", template, "--resource", "unfenced", "--fault", "pause"}, exitViolated,
			[]string{"backend=exec", "stopped with SIGSTOP", "continued with SIGCONT", "result: UNSAFE"}, ""},
		{"fenced", []string{"--backend", "exec", "--client-cmd", template, "--lock-service", "naive-persisted", "--resource", "fenced", "--fault", "pause"}, exitSafe,
			[]string{"the fence rejected it", "result: safe"}, ""},
		{"not JSON", []string{"--client-cmd", "BREAK_AFTER=1 sh " + execFile(t, "testdata/fake.sh"), "--fault", "pause", "--duration", "1m"}, exitUsage,
			nil, `it sent "oops, not JSON": not a JSON object`},
		{"command not found", []string{"--client-cmd", "fencecheck-no-such-client"}, exitUsage,
			nil, "its command cannot run (sh: exit status 127)"},
		{"crash", []string{"--client-cmd", "BREAK_AFTER=1 BREAK_WITH=exit sh " + execFile(t, "testdata/fake.sh"), "--duration", "1m"}, exitUsage,
			nil, "its process exited during the run (exit status 5)"},
		{"no command", []string{"--backend", "exec"}, exitUsage, nil, "backend exec needs --client-cmd"},
		{"wrong backend", []string{"--backend", "raft", "--client-cmd", "x"}, exitUsage, nil, `--client-cmd is for the exec backend (got "raft")`},
		{"unreachable service", []string{"--client-cmd", "x", "--lock-endpoints", "127.0.0.1:1"}, exitUsage, nil, "lock endpoint 127.0.0.1:1 does not answer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i, a := range tt.args {
				if a == "--client-cmd" {
					proctest.Skip(t, execlock.ExampleNeeds(tt.args[i+1])...)
				}
			}
			out := t.TempDir()
			code, stdout, stderr := run(t, append([]string{"run", "--out", out}, tt.args...)...)
			require.Equal(t, tt.code, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			for _, w := range tt.stdout {
				require.Contains(t, stdout, w)
			}
			if tt.stderr != "" {
				require.Contains(t, stderr, tt.stderr)
				require.Equal(t, 1, strings.Count(strings.TrimSpace(stderr), "\n")+1, "one line: %q", stderr)
			}
			if strings.Contains(tt.stderr, "it sent") || tt.name == "crash" {
				require.Contains(t, stderr, "the history so far")
				files, err := filepath.Glob(filepath.Join(out, "*", "2*", "history.json"))
				require.NoError(t, err)
				require.Len(t, files, 1)
			}
		})
	}
}
