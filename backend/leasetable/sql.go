package leasetable

import (
	"context"
	"fmt"
	"strings"
)

// Table is the lock table: one row per lock, ShedLock's columns plus the fence.
// Times are microseconds since the Unix epoch in a BIGINT, so that one schema serves
// both stores and both clocks (ShedLock keeps TIMESTAMP columns; the comparison is
// the same).
const Table = "fencecheck_locks"

const schema = "CREATE TABLE IF NOT EXISTS " + Table + ` (
	name       VARCHAR(255) PRIMARY KEY,
	lock_until BIGINT       NOT NULL,
	locked_at  BIGINT       NOT NULL,
	locked_by  VARCHAR(255) NOT NULL,
	fence      BIGINT       NOT NULL
)`

// Clock says whose clock decides expiry.
type Clock string

const (
	// DatabaseTime: the database's own now() decides (ShedLock's usingDbTime()).
	DatabaseTime Clock = "database"
	// ClientTime: each client sends its own clock's reading, and the statement compares
	// and stores that (ShedLock's default).
	ClientTime Clock = "client"
)

// statements are the four statements of the pattern for one store and one clock.
// Arguments: $1 name, $2 locked_by, then ttl (µs), then fence, and last, with
// ClientTime, the client's now (µs). Every statement returns the fence of the rows it
// changed, so "no row" means "not granted / not yours any more".
type statements struct {
	// acquire takes an expired lock and bumps the fence: (name, by, ttl[, now]).
	acquire string
	// insert creates the row, taken, when it is missing: (name, by, ttl[, now]).
	insert string
	// renew extends this grant's row: (name, by, ttl, fence[, now]).
	renew string
	// release ends this grant's row now: (name, by, fence[, now]).
	release string
}

// newStatements writes the statements with dbNow as the database's clock expression
// (DatabaseTime) or a bound client reading (ClientTime); rebind turns $n placeholders
// into the store's.
func newStatements(clock Clock, dbNow string, rebind func(string) string) statements {
	now := func(args int) string {
		if clock == ClientTime {
			return fmt.Sprintf("CAST($%d AS BIGINT)", args+1)
		}
		return dbNow
	}
	const ttl, fence = "CAST($3 AS BIGINT)", "$4"
	q := func(s string, args int) string { return rebind(strings.ReplaceAll(s, "{now}", now(args))) }
	return statements{
		acquire: q("UPDATE "+Table+" SET lock_until = {now} + "+ttl+", locked_at = {now}, locked_by = $2, fence = fence + 1"+
			" WHERE name = $1 AND lock_until <= {now} RETURNING fence", 3),
		insert: q("INSERT INTO "+Table+" (name, lock_until, locked_at, locked_by, fence) VALUES ($1, {now} + "+ttl+", {now}, $2, 1)"+
			" ON CONFLICT (name) DO NOTHING RETURNING fence", 3),
		renew: q("UPDATE "+Table+" SET lock_until = {now} + "+ttl+
			" WHERE name = $1 AND locked_by = $2 AND fence = "+fence+" RETURNING fence", 4),
		release: q("UPDATE "+Table+" SET lock_until = {now}"+
			" WHERE name = $1 AND locked_by = $2 AND fence = $3 RETURNING fence", 3),
	}
}

// store is where the lock table lives: an embedded SQLite database served over
// loopback, or a PostgreSQL server.
type store interface {
	// Endpoint is the address clients reach the table at (through their proxies).
	Endpoint() string
	// Session opens a client's session to the table at addr (its proxied endpoint).
	Session(addr string) session
	// Statements are the store's statements for clock.
	Statements(clock Clock) statements
	// Admin runs one statement directly (not through any proxy): setup, cleanup, and
	// the harness's own look at the table.
	Admin(ctx context.Context, q string, args ...any) ([]string, error)
	Close() error
}

// session is one client's connection to the table.
type session interface {
	// Run runs one statement and returns the fences it returned. An error wraps
	// harness.ErrNoEffect when the statement certainly did nothing.
	Run(ctx context.Context, q string, args ...any) ([]int64, error)
	Close() error
}
