package kubelease

import (
	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/harness/nemesis/faults"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/spec"
)

// Zoo is the Kubernetes Lease lock's entries in the bug zoo: what users of client-go's
// leader election reported, on a real kube-apiserver.
func Zoo() []catalogue.Bug {
	return []catalogue.Bug{
		{
			ID:  "cilium-42920",
			Ref: "cilium/cilium#42920", URL: "https://github.com/cilium/cilium/pull/42920",
			Pain: "a cilium-operator cut off from the apiserver was told by client-go that it lost the lead (OnStoppedLeading at the renew deadline), " +
				"but parts of it went on acting past the lease duration: two leaders, the same PodCIDR given to two nodes",
			Software:  "client-go v0.37.2 leaderelection (LeaseLock) against kube-apiserver v1.37.2",
			Source:    "backend/kubelease/apiserver/build.sh (Go module proxy)",
			Affected:  "any client-go user whose leader keeps acting after OnStoppedLeading; cilium before the fix",
			ByOthers:  true,
			Property:  models.Heed,
			Spec:      spec.Spec{Backend: Name, Resource: "unfenced", Faults: []string{faults.Partition}},
			Control:   spec.Spec{Backend: Name, Resource: "unfenced", Policy: spec.PolicyHeeding, Faults: []string{faults.Partition}},
			ControlIs: "the leader stops acting the moment OnStoppedLeading fires (the heeding client), as the fix does",
			Shows:     catalogue.WroteAfterToldLost,
		},
	}
}

// Untried is what client-go's users reported that the zoo does not reproduce yet, and
// why.
func Untried() []catalogue.Untried {
	return []catalogue.Untried{
		{
			Ref: "kubernetes/kubernetes#67651", URL: "https://github.com/kubernetes/kubernetes/issues/67651",
			Pain: "client-go leader election could let two candidates lead at once (overlapping terms), seen in a test with thousands of candidates",
			Why:  "not tried: its shape needs thousands of candidates racing for one Lease; fencecheck's runs have a few clients, and under a partition every client-go leader overlaps its successor by design (mutex is violated for every lease lock), so only a run at that scale would show the report's own cause",
		},
	}
}
