package harness

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestModuleVersion(t *testing.T) {
	info := &debug.BuildInfo{
		Main: debug.Module{Path: "github.com/fencecheck/fencecheck", Version: "(devel)"},
		Deps: []*debug.Module{
			{Path: "go.etcd.io/etcd/client/v3", Version: "v3.7.3"},
			{Path: "github.com/gomodule/redigo", Version: "v1.9.3", Replace: &debug.Module{Path: "../redigo", Version: ""}},
			{Path: "github.com/go-zookeeper/zk", Version: "v1.0.4", Replace: &debug.Module{Path: "example.com/zk", Version: "v1.0.5"}},
		},
	}
	for _, tc := range []struct{ path, want string }{
		{"go.etcd.io/etcd/client/v3", "go.etcd.io/etcd/client/v3 v3.7.3"},
		{"github.com/gomodule/redigo", "github.com/gomodule/redigo v1.9.3"}, // a local replacement has no version
		{"github.com/go-zookeeper/zk", "github.com/go-zookeeper/zk v1.0.5"},
		{"github.com/fencecheck/fencecheck", "github.com/fencecheck/fencecheck"}, // (devel)
		{"github.com/not/linked", "github.com/not/linked"},
	} {
		require.Equal(t, tc.want, moduleVersion(info, tc.path), tc.path)
	}
	require.Empty(t, ModuleVersion(""))
	// A test binary carries no dependencies in its build information: the built
	// fencecheck binary's versions are tested in cmd/fencecheck (TestClientLibraryOfABuild).
}
