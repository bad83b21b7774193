package redact

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"postgres://app:secret@127.0.0.1:5432/db", "postgres://app:***@127.0.0.1:5432/db"},
		{`bad DSN "postgres://app:s3cr@t@host/db?sslmode=disable": x`, `bad DSN "postgres://app:***@host/db?sslmode=disable": x`},
		{"nats://u:p4ss@127.0.0.1:4222", "nats://u:***@127.0.0.1:4222"},
		{"host=h user=app password=secret dbname=d", "host=h user=app password=*** dbname=d"},
		{"host=h password='se cret' dbname=d", "host=h password=*** dbname=d"},
		{"postgres://h/db?password=secret&sslmode=disable", "postgres://h/db?password=***&sslmode=disable"},
		{"app:secret@tcp(127.0.0.1:3306)/db", "app:***@tcp(127.0.0.1:3306)/db"},
		{"dsn=app:se@cret@tcp(127.0.0.1:3306)/db", "dsn=app:***@tcp(127.0.0.1:3306)/db"},
		{"Authorization: Bearer abc.def-ghi", "Authorization: Bearer ***"},
		// What must stay: addresses, fencing tokens in logs, words.
		{"token=5 client=2 addr=127.0.0.1:2379", "token=5 client=2 addr=127.0.0.1:2379"},
		{"http://127.0.0.1:8077/ and etcd at 127.0.0.1:2379", "http://127.0.0.1:8077/ and etcd at 127.0.0.1:2379"},
		{"postgres://app@127.0.0.1/db", "postgres://app@127.0.0.1/db"},
		{"e.g. postgres://user:password@127.0.0.1:5432/db or user:password@tcp(h:3306)/d", "e.g. postgres://user:password@127.0.0.1:5432/db or user:password@tcp(h:3306)/d"},
	} {
		require.Equal(t, tc.want, Text(tc.in), tc.in)
	}
}

func TestSecrets(t *testing.T) {
	require.ElementsMatch(t, []string{"p%40ss", "p@ss"}, Secrets("postgres://app:p%40ss@h/db"))
	require.Equal(t, []string{"secret"}, Secrets("host=h password=secret"))
	require.Equal(t, []string{"se@cret"}, Secrets("app:se@cret@tcp(h:3306)/db"))
	require.Empty(t, Secrets("127.0.0.1:6379"))
	require.Empty(t, FileSecrets("/no/such/kubeconfig"))

	kc := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kc, []byte(`apiVersion: v1
clusters:
- cluster: {server: "https://127.0.0.1:6443"}
  name: c
users:
- name: u
  user:
    token: "tok-abc123"
    password: hunter22
`), 0o600))
	require.ElementsMatch(t, []string{"tok-abc123", "hunter22"}, FileSecrets(kc))
	require.Empty(t, Secrets(kc), "a path is not read unless asked")
}

func TestRedactor(t *testing.T) {
	r := New("postgres://app:longsecret@h/db")
	r.AddSecret("tok-xyz")
	require.Equal(t, "open ***: no such file; token ***", r.String("open longsecret: no such file; token tok-xyz"))
	require.Equal(t, "postgres://app:***@h/db", r.String("postgres://app:longsecret@h/db"))

	err := r.Error(fmt.Errorf("connect longsecret: %w", fs.ErrNotExist))
	require.Equal(t, "connect ***: "+fs.ErrNotExist.Error(), err.Error())
	require.ErrorIs(t, err, fs.ErrNotExist)
	require.NoError(t, r.Error(nil))

	var b bytes.Buffer
	w := r.Writer(&b)
	n, werr := fmt.Fprintf(w, "dsn postgres://app:longsecret@h/db\n")
	require.NoError(t, werr)
	require.Equal(t, len("dsn postgres://app:longsecret@h/db\n"), n)
	require.Equal(t, "dsn postgres://app:***@h/db\n", b.String())

	var zero *Redactor
	require.Equal(t, "password=***", zero.String("password=x1"))
	require.True(t, errors.Is(New().Error(fs.ErrClosed), fs.ErrClosed))
}
