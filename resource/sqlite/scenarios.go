package sqlite

import (
	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/harness/nemesis/faults"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/resource/sqldb"
	"github.com/fencecheck/fencecheck/spec"
)

// Scenarios are the catalogue's scenarios with an embedded SQLite database as the fenced
// resource, under the naive, etcd and raft locks. Each check-then-write variant's
// verdicts are what the harness measured (docs/resources.md).
func Scenarios() []catalogue.Scenario {
	unsafe, safe := catalogue.Unsafe(), catalogue.Safe()
	pause := []string{faults.Pause}
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
			Spec:   spec.Spec{Name: "naive-sqlite-toctou-immediate-pause", Backend: "naive", Resource: "sqlite-toctou-immediate", TTL: sqldb.LockedTTL, Faults: pause},
			About:  "BEGIN IMMEDIATE holds SQLite's write lock through the pause: no stale write, but nobody writes until the paused holder wakes, and the next holder then overwrites its write from an older read (lost update)",
			Expect: sqldb.LockedAtCheck(),
		},
		{
			Spec:   spec.Spec{Name: "naive-sqlite-outbox-pause", Backend: "naive", Resource: "sqlite-outbox", Faults: pause},
			About:  "fenced UPDATE + outbox INSERT in one SQLite transaction: the stale write is rejected, so no outbox row and no side effect",
			Expect: safe.With(models.Effects, catalogue.Held),
		},
		{
			Spec:   spec.Spec{Name: "naive-sqlite-direct-pause", Backend: "naive", Resource: "sqlite-direct", Faults: pause},
			About:  "the client calls the webhook itself, then writes: SQLite rejects the stale write, but its side effect has already escaped",
			Expect: safe.With(models.Effects, catalogue.Violated),
		},
	}
}
