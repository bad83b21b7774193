package pgadvisory

import (
	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/harness/nemesis/faults"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/spec"
)

// Scenarios are the catalogue's scenarios of the postgres-advisory backends, on a
// private PostgreSQL fencecheck starts (skipped without the Debian package). Expected
// verdicts are what the harness measured (doc.md).
func Scenarios() []catalogue.Scenario {
	unsafe := catalogue.Unsafe()
	safe := catalogue.Safe()
	pause := []string{faults.Pause}
	// Behind PgBouncer's transaction pooling every client shares one pooled session, on
	// which the lock is re-entrant: every try is granted, no fault needed. The nextval
	// token still orders the grants, so the fence keeps the register (later token wins),
	// but two holders read the same value and both write in token order: updates are
	// lost (measured on every seed; left open, a lucky schedule could keep them).
	bouncerUnfenced := catalogue.Unsafe()
	// With no fault, what is certain is that the lock excludes nobody: two clients hold it
	// at once (mutex). Whether a stale write also lands before a newer token's depends on
	// how the clients' statements interleave through the one pooled connection, which
	// the schedule decides: usually, not always (a loaded run saw 595 ops without one).
	bouncerNoFault := catalogue.Expect{Verdicts: catalogue.Verdicts(catalogue.Any, catalogue.Any, catalogue.Held, catalogue.Violated)}
	bouncerFenced := catalogue.Expect{Verdicts: catalogue.Verdicts(catalogue.Held, catalogue.Any, catalogue.Held, catalogue.Violated), NoStaleAccepted: true}
	// The mutex violation needs two holds that overlap: the no-fault runs go on until
	// this many grants were made, however slow the machine, rather than for 2 s.
	const bouncerGrants = 30
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
			Spec:   spec.Spec{Name: "postgres-advisory-fenced-node-pause", Backend: "postgres-advisory", Resource: "fenced", Faults: []string{faults.NodePause}},
			About:  "SIGSTOP of the postmaster and every backend while the holder is paused: after SIGCONT the holder's idle session is ended and the lock passes on; the fence refuses the late write",
			Expect: safe,
		},
		{
			Spec:   spec.Spec{Name: "postgres-advisory-fenced-crash", Backend: "postgres-advisory", Resource: "fenced", Faults: []string{faults.Crash}},
			About:  "SIGKILL of PostgreSQL while the holder is paused, crash recovery at once: the lock is gone, the sequence goes on (WAL-logged), the fence refuses the late write",
			Expect: safe,
		},
		{
			Spec:   spec.Spec{Name: "postgres-advisory-xact-fenced-crash", Backend: "postgres-advisory-xact", Resource: "fenced", Faults: []string{faults.Crash}},
			About:  "pg_current_xact_id() as the token: after SIGKILL and crash recovery PostgreSQL hands out transaction ids it had already handed out (tokens reused, 8 of 8 seeds)",
			Expect: catalogue.Expect{Verdicts: catalogue.Verdicts(catalogue.Held, catalogue.Any, models.Violated, catalogue.Violated), NoStaleAccepted: true},
		},
		{
			Spec:   spec.Spec{Name: "postgres-advisory-pgbouncer-unfenced", Backend: "postgres-advisory-pgbouncer", Resource: "unfenced", MinGrants: bouncerGrants},
			About:  "no fault: behind PgBouncer's transaction pooling every client's pg_try_advisory_lock runs on the one pooled session and the re-entrant lock says true to all: two clients hold it at once (and, as the statements interleave, stale writes usually get through)",
			Expect: bouncerNoFault,
		},
		{
			Spec:   spec.Spec{Name: "postgres-advisory-pgbouncer-fenced", Backend: "postgres-advisory-pgbouncer", Resource: "fenced", MinGrants: bouncerGrants},
			About:  "the same shared lock against a fenced register: nextval still orders the grants, the fence refuses every older token's write (register held) though the lock excludes nobody",
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
	}
}
