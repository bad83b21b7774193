package renewal

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func closedWithin(t *testing.T, ch <-chan struct{}, d time.Duration) bool {
	t.Helper()
	if d == 0 {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	select {
	case <-ch:
		return true
	case <-time.After(d):
		return false
	}
}

func TestKeeper(t *testing.T) {
	const ttl = 60 * time.Millisecond
	for _, tc := range []struct {
		name   string
		res    Result
		lost   bool   // within a few TTLs
		reason string // its LossReason, once lost
	}{
		{"renewed", Renewed, false, "renewals stopped (released or closed)"},
		{"refused", Refused, true, "a renewal was refused"},
		{"unknown until the validity ends", Unknown, true, "no renewal confirmed for a TTL (60ms)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int64
			k := Start(ttl, time.Now().Add(ttl), func(context.Context) (Result, time.Time) {
				calls.Add(1)
				return tc.res, time.Now().Add(ttl)
			})
			if tc.lost {
				// A generous ceiling: it returns as soon as Lost closes.
				require.True(t, closedWithin(t, k.Lost(), 10*time.Second))
			} else {
				// A kept lease stays kept through five renewals (counted, not timed).
				require.Eventually(t, func() bool { return calls.Load() >= 5 }, 10*time.Second, time.Millisecond)
				require.False(t, closedWithin(t, k.Lost(), 0), "lost while renewed")
				require.Empty(t, k.LossReason(), "no reason while it is held")
			}
			require.Positive(t, calls.Load())
			k.Stop()
			k.Stop()
			require.True(t, closedWithin(t, k.Lost(), 0), "Stop closes Lost")
			require.Equal(t, tc.reason, k.LossReason())
		})
	}
}

func TestSet(t *testing.T) {
	var s Set
	renew := func(context.Context) (Result, time.Time) { return Renewed, time.Now().Add(time.Hour) }
	a, b := s.Start(time.Hour, time.Now().Add(time.Hour), renew), s.Start(time.Hour, time.Now().Add(time.Hour), renew)
	s.Stop(a)
	require.True(t, closedWithin(t, a.Lost(), 0))
	require.False(t, closedWithin(t, b.Lost(), 0))
	require.True(t, s.Close())
	require.False(t, s.Close())
	require.True(t, closedWithin(t, b.Lost(), 0), "Close stops every live lease")
	c := s.Start(time.Hour, time.Now().Add(time.Hour), renew)
	require.True(t, closedWithin(t, c.Lost(), 0), "a closed set hands out stopped keepers")
	s.Stop(c)
}
