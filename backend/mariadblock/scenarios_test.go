package mariadblock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/backend/mariadblock"
	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/harnesstest"
	"github.com/fencecheck/fencecheck/spec"
	"github.com/fencecheck/fencecheck/trial"
)

// newReg is fencecheck's registry with this package's backends: what its scenarios run in.
func newReg(t testing.TB) *registry.Registry {
	return harnesstest.Registry(t, mariadblock.Descriptors()...)
}

// A run that cannot go as asked is the user's input: spec.ErrSpec, one clear message.
func TestSpecErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    spec.Spec
		want string
	}{
		{"mariadb sub-second ttl", spec.Spec{Backend: "mariadb-lock", TTL: 1500 * time.Millisecond}, "whole seconds"},
		{"no token, fenced", spec.Spec{Backend: "mariadb-lock-notoken", Resource: "fenced"}, "no fencing token"},
		{"no leader", spec.Spec{Backend: "mariadb-lock", Faults: []string{"leader-isolation"}}, "needs a lock-service cluster"},
		// skew is mariadbd's clock run fast from its start: the private server only,
		// targeted, and not a clock fencecheck can step.
		{"skew on an existing server", spec.Spec{Backend: "mariadb-lock", Options: map[string]string{"mariadb-lock-dsn": "root@tcp(127.0.0.1:1)/db"}, Faults: []string{"skew"}}, "runs against servers given by --mariadb-lock-dsn, so it takes client-side faults only"},
		{"skew in a random schedule", spec.Spec{Backend: "mariadb-lock", RandomFaults: []string{"skew"}, Duration: 10 * time.Second}, "not in a random schedule"},
		{"clock-jump on mariadb-lock", spec.Spec{Backend: "mariadb-lock", Faults: []string{"clock-jump"}}, "can only be run fast from the server's start (skew), not stepped back while it runs"},
		{"nothing at the dsn", spec.Spec{Backend: "mariadb-lock", Options: map[string]string{"mariadb-lock-dsn": "root@tcp(127.0.0.1:1)/db"}, Faults: []string{"pause"}}, "no MariaDB server answers at 127.0.0.1:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := trial.Run(context.Background(), newReg(t), tc.s, trial.Options{})
			require.ErrorIs(t, err, spec.ErrSpec)
			require.ErrorContains(t, err, tc.want)
		})
	}
}
