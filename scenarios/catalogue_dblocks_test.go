package scenarios

import (
	"context"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/harness/builtin"
	"github.com/fencecheck/fencecheck/spec"
	"github.com/fencecheck/fencecheck/trial"
	"github.com/stretchr/testify/require"
)

// A database lock that cannot run as asked is the user's input: spec.ErrSpec, one clear
// message.
func TestDBLockSpecErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    spec.Spec
		want string
	}{
		{"mariadb sub-second ttl", spec.Spec{Backend: "mariadb-lock", TTL: 1500 * time.Millisecond}, "whole seconds"},
		{"postgres tiny ttl", spec.Spec{Backend: "postgres-advisory", TTL: 60 * time.Millisecond}, "below 100ms"},
		{"no token, fenced", spec.Spec{Backend: "mariadb-lock-notoken", Resource: "fenced"}, "no fencing token"},
		{"pgbouncer tiny ttl", spec.Spec{Backend: "postgres-advisory-pgbouncer", TTL: 60 * time.Millisecond}, "below 100ms"},
		{"pgbouncer on an existing server", spec.Spec{Backend: "postgres-advisory-pgbouncer", Options: map[string]string{"postgres-lock-dsn": "postgres://u@127.0.0.1:1/db"}}, "--postgres-lock-dsn is for the postgres-advisory or"},
		{"node fault on an existing server", spec.Spec{Backend: "postgres-advisory", Options: map[string]string{"postgres-lock-dsn": "postgres://u@127.0.0.1:1/db"}, Faults: []string{"crash"}}, "--postgres-lock-dsn"},
		{"no leader", spec.Spec{Backend: "mariadb-lock", Faults: []string{"leader-isolation"}}, "needs a lock-service cluster"},
		{"dsn of another backend", spec.Spec{Backend: "naive", Options: map[string]string{"mariadb-lock-dsn": "x"}}, "--mariadb-lock-dsn is for the mariadb-lock"},
		// skew is mariadbd's clock run fast from its start: the private server only,
		// targeted, and not a clock fencecheck can step.
		{"skew on an existing server", spec.Spec{Backend: "mariadb-lock", Options: map[string]string{"mariadb-lock-dsn": "root@tcp(127.0.0.1:1)/db"}, Faults: []string{"skew"}}, "runs against servers given by --mariadb-lock-dsn (harness.External), so it takes client-side faults only"},
		{"skew in a random schedule", spec.Spec{Backend: "mariadb-lock", RandomFaults: []string{"skew"}, Duration: 10 * time.Second}, "not in a random schedule"},
		{"clock-jump on mariadb-lock", spec.Spec{Backend: "mariadb-lock", Faults: []string{"clock-jump"}}, "can only run fast from the start"},
		{"skew on postgres-advisory", spec.Spec{Backend: "postgres-advisory", Faults: []string{"skew"}}, "needs a service clock fencecheck owns"},
		{"nothing at the dsn", spec.Spec{Backend: "mariadb-lock", Options: map[string]string{"mariadb-lock-dsn": "root@tcp(127.0.0.1:1)/db"}, Faults: []string{"pause"}}, "no MariaDB server answers at 127.0.0.1:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := trial.Run(context.Background(), builtin.Registry(), tc.s, trial.Options{})
			require.ErrorIs(t, err, spec.ErrSpec)
			require.ErrorContains(t, err, tc.want)
		})
	}
}
