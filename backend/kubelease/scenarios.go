package kubelease

import (
	"errors"
	"fmt"
	"time"

	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/harness/nemesis/faults"
	"github.com/fencecheck/fencecheck/spec"
)

// Scenarios are the catalogue's scenarios of the Kubernetes Lease (kube-lease: client-go
// leaderelection against a real kube-apiserver); the tests skip them when the
// kube-apiserver build is missing (backend/kubelease/apiserver/build.sh).
// Expected verdicts are what the harness measured (README, "Kubernetes leases").
func Scenarios() []catalogue.Scenario {
	unsafe := catalogue.Unsafe()
	safe := catalogue.Safe()
	pause := []string{faults.Pause}
	return []catalogue.Scenario{
		{
			Spec:   spec.Spec{Name: "kube-lease-unfenced-pause", Backend: "kube-lease", Resource: "unfenced", Faults: pause},
			About:  "the leader pauses past LeaseDuration; another candidate sees no renewal for LeaseDuration and takes the Lease; the old leader resumes and writes, its OnStoppedLeading unheard: the late write overwrites the new leader's",
			Expect: unsafe,
			Check:  checkRun,
		},
		{
			Spec:   spec.Spec{Name: "kube-lease-fenced-pause", Backend: "kube-lease", Resource: "fenced", Faults: pause},
			About:  "the same pause against a fenced register: the takeover raised leaseTransitions, so the old leader's token is older and its write is refused",
			Expect: safe,
			Check:  checkRun,
		},
		{
			Spec:   spec.Spec{Name: "kube-lease-fenced-node-pause", Backend: "kube-lease", Resource: "fenced", Faults: []string{faults.NodePause}},
			About:  "SIGSTOP of the kube-apiserver while the leader is paused: after SIGCONT the candidates wait LeaseDuration from what they see and take over; the fence refuses the late write",
			Expect: safe,
			Check:  checkRun,
		},
		{
			Spec:   spec.Spec{Name: "kube-lease-fenced-crash", Backend: "kube-lease", Resource: "fenced", Faults: []string{faults.Crash}},
			About:  "SIGKILL of the kube-apiserver while the leader is paused, restarted at once: the Lease is in etcd, leaseTransitions goes on, the fence refuses the late write",
			Expect: safe,
			Check:  checkRun,
		},
		{
			Spec:   spec.Spec{Name: "kube-lease-rv-fenced-crash", Backend: "kube-lease-rv", Resource: "fenced", Faults: []string{faults.Crash}},
			About:  "the Lease's resourceVersion as the token: it is etcd's revision, which an apiserver restart does not reset; the fence refuses the late write",
			Expect: safe,
			Check:  checkRun,
		},
	}
}

// checkRun checks what a kube-lease run left besides its verdicts: client-go's timing
// in the history's run (backend_settings), obeying client-go's rules with the TTL as
// LeaseDuration, and node faults that name the apiserver's PID and the signal.
func checkRun(h *history.History) error {
	s, ok := h.Run.Extra["backend_settings"].(map[string]any)
	if !ok {
		return fmt.Errorf("no backend_settings in the history's run: %v", h.Run.Extra)
	}
	ms := func(k string) (time.Duration, error) {
		switch v := s[k].(type) {
		case float64: // as read back from JSON
			return time.Duration(v) * time.Millisecond, nil
		case int64:
			return time.Duration(v) * time.Millisecond, nil
		}
		return 0, fmt.Errorf("backend_settings.%s = %v, not a number of milliseconds", k, s[k])
	}
	var tm Timing
	var errs []error
	for _, f := range []struct {
		key string
		to  *time.Duration
	}{{"lease_duration_ms", &tm.LeaseDuration}, {"renew_deadline_ms", &tm.RenewDeadline}, {"retry_period_ms", &tm.RetryPeriod}} {
		d, err := ms(f.key)
		*f.to = d
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if ttl := time.Duration(h.Run.TTLms) * time.Millisecond; tm.LeaseDuration != ttl {
		return fmt.Errorf("LeaseDuration %v is not the run's TTL %v", tm.LeaseDuration, ttl)
	}
	if err := tm.Validate(); err != nil {
		return err
	}
	return catalogue.NodeFaultsSignalled(h)
}
