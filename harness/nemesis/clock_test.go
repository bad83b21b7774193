package nemesis

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestClockSkew(t *testing.T) {
	c := NewClock()
	require.InDelta(t, 0, c.Skew().Seconds(), 0.05)

	c.Jump(-10 * time.Second)
	require.InDelta(t, -10, c.Skew().Seconds(), 0.05)
	a := c.Now()
	c.Jump(10 * time.Second)
	require.True(t, c.Now().After(a))

	require.NoError(t, c.SetRate(50))
	time.Sleep(20 * time.Millisecond)
	// At 50x, 20ms of real time is at least a second on this clock.
	require.Greater(t, c.Skew(), 900*time.Millisecond)
	c.Reset(true)
	require.InDelta(t, 0, c.Skew().Seconds(), 0.05)

	// Freeze holds the wall reading; the monotonic reading goes on; Reset releases it.
	at := time.Unix(42, 0)
	c.Freeze(at)
	m := c.Monotonic()
	time.Sleep(5 * time.Millisecond) // a lower bound: the monotonic reading surely moved
	require.Equal(t, at, c.Now())
	require.True(t, c.Monotonic().After(m))
	c.Jump(-time.Hour)
	require.True(t, c.Monotonic().After(m), "jumps never move the monotonic reading")
	c.Reset(true)
	require.InDelta(t, 0, c.Skew().Seconds(), 0.05)

	require.Error(t, c.SetRate(0))
	require.Error(t, c.SetRate(-1))
}
