package builtin

import (
	"time"

	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/spec"
)

// databaseScenarios are the scenarios with a real database as the fenced resource:
// SQLite (embedded, always runs) and PostgreSQL (needs a server: --postgres-dsn or
// $FENCECHECK_POSTGRES_DSN; the tests skip them without one). Each check-then-write
// variant's verdicts are what the harness measured (README, "Databases").
func databaseScenarios() []catalogue.Scenario {
	unsafe := catalogue.Unsafe()
	safe := catalogue.Safe()
	// Locking the row at the check (FOR UPDATE, BEGIN IMMEDIATE) makes the next holder's
	// write wait for the paused one, so no write is ever stale (the fence is never
	// tested: register inconclusive) and nothing is written for the whole pause. But the
	// next holder read the row before its write blocked, and the worker's read is outside
	// the write's transaction: when the paused write lands, the next holder overwrites
	// it with a value computed from the older read. Updates are lost (measured, every run).
	locked := catalogue.Expect{Verdicts: catalogue.Verdicts(models.Inconclusive, catalogue.Violated, catalogue.Held, catalogue.Violated), NoStaleAccepted: true}
	// The next holder's write waits for the whole pause while its lease is renewed every
	// TTL/3. With 500ms leases a loaded machine let a renewal slip past the TTL (1 of 12
	// runs under heavy load): the waiting writer became stale and the fence was tested.
	// A 1s TTL (a 20s pause, 20×TTL) needs a twice longer stall (0 of 12).
	const lockedTTL = time.Second
	// A check-then-write over the network: the stale write gets through and the update
	// is lost. (The register verdict needs a read to see the stale value before it is
	// overwritten; the nemesis ends the pause at the moment another client's write is
	// accepted and holds everyone else until the stale write has landed, so the next
	// critical section reads it on every run.)
	lostOverNetwork := catalogue.Expect{Verdicts: catalogue.Verdicts(catalogue.Violated, catalogue.Violated, catalogue.Held, catalogue.Violated), MinStaleAccepted: 1}
	withEffects := func(e catalogue.Expect, v models.Verdict) catalogue.Expect {
		m := map[models.Property]models.Verdict{models.Effects: v}
		for p, pv := range e.Verdicts {
			m[p] = pv
		}
		e.Verdicts = m
		return e
	}
	pause := []string{"pause"}
	return []catalogue.Scenario{
		// SQLite, embedded: the fenced conditional UPDATE under each lock service.
		{
			Spec:   spec.Spec{Name: "naive-sqlite-pause", Backend: "naive", Resource: "sqlite", Faults: pause},
			About:  "the holder pauses past its TTL; its late UPDATE ... WHERE token < ? matches no row in SQLite: rejected by the database",
			Expect: safe,
		},
		{
			Spec:   spec.Spec{Name: "etcd-sqlite-pause", Backend: "etcd", Resource: "sqlite", Faults: pause},
			About:  "etcd lock, SQLite row: the paused holder's CreateRevision token is older and its conditional UPDATE is rejected",
			Expect: safe,
		},
		{
			Spec:   spec.Spec{Name: "raft-sqlite-pause", Backend: "raft", Resource: "sqlite", Faults: pause},
			About:  "raft lock, SQLite row: the paused holder's log-index token is older and its conditional UPDATE is rejected",
			Expect: safe,
		},
		{
			Spec:   spec.Spec{Name: "naive-sqlite-toctou-pause", Backend: "naive", Resource: "sqlite-toctou", Faults: pause},
			About:  "SQLite check-then-write in two autocommitted statements: the pause between SELECT and UPDATE lets the stale write through",
			Expect: unsafe,
		},
		{
			Spec:   spec.Spec{Name: "etcd-sqlite-toctou-pause", Backend: "etcd", Resource: "sqlite-toctou", Faults: pause},
			About:  "the same check-then-write with etcd tokens: the check was stale by the time of the UPDATE",
			Expect: unsafe,
		},
		{
			Spec:   spec.Spec{Name: "naive-sqlite-toctou-tx-pause", Backend: "naive", Resource: "sqlite-toctou-tx", Faults: pause},
			About:  "check-then-write inside one SQLite transaction: its read snapshot is stale, the UPDATE fails with SQLITE_BUSY_SNAPSHOT, and the retried check refuses",
			Expect: safe,
		},
		{
			Spec:   spec.Spec{Name: "naive-sqlite-toctou-immediate-pause", Backend: "naive", Resource: "sqlite-toctou-immediate", TTL: lockedTTL, Faults: pause},
			About:  "BEGIN IMMEDIATE holds SQLite's write lock through the pause: no stale write, but nobody writes until the paused holder wakes, and the next holder then overwrites its write from an older read (lost update)",
			Expect: locked,
		},
		{
			Spec:   spec.Spec{Name: "naive-sqlite-outbox-pause", Backend: "naive", Resource: "sqlite-outbox", Faults: pause},
			About:  "fenced UPDATE + outbox INSERT in one SQLite transaction: the stale write is rejected, so no outbox row and no side effect",
			Expect: withEffects(safe, catalogue.Held),
		},
		{
			Spec:   spec.Spec{Name: "naive-sqlite-direct-pause", Backend: "naive", Resource: "sqlite-direct", Faults: pause},
			About:  "the client calls the webhook itself, then writes: SQLite rejects the stale write, but its side effect has already escaped",
			Expect: withEffects(safe, catalogue.Violated),
		},

		// PostgreSQL: a real server, each client through its own fault-proxy link.
		{
			Spec:   spec.Spec{Name: "naive-postgres-pause", Backend: "naive", Resource: "postgres", Faults: pause},
			About:  "the holder pauses past its TTL (its PostgreSQL connection stalls too); its late conditional UPDATE matches no row: rejected",
			Expect: safe,
		},
		{
			Spec:   spec.Spec{Name: "etcd-postgres-pause", Backend: "etcd", Resource: "postgres", Faults: pause},
			About:  "etcd lock, PostgreSQL row: the paused holder's older token is rejected by the conditional UPDATE",
			Expect: safe,
		},
		{
			Spec:   spec.Spec{Name: "raft-postgres-pause", Backend: "raft", Resource: "postgres", Faults: pause},
			About:  "raft lock, PostgreSQL row: the paused holder's older token is rejected by the conditional UPDATE",
			Expect: safe,
		},
		{
			Spec:   spec.Spec{Name: "naive-postgres-delay", Backend: "naive", Resource: "postgres", Faults: []string{"delay"}},
			About:  "the holder's UPDATE is held in the network until its lease expired and another write was accepted; PostgreSQL rejects it on arrival",
			Expect: catalogue.Expect{Verdicts: catalogue.Verdicts(catalogue.Held, catalogue.Held, catalogue.Held, catalogue.Any), MinStaleRejected: 1, NoStaleAccepted: true},
		},
		{
			Spec:   spec.Spec{Name: "naive-postgres-toctou-pause", Backend: "naive", Resource: "postgres-toctou", Faults: pause},
			About:  "PostgreSQL check-then-write in two autocommitted statements: the stale write gets through and an update is lost",
			Expect: lostOverNetwork,
		},
		{
			Spec:   spec.Spec{Name: "naive-postgres-toctou-tx-pause", Backend: "naive", Resource: "postgres-toctou-tx", Faults: pause},
			About:  "check-then-write inside one READ COMMITTED transaction (the default): the UPDATE sees the newer row and overwrites it anyway",
			Expect: lostOverNetwork,
		},
		{
			Spec:   spec.Spec{Name: "naive-postgres-toctou-serializable-pause", Backend: "naive", Resource: "postgres-toctou-serializable", Faults: pause},
			About:  "check-then-write inside one SERIALIZABLE transaction: the UPDATE fails with a serialization failure, and the retried check refuses",
			Expect: safe,
		},
		{
			Spec:   spec.Spec{Name: "naive-postgres-toctou-forupdate-pause", Backend: "naive", Resource: "postgres-toctou-forupdate", TTL: lockedTTL, Faults: pause},
			About:  "SELECT ... FOR UPDATE holds the row lock through the pause: no stale write, but every writer waits for the paused holder, and the next holder then overwrites its write from an older read (lost update)",
			Expect: locked,
		},
		{
			Spec:   spec.Spec{Name: "naive-postgres-outbox-pause", Backend: "naive", Resource: "postgres-outbox", Faults: pause},
			About:  "fenced UPDATE + outbox INSERT in one PostgreSQL transaction: no side effect of the rejected stale write is ever delivered",
			Expect: withEffects(safe, catalogue.Held),
		},
		{
			Spec:   spec.Spec{Name: "naive-postgres-direct-pause", Backend: "naive", Resource: "postgres-direct", Faults: pause},
			About:  "the client calls the webhook itself, then writes: PostgreSQL rejects the stale write, its side effect has already escaped",
			Expect: withEffects(safe, catalogue.Violated),
		},
	}
}
