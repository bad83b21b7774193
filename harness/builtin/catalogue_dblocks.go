package builtin

import (
	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/spec"
)

// dbLockScenarios are the scenarios of the database session locks (postgres-advisory,
// mariadb-lock), on servers fencecheck starts; the tests skip them when the Debian
// package is missing. Expected verdicts are what the harness measured (README,
// "Database locks").
func dbLockScenarios() []catalogue.Scenario {
	unsafe := catalogue.Unsafe()
	safe := catalogue.Safe()
	// The connection id starts again near 1 when mariadbd restarts: grants after the
	// crash reuse ids granted before it (tokens catalogue.Violated), and the fence, holding the
	// last id before the crash, refuses every write after it.
	connidCrash := catalogue.Expect{Verdicts: catalogue.Verdicts(catalogue.Held, catalogue.Any, models.Violated, catalogue.Violated), NoStaleAccepted: true}
	pause := []string{"pause"}
	// Behind PgBouncer's transaction pooling every client shares one pooled session, on
	// which the lock is re-entrant: every try is granted, no fault needed. The nextval
	// token still orders the grants, so the fence keeps the register (later token wins),
	// but two holders read the same value and both write in token order: updates are
	// lost (measured on every seed; left open, a lucky schedule could keep them).
	bouncerUnfenced := catalogue.Expect{Verdicts: catalogue.Verdicts(catalogue.Violated, catalogue.Violated, catalogue.Held, catalogue.Violated), MinStaleAccepted: 1}
	bouncerFenced := catalogue.Expect{Verdicts: catalogue.Verdicts(catalogue.Held, catalogue.Any, catalogue.Held, catalogue.Violated), NoStaleAccepted: true}
	// mariadbd's clock 2x fast from its start (libfaketime): a pause of about TTL/2,
	// shorter than the TTL by the client's clock, outlives the session (16 of 16 seeds,
	// idle and under-load, 0.50-0.58 s pauses at TTL 1 s).
	skew := []string{"skew", "pause"}
	return []catalogue.Scenario{
		{
			Spec:   spec.Spec{Name: "postgres-advisory-unfenced-pause", Backend: "postgres-advisory", Resource: "unfenced", Faults: pause},
			About:  "the advisory lock's holder pauses past idle_session_timeout; PostgreSQL ends its session and grants the lock to another; the late write overwrites the next holder's",
			Expect: unsafe,
		},
		{
			Spec:   spec.Spec{Name: "postgres-advisory-fenced-pause", Backend: "postgres-advisory", Resource: "fenced", Faults: pause},
			About:  "the same pause against a fenced register: the paused holder's nextval token is older and its write is refused",
			Expect: safe,
		},
		{
			Spec:   spec.Spec{Name: "postgres-advisory-fenced-node-pause", Backend: "postgres-advisory", Resource: "fenced", Faults: []string{"node-pause"}},
			About:  "SIGSTOP of the postmaster and every backend while the holder is paused: after SIGCONT the holder's idle session is ended and the lock passes on; the fence refuses the late write",
			Expect: safe,
		},
		{
			Spec:   spec.Spec{Name: "postgres-advisory-fenced-crash", Backend: "postgres-advisory", Resource: "fenced", Faults: []string{"crash"}},
			About:  "SIGKILL of PostgreSQL while the holder is paused, crash recovery at once: the lock is gone, the sequence goes on (WAL-logged), the fence refuses the late write",
			Expect: safe,
		},
		{
			Spec:   spec.Spec{Name: "postgres-advisory-xact-fenced-crash", Backend: "postgres-advisory-xact", Resource: "fenced", Faults: []string{"crash"}},
			About:  "pg_current_xact_id() as the token: after SIGKILL and crash recovery PostgreSQL hands out transaction ids it had already handed out (tokens reused, 8 of 8 seeds)",
			Expect: catalogue.Expect{Verdicts: catalogue.Verdicts(catalogue.Held, catalogue.Any, models.Violated, catalogue.Violated), NoStaleAccepted: true},
		},
		{
			Spec:   spec.Spec{Name: "postgres-advisory-pgbouncer-unfenced", Backend: "postgres-advisory-pgbouncer", Resource: "unfenced"},
			About:  "no fault: behind PgBouncer's transaction pooling every client's pg_try_advisory_lock runs on the one pooled session and the re-entrant lock says true to all; stale writes get through",
			Expect: bouncerUnfenced,
		},
		{
			Spec:   spec.Spec{Name: "postgres-advisory-pgbouncer-fenced", Backend: "postgres-advisory-pgbouncer", Resource: "fenced"},
			About:  "the same shared lock against a fenced register: nextval still orders the grants, the fence refuses every older token's write (register catalogue.Held) though the lock excludes nobody",
			Expect: bouncerFenced,
		},
		{
			Spec:   spec.Spec{Name: "postgres-advisory-pgbouncer-unfenced-pause", Backend: "postgres-advisory-pgbouncer", Resource: "unfenced", Faults: pause},
			About:  "the holder pauses: the others never stop talking through the pooled session, so idle_session_timeout never fires and the paused holder's lock level stays, stranded; the others were granted anyway",
			Expect: bouncerUnfenced,
		},
		{
			Spec:   spec.Spec{Name: "postgres-advisory-pgbouncer-fenced-pause", Backend: "postgres-advisory-pgbouncer", Resource: "fenced", Faults: pause},
			About:  "the same pause against a fenced register: the paused holder's late write carries an older token and is refused",
			Expect: catalogue.Expect{Verdicts: bouncerFenced.Verdicts, MinStaleRejected: 1, NoStaleAccepted: true},
		},
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
			Spec:   spec.Spec{Name: "mariadb-lock-fenced-crash", Backend: "mariadb-lock", Resource: "fenced", Faults: []string{"crash"}},
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
			Spec:   spec.Spec{Name: "mariadb-lock-unfenced-careful-skew", Backend: "mariadb-lock", Resource: "unfenced", Policy: "careful", Faults: skew},
			About:  "a careful client checks its lease by its own clock after the pause and finds half its TTL left; the fast server clock has ended its session, and the write lands",
			Expect: unsafe,
		},
		{
			Spec:   spec.Spec{Name: "mariadb-lock-connid-fenced-crash", Backend: "mariadb-lock-connid", Resource: "fenced", Faults: []string{"crash"}},
			About:  "the connection id as the token: after the restart ids start again near 1, tokens are reused and go backwards, and the fence refuses every write after the crash",
			Expect: connidCrash,
		},
	}
}
