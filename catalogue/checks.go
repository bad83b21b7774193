package catalogue

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/fencecheck/fencecheck/harness/faults"
	"github.com/fencecheck/fencecheck/harness/history"
)

// Checks of what a scenario's history must show besides its verdicts (Scenario.Check).

// signalled is what a node fault on a real server process names: the signal and the PID.
var signalled = regexp.MustCompile(`SIG(STOP|KILL).*\(pid [1-9][0-9]*\)|\(pid [1-9][0-9]*\).*SIG(STOP|KILL)`)

// NodeFaultsSignalled fails unless every node-pause and crash fault in h names the real
// signal (SIGSTOP, SIGKILL) and the PID it went to: the service's nodes are processes.
func NodeFaultsSignalled(h *history.History) error {
	for _, f := range h.Faults {
		if (f.Kind == faults.NodePause || f.Kind == faults.Crash) && !signalled.MatchString(f.Detail) {
			return fmt.Errorf("fault %s at %s names no signal and PID: %q", f.Kind, f.Target, f.Detail)
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
