package main

import (
	"context"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/harness/proc/proctest"

	"github.com/fencecheck/fencecheck/backend/kubelease"
	"github.com/fencecheck/fencecheck/harness/redact"
)

// The password and the token fed to every command below; neither may appear in any
// output or in any file a command writes.
const (
	password = "pw-Secret-9f3q"
	token    = "tok-Secret-7c1z"
)

// closedAddr is a loopback address nobody listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	addr := proctest.DeadAddr(t)
	return addr
}

// requireNoSecret fails when a secret is in the outputs or in any file under dirs.
func requireNoSecret(t *testing.T, secrets []string, stdout, stderr string, dirs ...string) {
	t.Helper()
	for _, s := range secrets {
		require.NotContains(t, stdout, s, "stdout")
		require.NotContains(t, stderr, s, "stderr")
	}
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Type()&fs.ModeSymlink != 0 {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, s := range secrets {
				require.NotContains(t, string(b), s, "file %s", path)
			}
			return nil
		})
		require.NoError(t, err)
	}
}

// A password in every form of DSN and a kubeconfig's token, through every command and
// its bad-input paths: masked in stdout, stderr, run.log, history.json, verdict.json,
// the reports, matrix, scorecard and soak pages and the store's index.
func TestNoSecretInAnyOutput(t *testing.T) {
	closed := closedAddr(t)
	host, port, _ := net.SplitHostPort(closed)
	pgURL := "postgres://app:" + password + "@" + closed + "/x?sslmode=disable"
	pgKV := "host=" + host + " port=" + port + " user=app password=" + password + " dbname=x"
	myDSN := "app:" + password + "@tcp(" + closed + ")/x"
	natsURL := "nats://app:" + password + "@" + closed
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: https://`+closed+`
    insecure-skip-tls-verify: true
contexts:
- name: c
  context: {cluster: c, user: u}
current-context: c
users:
- name: u
  user:
    token: `+token+`
`), 0o600))
	secrets := []string{password, token}

	// Every command; the ones that run backends with each secret option, and each
	// command's bad-input paths with the secret on the command line.
	cases := []struct {
		name string
		args []string
		// env, if set, is FENCECHECK_POSTGRES_DSN for the case.
		env string
	}{
		{"run outbox unreachable", []string{"run", "naive-postgres-outbox-pause", "--postgres-dsn", pgURL}, ""},
		{"run key=value dsn", []string{"run", "--resource", "postgres", "--postgres-dsn", pgKV}, ""},
		{"run dsn from the environment", []string{"run", "--resource", "postgres-toctou"}, pgURL},
		{"run bad flag after the dsn", []string{"run", "naive-postgres-outbox-pause", "--postgres-dsn", pgURL, "--ttl", "banana"}, ""},
		{"run dsn as the scenario", []string{"run", pgURL}, ""},
		{"run dsn as a second name", []string{"run", "naive-fenced-pause", pgURL}, ""},
		{"run json", []string{"run", "--json", "--resource", "postgres-outbox", "--postgres-dsn", pgURL}, ""},
		{"run safe with an unused dsn", []string{"run", "naive-fenced-pause", "--postgres-dsn", pgURL, "-v"}, ""},
		{"run postgres lock", []string{"run", "--backend", "postgres-advisory", "--postgres-lock-dsn", pgURL, "--resource", "unfenced"}, ""},
		{"run mariadb lock", []string{"run", "--backend", "mariadb-lock", "--mariadb-lock-dsn", myDSN, "--resource", "unfenced"}, ""},
		{"run nats url", []string{"run", "--backend", "nats", "--nats-url", natsURL}, ""},
		{"run kubeconfig", []string{"run", "--backend", "kube-lease", "--kubeconfig", kc, "--fault", "pause"}, ""},
		{"run kubeconfig node fault", []string{"run", "--backend", "kube-lease", "--kubeconfig", kc, "--fault", "node-pause"}, ""},
		{"run help", []string{"run", "-h", "--postgres-dsn", pgURL}, ""},
		{"check dsn as a file", []string{"check", pgURL}, ""},
		{"check unknown flag", []string{"check", "--postgres-dsn", pgURL, "testdata/stale-accepted.json"}, ""},
		{"check with the environment", []string{"check", "--json", "testdata/stale-accepted.json"}, pgURL},
		{"list with the environment", []string{"list"}, pgURL},
		{"doctor", []string{"doctor", "--json", "--postgres-dsn", pgURL, "--kubeconfig", kc}, ""},
		{"matrix", []string{"matrix", "--backend", "naive", "--resource", "postgres", "--fault", "pause", "--postgres-dsn", pgURL, "--json"}, ""},
		{"matrix bad scenario", []string{"matrix", "--scenario", pgURL}, ""},
		{"evaluate", []string{"evaluate", "--backend", "postgres-advisory", "--postgres-lock-dsn", pgURL, "--fault", "pause"}, ""},
		{"evaluate kubeconfig", []string{"evaluate", "--backend", "kube-lease", "--kubeconfig", kc, "--fault", "pause", "--json"}, ""},
		{"soak", []string{"soak", "--scenario", "naive-postgres-outbox-pause", "--runs", "1", "--postgres-dsn", pgURL}, ""},
		{"soak unused option", []string{"soak", "--scenario", "naive-fenced-pause", "--runs", "1", "--nats-url", natsURL}, ""},
		{"report dsn as a path", []string{"report", pgURL}, ""},
		{"serve dsn as a folder", []string{"serve", pgURL}, ""},
		{"completion", []string{"completion", "bash"}, pgURL},
		{"unknown command", []string{pgURL}, ""},
	}
	out := t.TempDir()
	masked := false
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("FENCECHECK_POSTGRES_DSN", tc.env)
			args := tc.args
			if takesOut(args[0]) && !contains(args, "-h") {
				args = append(args, "--out", out)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var o, e strings.Builder
			code := Main(ctx, args, &o, &e)
			require.NotEqual(t, exitInternal, code, "stdout:\n%s\nstderr:\n%s", o.String(), e.String())
			first, _, _ := strings.Cut(e.String(), "\n")
			t.Logf("exit %d: %s", code, first)
			requireNoSecret(t, secrets, o.String(), e.String())
			masked = masked || strings.Contains(o.String()+e.String(), "app:"+redact.Mask+"@")
		})
	}
	require.True(t, masked, "some output names a DSN, masked")
	// report rebuilds every page of the store the commands above wrote into.
	code, stdout, stderr := run(t, "report", out)
	require.Equal(t, exitSafe, code, stderr)
	requireNoSecret(t, secrets, stdout, stderr, out)
	for _, f := range []string{"index.html", "matrix/latest/matrix.json", "soak/latest/soak.json"} {
		require.FileExists(t, filepath.Join(out, f))
	}
	logs, err := filepath.Glob(filepath.Join(out, "*", "2*", "run.log"))
	require.NoError(t, err)
	require.NotEmpty(t, logs)
}

// A real run against an existing Kubernetes cluster whose kubeconfig carries a bearer
// token: the token is in no output and no file.
func TestNoTokenFromKubeconfig(t *testing.T) {
	t.Parallel()
	needBackend(t, kubelease.Name)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	own, err := kubelease.Start(ctx, kubelease.Config{TTL: time.Second, Dir: t.TempDir()})
	require.NoError(t, err)
	defer func() { require.NoError(t, own.Close()) }()
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, own.Servers[0].WriteKubeconfig(kc))
	tokens := redact.FileSecrets(kc)
	require.NotEmpty(t, tokens, "the kubeconfig carries a token")
	out := t.TempDir()
	code, stdout, stderr := run(t, "run", "--out", out, "--backend", "kube-lease", "--kubeconfig", kc, "--fault", "pause", "-v")
	require.Equal(t, exitSafe, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	requireNoSecret(t, tokens, stdout, stderr, out)
}

func takesOut(cmd string) bool {
	switch cmd {
	case "run", "matrix", "evaluate", "soak":
		return true
	}
	return false
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
