package kubelease_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/backend/kubelease"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/nemesis/proxy"
	"github.com/fencecheck/fencecheck/harness/proc"
	"github.com/fencecheck/fencecheck/harnesstest"
)

// kubeconfig writes a kubeconfig for the cluster b started and returns its path.
func kubeconfig(t *testing.T, b *kubelease.Backend) string {
	t.Helper()
	require.FileExists(t, b.Servers[0].CABundle())
	p := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, b.Servers[0].WriteKubeconfig(p))
	return p
}

// leases lists the Leases in b's namespace.
func leases(t *testing.T, b *kubelease.Backend) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	names, err := b.LeaseNames(ctx)
	require.NoError(t, err)
	return names
}

// An existing cluster by kubeconfig: the certificate is checked against the server's
// name although clients dial their proxies, the run's Lease is its own, takeovers work
// through the proxies, and Close deletes the Lease.
func TestExternalCluster(t *testing.T) {
	t.Parallel()
	own := start(t, kubelease.Config{})
	path := kubeconfig(t, own)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := kubelease.Start(ctx, kubelease.Config{TTL: ttl, Kubeconfig: path, RunID: "run-ext"})
	require.NoError(t, err)
	require.Equal(t, own.Endpoints(), b.Endpoints())
	require.Zero(t, b.Nodes(), "no server of its own to fault")
	require.Contains(t, leases(t, own), "fencecheck-run-ext")

	link, err := proxy.New(b.Endpoints()[0])
	require.NoError(t, err)
	t.Cleanup(func() { _ = link.Close() })
	a, c := locker(t, b, link.Addr(), 0), locker(t, b, b.Endpoints()[0], 1)
	le := harnesstest.Acquire(t, a)
	require.EqualValues(t, 1, le.Token())
	require.NotZero(t, link.Stats().Accepted, "the client did not go through its proxy")
	link.Stall()
	le2 := harnesstest.Acquire(t, c)
	require.EqualValues(t, 2, le2.Token())
	harnesstest.WaitClosed(t, le.Lost(), "Lost after the link stalled")
	link.Pass()
	require.NoError(t, le2.Release(context.Background()))

	require.NoError(t, b.Close())
	require.NoError(t, b.Close())
	require.NotContains(t, leases(t, own), "fencecheck-run-ext", "the run's Lease outlived it")
}

func TestExternalBadInput(t *testing.T) {
	t.Parallel()
	if _, err := kubelease.FindClient(""); errors.Is(err, proc.ErrNotFound) {
		t.Skip(err)
	}
	dir := t.TempDir()
	noServer := filepath.Join(dir, "noserver")
	require.NoError(t, os.WriteFile(noServer, []byte("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: \"https://127.0.0.1:1\", insecure-skip-tls-verify: true}\ncontexts:\n- name: x\n  context: {cluster: c}\ncurrent-context: x\n"), 0o600))
	for _, tc := range []struct {
		name, path, want string
	}{
		{"missing file", filepath.Join(dir, "nope"), "kubeconfig " + filepath.Join(dir, "nope")},
		{"nobody there", noServer, "127.0.0.1:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			_, err := kubelease.Start(ctx, kubelease.Config{TTL: ttl, Kubeconfig: tc.path, RunID: "run-bad"})
			require.ErrorContains(t, err, tc.want)
		})
	}
}

var _ harness.Backend = (*kubelease.Backend)(nil)
