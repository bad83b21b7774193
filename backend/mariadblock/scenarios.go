package mariadblock

import (
	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/harness/nemesis/faults"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/spec"
)

// Scenarios are the catalogue's scenarios of the mariadb-lock backends, on a private
// mariadbd fencecheck starts (skipped without the Debian package). Expected verdicts are
// what the harness measured (doc.md).
func Scenarios() []catalogue.Scenario {
	unsafe := catalogue.Unsafe()
	safe := catalogue.Safe()
	// The connection id starts again near 1 when mariadbd restarts: grants after the
	// crash reuse ids granted before it (tokens catalogue.Violated), and the fence, holding the
	// last id before the crash, refuses every write after it.
	connidCrash := catalogue.Expect{Verdicts: catalogue.Verdicts(catalogue.Held, catalogue.Any, models.Violated, catalogue.Violated), NoStaleAccepted: true}
	pause := []string{faults.Pause}
	// mariadbd's clock 2x fast from its start (libfaketime): a pause of about TTL/2,
	// shorter than the TTL by the client's clock, outlives the session (16 of 16 seeds,
	// idle and under-load, 0.50-0.58 s pauses at TTL 1 s).
	skew := []string{faults.Skew, faults.Pause}
	return []catalogue.Scenario{
		{
			Spec:   spec.Spec{Name: "mariadb-lock-unfenced-pause", Backend: "mariadb-lock", Resource: "unfenced", Faults: pause},
			About:  "GET_LOCK's holder pauses past wait_timeout; MariaDB closes its session, releasing the lock to another; the late write overwrites the next holder's",
			Expect: unsafe,
		},
		{
			Spec:   spec.Spec{Name: "mariadb-lock-fenced-pause", Backend: "mariadb-lock", Resource: "fenced", Faults: pause},
			About:  "the same pause against a fenced register: the counter token taken after the grant is older and the late write is refused",
			Expect: safe,
		},
		{
			Spec:   spec.Spec{Name: "mariadb-lock-fenced-crash", Backend: "mariadb-lock", Resource: "fenced", Faults: []string{faults.Crash}},
			About:  "SIGKILL of mariadbd while the holder is paused, InnoDB recovery at once: the counter survives, the fence refuses the late write",
			Expect: safe,
		},
		{
			Spec:   spec.Spec{Name: "mariadb-lock-unfenced-skew", Backend: "mariadb-lock", Resource: "unfenced", Faults: skew},
			About:  "mariadbd's clock runs 2x fast (libfaketime): it ends the holder's session during a pause shorter than wait_timeout by the client's clock, and the late write overwrites the next holder's",
			Expect: unsafe,
		},
		{
			Spec:   spec.Spec{Name: "mariadb-lock-fenced-skew", Backend: "mariadb-lock", Resource: "fenced", Faults: skew},
			About:  "the same fast server clock against a fenced register: the counter token is older and the late write is refused",
			Expect: safe,
		},
		{
			Spec:   spec.Spec{Name: "mariadb-lock-unfenced-careful-skew", Backend: "mariadb-lock", Resource: "unfenced", Policy: spec.PolicyCareful, Faults: skew},
			About:  "a careful client checks its lease by its own clock after the pause and finds half its TTL left; the fast server clock has ended its session, and the write lands",
			Expect: unsafe,
		},
		{
			Spec:   spec.Spec{Name: "mariadb-lock-connid-fenced-crash", Backend: "mariadb-lock-connid", Resource: "fenced", Faults: []string{faults.Crash}},
			About:  "the connection id as the token: after the restart ids start again near 1, tokens are reused and go backwards, and the fence refuses every write after the crash",
			Expect: connidCrash,
		},
	}
}
