// Package leasetable is the "lease-table" lock backend: the lock job schedulers keep in
// their own database (ShedLock, Quartz's clustered JobStore, db-scheduler). A row per
// lock; a client takes an expired lock with one conditional UPDATE,
//
//	UPDATE fencecheck_locks SET lock_until = <now> + ttl, locked_at = <now>, locked_by = ?, fence = fence + 1
//	WHERE name = ? AND lock_until <= <now>
//
// (inserting the row, taken, when it is missing), renews it with
//
//	UPDATE fencecheck_locks SET lock_until = <now> + ttl WHERE name = ? AND locked_by = ? AND fence = ?
//
// every TTL/3 (backend/renewal: Lost on a refused renewal or a TTL without a
// confirmed one), and releases it by setting lock_until to <now>. The token is the
// fence column of the grant: ShedLock has none; a counter bumped in the granting UPDATE
// gives one, ordered by the row's own history.
//
// <now> is whose clock decides (Clock): the database's now() (DatabaseTime, ShedLock's
// usingDbTime(); the lease-table backend) or each client's own reading, sent with the
// statement (ClientTime, ShedLock's default; lease-table-clienttime). Under client time
// the clock that ends a holder's lease is the clock of whoever takes it next, so the
// skew fault's clock (registry.ServiceClocked) is that client's: the harness owns client
// clocks (registry.Env.ClientClock) and this package adds each client machine's drift on
// top of it. Under database time client clocks change nothing; the database's clock is
// fencecheck's only in SQLite, where now() is a Go function on a clock it owns.
//
// Stores: an embedded SQLite database (the default; no server to install), served to
// the clients over loopback HTTP by a statement server inside fencecheck so that every
// statement crosses the client's fault-proxy link; a private PostgreSQL cluster
// (--lease-table-store postgres, Debian postgresql); or an existing PostgreSQL
// (--lease-table-dsn, client-side faults only). See doc.md.
package leasetable
