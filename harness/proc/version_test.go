package proc

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestVersions(t *testing.T) {
	t.Setenv(HideEnv, "") // the lookup's own test: nothing hidden, whatever the pass
	dir := t.TempDir()
	script := filepath.Join(dir, "server")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\necho\necho \"server v=1.2.3 $1\"\necho more\n"), 0o755))
	require.Equal(t, "server v=1.2.3 --version", Version(context.Background(), Need{File: script}, "--version"))
	require.Empty(t, Version(context.Background(), Need{File: filepath.Join(dir, "missing")}, "--version"))

	// Debian's unversioned jar, named next to its versioned link.
	jar := filepath.Join(dir, "zookeeper.jar")
	require.NoError(t, os.WriteFile(jar, nil, 0o644))
	require.Empty(t, FileVersion(Need{File: jar}))
	require.NoError(t, os.Symlink("zookeeper.jar", filepath.Join(dir, "zookeeper-3.8.0.jar")))
	require.NoError(t, os.Symlink("zookeeper.jar", filepath.Join(dir, "zookeeper-jute-3.8.0.jar")))
	require.Equal(t, "3.8.0", FileVersion(Need{File: jar}))
	require.Equal(t, "3.8.0", FileVersion(Need{File: filepath.Join(dir, "zookeeper-3.8.0.jar")}))

	// A test binary records no module versions; a built fencecheck does.
	require.Empty(t, ModuleVersion("example.com/not/linked"))
	require.Equal(t, "x (embedded)", Embedded("x", "example.com/not/linked"))
}
