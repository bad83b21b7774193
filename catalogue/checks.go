package catalogue

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/harness/nemesis/faults"
)

// Checks of what a scenario's history must show besides its verdicts (Scenario.Check).

// signalled reports whether a fault records a real signal (SIGSTOP, SIGKILL) sent to
// processes with real PIDs.
func signalled(f history.Fault) bool {
	if f.Signal != history.SignalStop && f.Signal != history.SignalKill || len(f.PIDs) == 0 {
		return false
	}
	return !slices.ContainsFunc(f.PIDs, func(pid int) bool { return pid <= 0 })
}

// NodeFaultsSignalled fails unless every node-pause and crash fault in h records the real
// signal (SIGSTOP, SIGKILL) and the PIDs it went to (history.Fault's Signal and PIDs):
// the service's nodes are processes.
func NodeFaultsSignalled(h *history.History) error {
	for _, f := range h.Faults {
		if (f.Kind == faults.NodePause || f.Kind == faults.Crash) && !signalled(f) {
			return fmt.Errorf("fault %s at %s records no signal and PID (signal %q, pids %v): %q", f.Kind, f.Target, f.Signal, f.PIDs, f.Detail)
		}
	}
	return nil
}

// Detail returns a check that h has a fault of kind and that its detail says every one
// of want.
func Detail(kind string, want ...string) func(*history.History) error {
	return func(h *history.History) error {
		found := false
		for _, f := range h.Faults {
			if f.Kind != kind {
				continue
			}
			found = true
			for _, w := range want {
				if !strings.Contains(f.Detail, w) {
					return fmt.Errorf("fault %s's detail does not say %q: %q", kind, w, f.Detail)
				}
			}
		}
		if !found {
			return fmt.Errorf("no %s fault in the history", kind)
		}
		return nil
	}
}

// All returns a check that runs every one of checks.
func All(checks ...func(*history.History) error) func(*history.History) error {
	return func(h *history.History) error {
		var errs []error
		for _, c := range checks {
			errs = append(errs, c(h))
		}
		return errors.Join(errs...)
	}
}
