package naive

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/harness"
)

// One lease per key: holding key a does not block key b, tokens still increase across
// keys (one counter), and renew/release name the key.
func TestKeyedLeases(t *testing.T) {
	s, err := StartServer(ServerConfig{})
	require.NoError(t, err)
	defer s.Close()
	acq := func(owner, key string) AcquireResponse {
		r, err := s.Acquire(AcquireRequest{Owner: owner, TTLms: 10_000, Key: key})
		require.NoError(t, err)
		return r
	}
	a := acq("c0", "a")
	require.True(t, a.Granted)
	b := acq("c1", "b")
	require.True(t, b.Granted, "another key's lock is free")
	require.Greater(t, b.Token, a.Token)
	require.False(t, acq("c1", "a").Granted, "key a is held")
	require.True(t, acq("c2", "").Granted, "the default lock is its own")
	require.False(t, s.Renew(LeaseRequest{Owner: "c0", Token: a.Token, Key: "b"}, time.Second).OK, "c0 does not hold b")
	require.True(t, s.Renew(LeaseRequest{Owner: "c0", Token: a.Token, Key: "a"}, time.Second).OK)
	require.True(t, s.Release(LeaseRequest{Owner: "c0", Token: a.Token, Key: "a"}).OK)
	require.True(t, acq("c1", "a").Granted)

	// Over HTTP, through the Locker.
	l := NewLocker(s.Addr(), "c9", 10*time.Second)
	defer l.Close()
	var kl harness.KeyedLocker = l
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	le, err := kl.AcquireKey(ctx, "z")
	require.NoError(t, err)
	require.NoError(t, le.Release(ctx))
}
