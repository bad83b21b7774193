package kubelease

import (
	"context"
	"fmt"
	"strings"

	"github.com/fencecheck/fencecheck/harness"
)

var (
	_ harness.ServerVersioner       = (*Backend)(nil)
	_ harness.ClientLibraryReporter = (*Backend)(nil)
	_ harness.ServerVersioner       = external{}
	_ harness.ClientLibraryReporter = external{}
)

// ServerVersion implements harness.ServerVersioner: the kube-apiserver's version from
// its own API (GET /version, through kube-lease-client and the kubeconfig, so an
// existing cluster's too): "kube-apiserver v1.37.2".
func (b *Backend) ServerVersion(ctx context.Context) (string, error) {
	out, err := b.cmd.run(ctx, "version")
	if err != nil {
		return "", err
	}
	v := strings.TrimSpace(out)
	if unstamped(v) {
		// A go build without the release's -ldflags (build.sh's) says no version.
		return "", fmt.Errorf("kube-lease: the apiserver's build carries no version (GET /version: %s)", v)
	}
	return v, nil
}

// unstamped reports whether a gitVersion is a build's placeholder, not a version.
func unstamped(v string) bool {
	return strings.Contains(v, "v0.0.0-master") || strings.Contains(v, "$Format")
}

// ClientLibrary implements harness.ClientLibraryReporter: the client-go module
// kube-lease-client was built with, as its grants say ("library").
func (b *Backend) ClientLibrary() string {
	if b.clients == nil {
		return ""
	}
	return b.clients.ClientLibrary()
}

// ServerVersion implements harness.ServerVersioner.
func (e external) ServerVersion(ctx context.Context) (string, error) {
	return e.b.ServerVersion(ctx)
}

// ClientLibrary implements harness.ClientLibraryReporter.
func (e external) ClientLibrary() string { return e.b.ClientLibrary() }
