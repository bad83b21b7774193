package postgres

import (
	"time"

	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/harness/nemesis/faults"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/resource/sqldb"
	"github.com/fencecheck/fencecheck/spec"
)

// Scenarios are the catalogue's scenarios with a real PostgreSQL as the fenced resource
// (a server given by --postgres-dsn or $FENCECHECK_POSTGRES_DSN; skipped without one).
// Each check-then-write variant's verdicts are what the harness measured
// (docs/resources.md).
func Scenarios() []catalogue.Scenario {
	// A check-then-write over the network lets the stale write through and the update is
	// lost: unsafe. (The register verdict needs a read to see the stale value before it
	// is overwritten; the nemesis ends the pause at the moment another client's write is
	// accepted and holds everyone else until the stale write has landed, so the next
	// critical section reads it on every run.)
	unsafe, safe := catalogue.Unsafe(), catalogue.Safe()
	pause := []string{faults.Pause}
	// The runs take a 2 s lease, not the 0.5 s default: under -race beside other tests a
	// client's PostgreSQL round trip took up to 250 ms, so a lease could end between a
	// holder's read and its write with no fault (the machine's own pause), and a fence on
	// writes alone cannot save that update: "updates violated" on fenced runs, in two CI
	// runs of three. The expectation is about the fault's stale write, not the machine's.
	scenarios := []catalogue.Scenario{
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
			Spec:   spec.Spec{Name: "naive-postgres-delay", Backend: "naive", Resource: "postgres", Faults: []string{faults.Delay}},
			About:  "the holder's UPDATE is held in the network until its lease expired and another write was accepted; PostgreSQL rejects it on arrival",
			Expect: catalogue.Safe().Unchecked(models.Mutex),
		},
		{
			Spec:   spec.Spec{Name: "naive-postgres-toctou-pause", Backend: "naive", Resource: "postgres-toctou", Faults: pause},
			About:  "PostgreSQL check-then-write in two autocommitted statements: the stale write gets through and an update is lost",
			Expect: unsafe,
		},
		{
			Spec:   spec.Spec{Name: "naive-postgres-toctou-tx-pause", Backend: "naive", Resource: "postgres-toctou-tx", Faults: pause},
			About:  "check-then-write inside one READ COMMITTED transaction (the default): the UPDATE sees the newer row and overwrites it anyway",
			Expect: unsafe,
		},
		{
			Spec:   spec.Spec{Name: "naive-postgres-toctou-serializable-pause", Backend: "naive", Resource: "postgres-toctou-serializable", Faults: pause},
			About:  "check-then-write inside one SERIALIZABLE transaction: the UPDATE fails with a serialization failure, and the retried check refuses",
			Expect: safe,
		},
		{
			Spec:   spec.Spec{Name: "naive-postgres-toctou-forupdate-pause", Backend: "naive", Resource: "postgres-toctou-forupdate", TTL: sqldb.LockedTTL, Faults: pause},
			About:  "SELECT ... FOR UPDATE holds the row lock through the pause: no stale write, but every writer waits for the paused holder, and the next holder then overwrites its write from an older read (lost update)",
			Expect: sqldb.LockedAtCheck(),
		},
		{
			Spec:   spec.Spec{Name: "naive-postgres-outbox-pause", Backend: "naive", Resource: "postgres-outbox", Faults: pause},
			About:  "fenced UPDATE + outbox INSERT in one PostgreSQL transaction: no side effect of the rejected stale write is ever delivered",
			Expect: safe.With(models.Effects, catalogue.Held),
		},
		{
			Spec:   spec.Spec{Name: "naive-postgres-direct-pause", Backend: "naive", Resource: "postgres-direct", Faults: pause},
			About:  "the client calls the webhook itself, then writes: PostgreSQL rejects the stale write, its side effect has already escaped",
			Expect: safe.With(models.Effects, catalogue.Violated),
		},
	}
	for i := range scenarios {
		if scenarios[i].TTL == 0 {
			scenarios[i].TTL = rowTTL
		}
	}
	return scenarios
}

// rowTTL is the TTL of the PostgreSQL scenarios that set none of their own.
const rowTTL = 2 * time.Second
