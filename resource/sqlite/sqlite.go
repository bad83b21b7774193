// Package sqlite is the fenced resource as a row in a real SQLite database
// (modernc.org/sqlite, no cgo): the embedded default among the database resources.
//
// The database file lives in the run's directory, in WAL mode, and every harness client
// opens its own connection to it, as separate processes sharing a database file would.
// The SQL and the client logic are sqldb's; this package supplies the dialect:
//
//	sqlite                   one conditional UPDATE ... WHERE key = ?3 AND token < ?2
//	sqlite-toctou            SELECT token, then UPDATE without the condition, autocommitted
//	sqlite-toctou-tx         the same inside one (deferred, serializable) transaction
//	sqlite-toctou-immediate  the same inside BEGIN IMMEDIATE (the write lock first)
//	sqlite-outbox            fenced UPDATE + INSERT into the outbox, one transaction
//	sqlite-direct            the client calls the side-effect sink, then the fenced UPDATE
//
// SQLite is embedded: there is no network between a client and the database, so it has
// no endpoint and no link for the nemesis to stall. A GC-like pause still stops the
// client's worker at its pause point (for an embedded database, that is all a process
// pause is) and stalls its links to the lock service; a "delay" fault, which holds a
// write in the network, has nothing to hold and is refused for these resources.
//
// Busy: every connection has a short busy_timeout, and an SQLITE_BUSY or SQLITE_LOCKED
// that outlasts it is retried (the whole transaction) until the op's context ends; one
// that never clears is an unknown outcome, never a rejection.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	sqlite "modernc.org/sqlite"

	"github.com/fencecheck/fencecheck/resource/sqldb"
)

// Dialect is SQLite's sqldb dialect.
var Dialect = &sqldb.Dialect{
	Name:     "sqlite",
	SerialPK: "INTEGER PRIMARY KEY AUTOINCREMENT",
	Modes: map[string]sqldb.Mode{
		"":                 sqldb.Fenced,
		"toctou":           sqldb.TOCTOU,
		"toctou-tx":        sqldb.TOCTOUTx,
		"toctou-immediate": sqldb.TOCTOULocked,
		"outbox":           sqldb.Outbox,
		"direct":           sqldb.Direct,
	},
	// SQLite numbers ?NNN parameters like PostgreSQL's $n.
	Rebind:      func(q string) string { return strings.ReplaceAll(q, "$", "?") },
	LockedBegin: true,
	Retryable:   busy,
	NoEffect:    definite,
}

// SQLite primary result codes (the low byte of an extended code).
const (
	codeError      = 1
	codeBusy       = 5
	codeLocked     = 6
	codeReadOnly   = 8
	codeSchema     = 17
	codeConstraint = 19
	codeMismatch   = 20
	codeMisuse     = 21
	codeRange      = 25
)

func code(err error) (int, bool) {
	var e *sqlite.Error
	if !errors.As(err, &e) {
		return 0, false
	}
	return e.Code() & 0xff, true
}

// busy: SQLITE_BUSY (another connection holds the lock, or — SQLITE_BUSY_SNAPSHOT — a
// read transaction's snapshot went stale before it tried to write) or SQLITE_LOCKED.
// The statement did nothing; the transaction is retried.
func busy(err error) bool {
	c, ok := code(err)
	return ok && (c == codeBusy || c == codeLocked)
}

// definite: SQLite refused the statement before it changed anything. Interrupts and
// I/O errors are left ambiguous.
func definite(err error) bool {
	c, ok := code(err)
	if !ok {
		return false
	}
	switch c {
	case codeError, codeBusy, codeLocked, codeReadOnly, codeSchema, codeConstraint, codeMismatch, codeMisuse, codeRange:
		return true
	}
	return false
}

// Names lists the resource names of this package, sorted.
func Names() []string { return Dialect.Names() }

// Mode returns the mode of a sqlite resource name.
func Mode(name string) (sqldb.Mode, bool) { return Dialect.ParseName(name) }

// Config configures a SQLite resource.
type Config struct {
	// Name is the resource name (see Names).
	Name string
	// Fence is "strict" (default) or "monotonic".
	Fence string
	// Dir holds the database file (fencecheck.db); it must exist. The caller removes it.
	Dir string
	// BusyTimeout is each connection's busy_timeout (default 50ms); a longer wait is
	// retried in Go, so that the op's context can end it.
	BusyTimeout time.Duration
}

// DBFile is the database file's name in Config.Dir.
const DBFile = "fencecheck.db"

// New creates the database in cfg.Dir and the resource.
func New(ctx context.Context, cfg Config) (*sqldb.Resource, error) {
	mode, ok := Mode(cfg.Name)
	if !ok {
		return nil, fmt.Errorf("unknown sqlite resource %q (known: %s)", cfg.Name, strings.Join(Names(), ", "))
	}
	if cfg.Dir == "" {
		return nil, errors.New("sqlite: no directory for the database file")
	}
	if cfg.BusyTimeout <= 0 {
		cfg.BusyTimeout = 50 * time.Millisecond
	}
	path := filepath.Join(cfg.Dir, DBFile)
	admin, err := open(path, cfg.BusyTimeout, false, 2)
	if err != nil {
		return nil, err
	}
	// WAL: readers never block the writer, and the mode is kept in the file, so every
	// connection opened later uses it too.
	var jm string
	if err := admin.QueryRowContext(ctx, "PRAGMA journal_mode=WAL").Scan(&jm); err != nil || jm != "wal" {
		_ = admin.Close()
		return nil, fmt.Errorf("sqlite %s: cannot switch to WAL mode (got %q): %v", path, jm, err)
	}
	return sqldb.New(ctx, sqldb.Config{
		Dialect: Dialect, Mode: mode, Fence: cfg.Fence, Key: "register", Admin: admin,
		Describe: "sqlite " + path,
		OpenClient: func(_ context.Context, _ []string, m sqldb.Mode) (*sql.DB, error) {
			// One connection per client, like a process of its own; BEGIN IMMEDIATE for
			// the locked check-then-write mode.
			return open(path, cfg.BusyTimeout, m == sqldb.TOCTOULocked, 1)
		},
	})
}

func open(path string, busyTimeout time.Duration, immediate bool, conns int) (*sql.DB, error) {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	if immediate {
		q.Set("_txlock", "immediate")
	}
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlite %s: %w", path, err)
	}
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	return db, nil
}
