package pgadvisory

import (
	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/harness/nemesis/faults"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/spec"
)

// Zoo is the PostgreSQL advisory lock's entries in the bug zoo.
func Zoo() []catalogue.Bug {
	return []catalogue.Bug{
		{
			ID:  "authentik-23876",
			Ref: "goauthentik/authentik#23876", URL: "https://github.com/goauthentik/authentik/issues/23876",
			Pain: "a session-level pg_advisory_lock behind PgBouncer's transaction pooling belongs to whichever pooled server connection ran it, not to the client: " +
				"other clients sent to that connection are granted it too (the lock excludes nobody), and an unlock sent to another connection strands it until server_lifetime (PgBouncer's own tracker: pgbouncer#617)",
			Software: "PgBouncer 1.18 (pool_mode = transaction) in front of PostgreSQL 15",
			Source:   "Debian pgbouncer and postgresql",
			Affected: "every PgBouncer version in transaction (or statement) pooling: session-level advisory locks are unsupported there",
			ByOthers: true,
			Property: models.Mutex,
			// No fault: the pooling alone breaks the lock. The run goes on until this
			// many grants, however slow the machine, so holds overlap.
			Spec:      spec.Spec{Backend: BouncerName, Resource: "unfenced", MinGrants: 30},
			Control:   spec.Spec{Backend: Name, Resource: "unfenced", MinGrants: 30},
			ControlIs: "each client on a session of its own (a direct connection, or PgBouncer's session pooling)",
			Shows:     catalogue.TwoHoldersWithoutFault,
		},
		{
			ID:  "pg-xact-id-crash",
			Ref: "fencecheck: postgres-advisory tokens", URL: "backends/postgres-advisory.md#the-tokens",
			Pain: "pg_current_xact_id() of the granting statement looks like a token that only rises, but after a SIGKILL PostgreSQL's crash recovery " +
				"hands out transaction ids it had already handed out to transactions whose WAL was not flushed: tokens are reused",
			Software: "PostgreSQL 15", Source: "Debian postgresql",
			Affected:  "every version: an xid is durable only once a WAL record that needs it is flushed",
			Property:  models.Tokens,
			Spec:      spec.Spec{Backend: Name + "-xact", Resource: "fenced", Faults: []string{faults.Crash}},
			Control:   spec.Spec{Backend: Name, Resource: "fenced", Faults: []string{faults.Crash}},
			ControlIs: "the token is nextval of a sequence in the granting statement (WAL-logged ahead)",
			Shows:     catalogue.TokenBackAcrossFault(faults.Crash),
		},
	}
}
