package kubelease_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/backend/kubelease"
	"github.com/fencecheck/fencecheck/harness/proc"
	"github.com/fencecheck/fencecheck/harnesstest"
)

// The contract suite on both descriptors, started as a run starts them.
func TestDescriptors(t *testing.T) {
	if err := kubelease.FindBuild(); errors.Is(err, proc.ErrNotFound) {
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

// Both programs are found the same way: an explicit path, the variable, the cached
// build, PATH; none is a skip naming the build script, a wrong explicit path is not.
func TestFind(t *testing.T) {
	for _, tc := range []struct {
		name   string
		env    string
		find   func(string) (string, error)
		cached func() string
	}{
		{"kube-apiserver", kubelease.EnvAPIServer, kubelease.FindAPIServer, kubelease.CachePath},
		{kubelease.ClientName, kubelease.EnvClient, kubelease.FindClient, kubelease.ClientCachePath},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(proc.HideEnv, "")
			t.Setenv("FENCECHECK_CACHE", t.TempDir())
			t.Setenv(tc.env, "")
			t.Setenv("PATH", t.TempDir())
			_, err := tc.find("")
			require.ErrorIs(t, err, proc.ErrNotFound)
			require.ErrorContains(t, err, kubelease.BuildScript)
			require.ErrorContains(t, err, kubelease.CacheDir())
			_, err = tc.find("/nonexistent/" + tc.name)
			require.NotErrorIs(t, err, proc.ErrNotFound, "an explicit path that is wrong is the user's mistake, not a skip")
			require.ErrorContains(t, err, "/nonexistent/"+tc.name)

			require.NoError(t, os.MkdirAll(filepath.Dir(tc.cached()), 0o755))
			require.NoError(t, os.WriteFile(tc.cached(), []byte("#!/bin/sh\n"), 0o755))
			p, err := tc.find("")
			require.NoError(t, err)
			require.Equal(t, tc.cached(), p)
			t.Setenv(tc.env, "/bin/sh")
			p, err = tc.find("")
			require.NoError(t, err)
			require.Equal(t, "/bin/sh", p)
		})
	}
}

// fencecheck and the client it runs speak the same version of the client's interface.
func TestClientProtocol(t *testing.T) {
	src, err := os.ReadFile("apiserver/cmd/kube-lease-client/main.go")
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^const protocol = "([^"]+)"`).FindSubmatch(src)
	require.NotNil(t, m, "kube-lease-client declares no protocol")
	require.Equal(t, kubelease.ClientProtocol, string(m[1]))
}

// The cached kube-lease-client was built from the sources here (build.sh's stamp):
// otherwise the tests would test another client.
func TestClientBuildIsCurrent(t *testing.T) {
	p, err := kubelease.FindClient("")
	switch {
	case errors.Is(err, proc.ErrNotFound):
		t.Skip(err)
	case err != nil || p != kubelease.ClientCachePath():
		t.Skipf("the client is not the cached build (%s %v)", p, err)
	}
	stamp, err := os.ReadFile(kubelease.ClientCachePath() + ".stamp")
	require.NoError(t, err, "a cached build without build.sh's stamp")
	srcs, err := filepath.Glob("apiserver/cmd/kube-lease-client/*.go")
	require.NoError(t, err)
	h := sha256.New()
	for _, f := range append([]string{"apiserver/go.mod", "apiserver/go.sum"}, srcs...) {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		h.Write(b)
	}
	want := hex.EncodeToString(h.Sum(nil))[:16] + " " + runtime.Version()
	require.Equal(t, want, strings.TrimSpace(string(stamp)), "%s was built from other sources than these: run %s", kubelease.ClientCachePath(), kubelease.BuildScript)
}
