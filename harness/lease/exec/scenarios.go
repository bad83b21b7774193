package execlock

import (
	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/spec"
)

// Scenarios run the exec backend (your own lock client as a process of its own)
// with the shipped Python template client (harness/lease/exec/examples/naive_http.py,
// which every run finds in $FENCECHECK_EXAMPLES) against the naive lock server
// fencecheck starts. Pauses are real: SIGSTOP of the client's process group; a
// client-crash is a real SIGKILL. They need python3 (the tests skip them without it).
func Scenarios() []catalogue.Scenario {
	unsafe := catalogue.Unsafe()
	safe := catalogue.Safe()
	template := map[string]string{"client-cmd": `python3 "$FENCECHECK_EXAMPLES/naive_http.py"`}
	return []catalogue.Scenario{
		{
			Spec:   spec.Spec{Name: "exec-unfenced-pause", Backend: "exec", Options: template, Resource: "unfenced", Faults: []string{"pause"}},
			About:  "the holder's lock client process is stopped with SIGSTOP past its TTL (its renewals stop too); its late write overwrites the next holder's",
			Expect: unsafe,
		},
		{
			Spec:   spec.Spec{Name: "exec-fenced-pause", Backend: "exec", Options: template, Resource: "fenced", Faults: []string{"pause"}},
			About:  "the same SIGSTOP pause; the token the client reported is refused by the fence",
			Expect: safe,
		},
		{
			Spec:   spec.Spec{Name: "exec-unfenced-client-crash", Backend: "exec", Options: template, Resource: "unfenced", Faults: []string{"client-crash"}},
			About:  "the holder's lock client is killed with SIGKILL and replaced; the application writes later with the dead client's token, and it gets through",
			Expect: unsafe,
		},
		{
			Spec:   spec.Spec{Name: "exec-fenced-client-crash", Backend: "exec", Options: template, Resource: "fenced", Faults: []string{"client-crash"}},
			About:  "the same SIGKILL; the old token is refused by the fence",
			Expect: safe,
		},
		{
			Spec:  spec.Spec{Name: "exec-fenced-crash", Backend: "exec", Options: template, Resource: "fenced", Faults: []string{"crash"}},
			About: "the naive lock server behind the exec clients crashes while the holder is paused and restarts with its counter back at 0: node faults reach the wrapped service; reused tokens are refused",
			Expect: catalogue.Expect{
				Verdicts:         catalogue.Verdicts(catalogue.Held, catalogue.Held, catalogue.Violated, catalogue.Violated),
				MinStaleRejected: 1, NoStaleAccepted: true,
			},
		},
	}
}
