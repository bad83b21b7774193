package catalogue_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/harness/nemesis/faults"
)

func TestNodeFaultsSignalled(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault history.Fault
		ok    bool
	}{
		{"a stopped server", history.Fault{Kind: faults.NodePause, Signal: history.SignalStop, PIDs: []int{4711}}, true},
		{"killed servers", history.Fault{Kind: faults.Crash, Signal: history.SignalKill, PIDs: []int{4711, 4712}}, true},
		{"a stall, no signal", history.Fault{Kind: faults.NodePause, Detail: "leader node 1 stalled"}, false},
		{"the detail alone", history.Fault{Kind: faults.Crash, Detail: "leader node 1 (pid 4711) killed with SIGKILL"}, false},
		{"no PID", history.Fault{Kind: faults.Crash, Signal: history.SignalKill}, false},
		{"a PID that is none", history.Fault{Kind: faults.Crash, Signal: history.SignalKill, PIDs: []int{4711, 0}}, false},
		{"another signal", history.Fault{Kind: faults.NodePause, Signal: "SIGTERM", PIDs: []int{4711}}, false},
		{"a client fault is not checked", history.Fault{Kind: faults.Pause}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := catalogue.NodeFaultsSignalled(&history.History{Faults: []history.Fault{tc.fault}})
			if tc.ok {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
			}
		})
	}
}
