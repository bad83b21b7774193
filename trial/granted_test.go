package trial_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/backend/redis"
	"github.com/fencecheck/fencecheck/builtin"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/proc/proctest"
	"github.com/fencecheck/fencecheck/spec"
	"github.com/fencecheck/fencecheck/trial"
)

// A run records what its server said of itself (INFO's version) and the TTL its leases
// were granted. The granted TTL comes from the grants, so the run is bounded by one
// (MinGrants), not by a time in which a loaded machine may make none.
func TestRunRecordsServerVersionAndGrantedTTL(t *testing.T) {
	proctest.Skip(t, redis.ServerNeed)
	o, err := trial.Run(context.Background(), builtin.Registry(), spec.Spec{Backend: "redis", Duration: time.Millisecond, MinGrants: 1, TTL: time.Second}, trial.Options{})
	require.NoError(t, err)
	r := o.History.Run
	require.Regexp(t, `^redis \d+\.\d+\.\d+$`, r.ServerVersion)
	require.EqualValues(t, 1000, r.GrantedTTLms)
}

// An in-process built-in client's library is the Go module it is (with the version the
// binary was built with: a test binary's build information has none, so the path); a
// client fencecheck wrote itself (naive) names none.
func TestRunRecordsClientLibrary(t *testing.T) {
	for _, tc := range []struct{ backend, module string }{
		{"etcd", "go.etcd.io/etcd/client/v3"},
		{"naive", ""},
	} {
		t.Run(tc.backend, func(t *testing.T) {
			o, err := trial.Run(context.Background(), builtin.Registry(), spec.Spec{Backend: tc.backend, Duration: 300 * time.Millisecond, TTL: time.Second}, trial.Options{})
			require.NoError(t, err)
			require.Equal(t, harness.ModuleVersion(tc.module), o.History.Run.ClientLibrary)
			if tc.module != "" {
				require.True(t, strings.HasPrefix(o.History.Run.ClientLibrary, tc.module), o.History.Run.ClientLibrary)
			}
		})
	}
}
