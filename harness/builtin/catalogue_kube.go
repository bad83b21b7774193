package builtin

import (
	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/spec"
)

// kubeScenarios are the scenarios of the Kubernetes Lease (kube-lease: client-go
// leaderelection against a real kube-apiserver); the tests skip them when the
// kube-apiserver build is missing (harness/lease/kubelease/apiserver/build.sh).
// Expected verdicts are what the harness measured (README, "Kubernetes leases").
func kubeScenarios() []catalogue.Scenario {
	unsafe := catalogue.Unsafe()
	safe := catalogue.Safe()
	pause := []string{"pause"}
	return []catalogue.Scenario{
		{
			Spec:   spec.Spec{Name: "kube-lease-unfenced-pause", Backend: "kube-lease", Resource: "unfenced", Faults: pause},
			About:  "the leader pauses past LeaseDuration; another candidate sees no renewal for LeaseDuration and takes the Lease; the old leader resumes and writes, its OnStoppedLeading unheard: the late write overwrites the new leader's",
			Expect: unsafe,
		},
		{
			Spec:   spec.Spec{Name: "kube-lease-fenced-pause", Backend: "kube-lease", Resource: "fenced", Faults: pause},
			About:  "the same pause against a fenced register: the takeover raised leaseTransitions, so the old leader's token is older and its write is refused",
			Expect: safe,
		},
		{
			Spec:   spec.Spec{Name: "kube-lease-fenced-node-pause", Backend: "kube-lease", Resource: "fenced", Faults: []string{"node-pause"}},
			About:  "SIGSTOP of the kube-apiserver while the leader is paused: after SIGCONT the candidates wait LeaseDuration from what they see and take over; the fence refuses the late write",
			Expect: safe,
		},
		{
			Spec:   spec.Spec{Name: "kube-lease-fenced-crash", Backend: "kube-lease", Resource: "fenced", Faults: []string{"crash"}},
			About:  "SIGKILL of the kube-apiserver while the leader is paused, restarted at once: the Lease is in etcd, leaseTransitions goes on, the fence refuses the late write",
			Expect: safe,
		},
		{
			Spec:   spec.Spec{Name: "kube-lease-rv-fenced-crash", Backend: "kube-lease-rv", Resource: "fenced", Faults: []string{"crash"}},
			About:  "the Lease's resourceVersion as the token: it is etcd's revision, which an apiserver restart does not reset; the fence refuses the late write",
			Expect: safe,
		},
	}
}
