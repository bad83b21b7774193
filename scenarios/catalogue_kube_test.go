package scenarios

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/harness/builtin"
	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/harness/lease/kubelease"
	"github.com/fencecheck/fencecheck/spec"
	"github.com/fencecheck/fencecheck/trial"
)

// checkKubeRun checks what a kube-lease catalogue run left: client-go's timing in the
// history, obeying client-go's rules, and node faults that name the apiserver's PID and
// the signal.
func checkKubeRun(t *testing.T, sc catalogue.Scenario, h *history.History) {
	t.Helper()
	if !strings.HasPrefix(sc.Backend, kubelease.Name) {
		return
	}
	s, ok := h.Run.Extra["backend_settings"].(map[string]any)
	require.True(t, ok, "no backend_settings in the history's run: %v", h.Run.Extra)
	ms := func(k string) time.Duration {
		v, ok := s[k].(float64) // as read back from JSON
		if !ok {
			i, isInt := s[k].(int64)
			require.True(t, isInt, "backend_settings.%s = %v", k, s[k])
			v = float64(i)
		}
		return time.Duration(v) * time.Millisecond
	}
	tm := kubelease.Timing{LeaseDuration: ms("lease_duration_ms"), RenewDeadline: ms("renew_deadline_ms"), RetryPeriod: ms("retry_period_ms")}
	require.Equal(t, time.Duration(h.Run.TTLms)*time.Millisecond, tm.LeaseDuration)
	require.NoError(t, tm.Validate())
	for _, f := range h.Faults {
		if f.Kind == "node-pause" || f.Kind == "crash" {
			require.Regexp(t, serviceDetail, f.Detail)
		}
	}
}

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
		{"no clock", spec.Spec{Backend: "kube-lease", Faults: []string{"skew"}}, "needs a service clock fencecheck owns"},
		{"missing binary", spec.Spec{Backend: "kube-lease", Options: map[string]string{kubelease.OptionAPIServer: "/nonexistent/kube-apiserver"}}, "/nonexistent/kube-apiserver"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := trial.Run(context.Background(), builtin.Registry(), tc.s, trial.Options{})
			require.ErrorIs(t, err, spec.ErrSpec)
			require.ErrorContains(t, err, tc.want)
		})
	}
}
