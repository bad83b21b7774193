package raftlock

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/harness"
)

// hostLocker builds client id's locker as a client host would, from s's HostConfig.
func hostLocker(t *testing.T, hc harness.HostConfig, s *service, id int) *locker {
	t.Helper()
	m, err := HostLockers(hc.Config)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, m.Close()) })
	l, err := m.NewLocker(context.Background(), id, s.Endpoints())
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, l.Close()) })
	return l.(*locker)
}

// A client host builds the service's own client from the HostConfig: same TTL and
// request timeout, one address per node, and an owner name that also names its process,
// so two hosts of one harness client (a crashed client's next host) are two owners.
func TestHostConfigBuildsTheClient(t *testing.T) {
	cfg := testConfig(t)
	s := startService(t, cfg)
	hc, err := s.HostConfig()
	require.NoError(t, err)
	require.Equal(t, Name, hc.Kind)
	require.True(t, hc.Expiring, "raft leases know their end")
	require.Empty(t, hc.NoToken)
	var c hostConfig
	require.NoError(t, json.Unmarshal(hc.Config, &c))
	require.Equal(t, hostConfig{TTLns: int64(cfg.TTL), RequestNs: int64(DefaultRequestTimeout), Nodes: DefaultNodes}, c)

	a := hostLocker(t, hc, s, 1)
	b := hostLocker(t, hc, s, 1)
	// In a host the Locker counter starts at 1 in every process: the process part alone
	// must tell the two apart.
	procOf := func(l *locker) string {
		require.True(t, strings.HasPrefix(l.Owner(), "client-1.p"), l.Owner())
		return l.Owner()[:strings.LastIndexByte(l.Owner(), '.')]
	}
	require.NotEqual(t, procOf(a), procOf(b), "two hosts of client 1 are two owners")
	require.Equal(t, cfg.TTL, a.ttl)

	ls := acquire(t, a, patience)
	var granted *event
	for _, ev := range s.Grants() {
		if int64(ev.Token) == ls.Token() {
			granted = &ev
		}
	}
	require.NotNil(t, granted, "the service recorded the grant of token %d", ls.Token())
	require.Equal(t, a.Owner(), granted.Owner)
	release(t, ls)

	m, err := HostLockers(hc.Config)
	require.NoError(t, err)
	_, err = m.NewLocker(context.Background(), 2, s.Endpoints()[:1])
	require.ErrorContains(t, err, "got 1 addresses for 3 nodes")
	for _, bad := range []string{`{}`, `{"ttl_ns":1000000,"request_timeout_ns":1000000000,"nodes":3}`, `[`} {
		_, err := HostLockers([]byte(bad))
		require.Error(t, err, bad)
	}
}
