package leasetable

import (
	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/harness/nemesis/faults"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/spec"
)

// Zoo is the lease table's entries in the bug zoo: what ShedLock's users reported of
// its JDBC lock provider (the same UPDATE ... WHERE lock_until <= now() this backend
// runs), on the embedded SQLite store.
func Zoo() []catalogue.Bug {
	const software = "ShedLock's JDBC lock (lock_until by the client's clock, its default), on SQLite (modernc.org/sqlite v1.62.0)"
	const source = "embedded in fencecheck"
	return []catalogue.Bug{
		{
			ID:  "shedlock-132",
			Ref: "lukas-krecan/ShedLock#132", URL: "https://github.com/lukas-krecan/ShedLock/issues/132",
			Pain:     "a stop-the-world GC pause longer than lockAtMostFor let a second node take the lock and run the task while the first one, resumed, finished its run",
			Software: software, Source: source,
			Affected: "every version: lockAtMostFor is a lease, and ShedLock documents that it cannot stop a paused holder",
			ByOthers: true,
			Property: models.Register,
			Spec:     spec.Spec{Backend: NameClientTime, Resource: "unfenced", Faults: []string{faults.Pause}},
			Control:  spec.Spec{Backend: NameClientTime, Resource: "fenced", Faults: []string{faults.Pause}},
			ControlIs: "the task's write carries the row's fence column (bumped by the granting UPDATE) and the " +
				"resource refuses an older one",
			Shows: catalogue.LateWriteOfStruck(faults.Pause),
		},
		{
			ID:  "shedlock-231",
			Ref: "lukas-krecan/ShedLock#231", URL: "https://github.com/lukas-krecan/ShedLock/issues/231",
			Pain:     "nodes' clocks not in sync: a node whose clock ran ahead found lock_until passed and took the lock while its holder, by its own clock, still held it (also #1241: a job ran on two nodes with a short lockAtMostFor)",
			Software: software, Source: source,
			Affected:  "ShedLock 4.6.0 and every version without usingDbTime() (added for JDBC later; not on every provider)",
			ByOthers:  true,
			Property:  models.Register,
			Spec:      spec.Spec{Backend: NameClientTime, Resource: "unfenced", Policy: spec.PolicyCareful, Faults: []string{faults.Skew}, TTL: catalogue.SkewTTL},
			Control:   spec.Spec{Backend: NameClientTime, Resource: "fenced", Policy: spec.PolicyCareful, Faults: []string{faults.Skew}, TTL: catalogue.SkewTTL},
			ControlIs: "the same clocks against a resource that fences on the row's fence column",
			Shows:     catalogue.LateWriteOfStruck(faults.Skew),
		},
	}
}
