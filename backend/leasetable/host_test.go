package leasetable

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/nemesis/proxy"
	"github.com/fencecheck/fencecheck/harnesstest"
)

// A client host's client, built from the HostConfig alone, locks the run's row in the
// same table as the in-process clients, through its own proxied address: it is granted
// as client-<id> with the row's fence, excludes the others while it renews, and its
// release lets the next client in with the next fence.
func TestHostConfigBuildsTheClient(t *testing.T) {
	for _, st := range stores {
		for _, name := range []string{Name, NameClientTime} {
			t.Run(st.name+"/"+name, func(t *testing.T) {
				t.Parallel() // each starts its own store
				b := startWith(t, name, testTTL, st.opts)
				hc, err := b.(harness.Hostable).HostConfig()
				require.NoError(t, err)
				require.Equal(t, Name, hc.Kind)
				require.True(t, hc.Expiring)
				require.Empty(t, hc.NoToken)
				var c hostConfig
				require.NoError(t, json.Unmarshal(hc.Config, &c))
				require.Equal(t, st.name, c.Store)
				require.Equal(t, core(t, b).LockName(), c.Lock)

				m, err := HostLockers(hc.Config)
				require.NoError(t, err)
				t.Cleanup(func() { require.NoError(t, m.Close()) })
				link, err := proxy.New(b.Endpoints()[0])
				require.NoError(t, err)
				t.Cleanup(func() { _ = link.Close() })
				hosted, err := m.NewLocker(context.Background(), 2, []string{link.Addr()})
				require.NoError(t, err)
				t.Cleanup(func() { require.NoError(t, hosted.Close()) })

				other, _ := locker(t, b, 0)
				le := harnesstest.Acquire(t, hosted)
				by, err := core(t, b).Holder(context.Background())
				require.NoError(t, err)
				require.Equal(t, "client-2", by)
				fence, err := core(t, b).st.Admin(context.Background(), "SELECT fence FROM "+Table+" WHERE name = $1", c.Lock)
				require.NoError(t, err)
				require.Equal(t, []string{jsonInt(le.Token())}, fence)
				harnesstest.HeldAgainst(t, le, other, 3*testTTL)
				harnesstest.ReleaseOnce(t, le)
				next := harnesstest.Acquire(t, other)
				require.Equal(t, le.Token()+1, next.Token())
				require.NoError(t, next.Release(context.Background()))
			})
		}
	}
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }

// A host config it cannot act on is refused, and an error never prints the DSN.
func TestHostLockersRefuses(t *testing.T) {
	for _, bad := range []string{
		`[`,
		`{"name":"lease-table","clock":"database","ttl_us":0,"lock":"l","store":"sqlite"}`,
		`{"name":"lease-table","clock":"sundial","ttl_us":1000,"lock":"l","store":"sqlite"}`,
		`{"name":"lease-table","clock":"database","ttl_us":1000,"lock":"l","store":"mysql"}`,
		`{"name":"lease-table","clock":"database","ttl_us":1000,"lock":"l","store":"postgres","dsn":"postgres://u:s3cret@/tmp/sock"}`,
	} {
		_, err := HostLockers([]byte(bad))
		require.Error(t, err, bad)
		require.NotContains(t, err.Error(), "s3cret")
		require.False(t, strings.Contains(err.Error(), "dsn\":"), err.Error())
	}
}
