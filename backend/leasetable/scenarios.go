package leasetable

import (
	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/harness/nemesis/faults"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/spec"
)

// Scenarios are the catalogue's scenarios of the lease-table backends, on the embedded
// SQLite store (nothing to install) and on a private PostgreSQL (skipped without Debian's
// postgresql): a bare lease table lets the stale write through under a pause, and under
// a clock running ahead — the database's for lease-table, the next taker's for
// lease-table-clienttime — even for a careful client; the fence column refuses it every
// time. As measured, these assert register and tokens unfenced, register, updates and
// tokens fenced (doc.md).
func Scenarios() []catalogue.Scenario {
	unsafe := catalogue.Unsafe().Unchecked(models.Updates, models.Mutex)
	safe := catalogue.Safe().Unchecked(models.Mutex)
	pg := map[string]string{OptionStore: StorePostgres}
	pause, crash, skew := []string{faults.Pause}, []string{faults.Crash}, []string{faults.Skew}
	// A skewed clock runs at the catalogue's SkewTTL: the takeover (the skewed clock's
	// T/20, the next taker's polls and statements) must fit in what the careful holder's
	// own clock still grants it.
	row := func(name, backend, resource, policy string, named []string, opts map[string]string, about string, e catalogue.Expect) catalogue.Scenario {
		s := spec.Spec{Name: name, Backend: backend, Resource: resource, Policy: policy, Faults: named, Options: opts}
		if len(named) == 1 && named[0] == faults.Skew {
			s.TTL = catalogue.SkewTTL
		}
		return catalogue.Scenario{Spec: s, About: about, Expect: e}
	}
	return []catalogue.Scenario{
		row("lease-table-unfenced-pause", Name, "unfenced", "", pause, nil,
			"the holder pauses past lock_until; the next client's UPDATE ... WHERE lock_until <= now() takes the row, and the paused holder's late write overwrites its", unsafe),
		row("lease-table-fenced-pause", Name, "fenced", "", pause, nil,
			"the same pause against a fenced register: the fence column the next UPDATE bumped is greater, and the late write is refused", safe),
		row("lease-table-fenced-crash", Name, "fenced", "", crash, nil,
			"the statement server is crashed and restarted on its SQLite file while the holder is paused: the row and its fence survive, the fence refuses the late write", safe),
		row("lease-table-unfenced-careful-skew", Name, "unfenced", spec.PolicyCareful, skew, nil,
			"the database's clock (SQLite's now(), fencecheck's) runs fast: the row's lease ends while the careful holder's own clock says there is time left, and its write lands", unsafe),
		row("lease-table-fenced-careful-skew", Name, "fenced", spec.PolicyCareful, skew, nil,
			"the same fast database clock against a fenced register: the fence refuses what the careful check let through", safe),
		row("lease-table-clienttime-unfenced-pause", NameClientTime, "unfenced", "", pause, nil,
			"client time: the holder pauses past lock_until by the next client's clock; the late write overwrites the next holder's", unsafe),
		row("lease-table-clienttime-unfenced-careful-skew", NameClientTime, "unfenced", spec.PolicyCareful, skew, nil,
			"client time: the next taker's clock runs ahead, so it finds lock_until passed while the careful holder, by its own clock, still holds the lock and writes", unsafe),
		row("lease-table-clienttime-fenced-careful-skew", NameClientTime, "fenced", spec.PolicyCareful, skew, nil,
			"the same clock ahead against a fenced register: the taker's UPDATE bumped the fence, and the holder's write is refused", safe),
		row("lease-table-postgres-unfenced-pause", Name, "unfenced", "", pause, pg,
			"the table in a private PostgreSQL: the paused holder's lease ends by now(), and its late write overwrites the next holder's", unsafe),
		row("lease-table-postgres-fenced-pause", Name, "fenced", "", pause, pg,
			"the same pause on PostgreSQL against a fenced register: the late write is refused", safe),
		row("lease-table-postgres-fenced-crash", Name, "fenced", "", crash, pg,
			"PostgreSQL is SIGKILLed and recovers its committed row while the holder is paused: the fence keeps rising, the late write is refused", safe),
		row("lease-table-postgres-clienttime-unfenced-careful-skew", NameClientTime, "unfenced", spec.PolicyCareful, skew, pg,
			"client time on PostgreSQL: the next taker's clock runs ahead; the careful holder writes after its lease ended by the taker's clock", unsafe),
		row("lease-table-postgres-clienttime-fenced-careful-skew", NameClientTime, "fenced", spec.PolicyCareful, skew, pg,
			"the same clock ahead on PostgreSQL against a fenced register: the fence refuses the holder's write", safe),
	}
}
