package trial_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/harness/builtin"
	"github.com/fencecheck/fencecheck/harness/lease/redis"
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
