package kubelease_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/backend/kubelease"
	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/harnesstest"
	"github.com/fencecheck/fencecheck/spec"
	"github.com/fencecheck/fencecheck/trial"
)

// A kube-lease run that cannot go as asked is the user's input: spec.ErrSpec, one line.
func TestKubeSpecErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    spec.Spec
		want string
	}{
		{"sub-second ttl", spec.Spec{Backend: "kube-lease", TTL: 500 * time.Millisecond}, "whole seconds, at least 1s"},
		{"three members", spec.Spec{Backend: "kube-lease", Members: 3}, "--members must be 1"},
		{"no leader", spec.Spec{Backend: "kube-lease", Faults: []string{"leader-isolation"}}, "needs a lock-service cluster"},
		{"no clock", spec.Spec{Backend: "kube-lease", Faults: []string{"skew"}}, "server clock cannot be skewed: its server and clients read the machine's real time"},
		{"missing binary", spec.Spec{Backend: "kube-lease", Options: map[string]string{kubelease.OptionAPIServer: "/nonexistent/kube-apiserver"}}, "/nonexistent/kube-apiserver"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := trial.Run(context.Background(), newReg(t), tc.s, trial.Options{})
			require.ErrorIs(t, err, spec.ErrSpec)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// newReg is fencecheck's registry with this package's backends: what its scenarios run in.
func newReg(t testing.TB) *registry.Registry {
	return harnesstest.Registry(t, kubelease.Descriptors()...)
}
