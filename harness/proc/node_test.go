package proc

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNodeCrashRestart(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	require.NoError(t, os.WriteFile(data, []byte("x"), 0o644))
	ctx := context.Background()
	n, err := StartNode(ctx, Config{Name: "sleeper", Path: "sleep", Args: []string{"300"}})
	require.NoError(t, err)
	defer n.Close()
	first := n.PID()
	require.Positive(t, first)
	require.NoError(t, n.Pause())
	waitState(t, first, "T")
	require.NoError(t, n.Resume())
	require.Error(t, n.Restart(ctx, ""), "a running node cannot restart")
	require.NoError(t, n.Crash())
	require.Zero(t, n.PID())
	require.Error(t, n.Pause(), "a crashed node cannot pause")
	require.Error(t, n.Crash())
	require.NoError(t, n.Restart(ctx, dir))
	require.NoFileExists(t, data, "restart with wipe keeps no data")
	require.NotEqual(t, first, n.PID())
	require.NoError(t, n.Close())
	require.NoError(t, n.Close())
	require.Error(t, n.Restart(ctx, ""), "a closed node stays closed")
	require.Empty(t, Descendants(os.Getpid()))
}
