package proc

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// sleeper is a Server made of a real sleep process.
type sleeper struct{ *Node }

func (s sleeper) Restart(ctx context.Context, _ bool) error { return s.Node.Restart(ctx, "") }

func TestGroup(t *testing.T) {
	ctx := context.Background()
	var g Group[sleeper]
	g.Name = "sleepers"
	require.Zero(t, g.Nodes())
	require.ErrorContains(t, g.PauseNode(ctx, 0), "sleepers: the service is external")
	for range 2 {
		n, err := StartNode(ctx, Config{Name: "sleeper", Path: "sleep", Args: []string{"300"}})
		require.NoError(t, err)
		g.Servers = append(g.Servers, sleeper{n})
	}
	defer g.Close()
	require.Equal(t, 2, g.Nodes())
	require.ErrorContains(t, g.Crash(ctx, 2), "no node 2")
	pid := g.NodePID(1)
	require.NoError(t, g.PauseNode(ctx, 1))
	waitState(t, pid, "T")
	require.NoError(t, g.ResumeNode(ctx, 1))
	require.NoError(t, g.Crash(ctx, 1))
	require.Zero(t, g.NodePID(1))
	require.NoError(t, g.Restart(ctx, 1, true))
	require.NotEqual(t, pid, g.NodePID(1))
	require.NoError(t, g.Close())
	require.NoError(t, g.Close())
	require.Empty(t, Descendants(os.Getpid()))
}
