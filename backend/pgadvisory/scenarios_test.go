package pgadvisory_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/backend/pgadvisory"
	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/harnesstest"
	"github.com/fencecheck/fencecheck/spec"
	"github.com/fencecheck/fencecheck/trial"
)

// newReg is fencecheck's registry with this package's backends: what its scenarios run in.
func newReg(t testing.TB) *registry.Registry {
	return harnesstest.Registry(t, pgadvisory.Descriptors()...)
}

// A run that cannot go as asked is the user's input: spec.ErrSpec, one clear message.
func TestSpecErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    spec.Spec
		want string
	}{
		{"postgres tiny ttl", spec.Spec{Backend: "postgres-advisory", TTL: 60 * time.Millisecond}, "below 100ms"},
		{"pgbouncer tiny ttl", spec.Spec{Backend: "postgres-advisory-pgbouncer", TTL: 60 * time.Millisecond}, "below 100ms"},
		{"pgbouncer on an existing server", spec.Spec{Backend: "postgres-advisory-pgbouncer", Options: map[string]string{"postgres-lock-dsn": "postgres://u@127.0.0.1:1/db"}}, "--postgres-lock-dsn is for the postgres-advisory or"},
		{"node fault on an existing server", spec.Spec{Backend: "postgres-advisory", Options: map[string]string{"postgres-lock-dsn": "postgres://u@127.0.0.1:1/db"}, Faults: []string{"crash"}}, "--postgres-lock-dsn"},
		{"skew on postgres-advisory", spec.Spec{Backend: "postgres-advisory", Faults: []string{"skew"}}, "server clock cannot be skewed: its server and clients read the machine's real time"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := trial.Run(context.Background(), newReg(t), tc.s, trial.Options{})
			require.ErrorIs(t, err, spec.ErrSpec)
			require.ErrorContains(t, err, tc.want)
		})
	}
}
