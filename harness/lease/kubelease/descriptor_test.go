package kubelease_test

import (
	"errors"
	"os"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/harness/harnesstest"
	"github.com/fencecheck/fencecheck/harness/lease/kubelease"
	"github.com/fencecheck/fencecheck/harness/proc"
)

// The contract suite on both descriptors, started as a run starts them.
func TestDescriptors(t *testing.T) {
	if _, err := kubelease.FindAPIServer(""); errors.Is(err, proc.ErrNotFound) {
		t.Skip(err)
	}
	for _, d := range kubelease.Descriptors() {
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			harnesstest.Descriptor(t, d)
		})
	}
}

// The build module pins the kube-apiserver version the backend says it runs.
func TestBuildModulePinsAPIServerVersion(t *testing.T) {
	mod, err := os.ReadFile("apiserver/go.mod")
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^\s*(?:require\s+)?k8s\.io/kubernetes (v\S+)`).FindSubmatch(mod)
	require.NotNil(t, m, "apiserver/go.mod does not require k8s.io/kubernetes")
	require.Equal(t, kubelease.APIServerVersion, string(m[1]))
}

func TestFindAPIServer(t *testing.T) {
	t.Setenv("FENCECHECK_CACHE", t.TempDir())
	t.Setenv(kubelease.EnvAPIServer, "")
	t.Setenv("PATH", t.TempDir())
	_, err := kubelease.FindAPIServer("")
	require.ErrorIs(t, err, proc.ErrNotFound)
	require.ErrorContains(t, err, kubelease.BuildScript)
	_, err = kubelease.FindAPIServer("/nonexistent/kube-apiserver")
	require.NotErrorIs(t, err, proc.ErrNotFound, "an explicit path that is wrong is the user's mistake, not a skip")
	require.ErrorContains(t, err, "/nonexistent/kube-apiserver")
	t.Setenv(kubelease.EnvAPIServer, "/bin/sh")
	p, err := kubelease.FindAPIServer("")
	require.NoError(t, err)
	require.Equal(t, "/bin/sh", p)
}
