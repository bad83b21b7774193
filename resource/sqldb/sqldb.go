// Package sqldb is the protected resource as a row in a real SQL database — the seed's
// own example, `UPDATE ... SET value = ?, token = 42 WHERE token < 42` — shared by the
// SQLite (resource/sqlite) and PostgreSQL (resource/postgres)
// resources. The client code and the SQL are the same for both databases; a Dialect
// supplies the placeholders, the schema's one difference and how errors are classified.
//
// One run uses one row of fencecheck_register, keyed by a run key, starting at
// (value "", token 0). The modes are how a client protects its write:
//
//   - Fenced: one conditional UPDATE (SQLFencedStrict / SQLFencedMonotonic); the rows
//     affected decide accepted (1) or rejected (0).
//   - TOCTOU: SELECT token, compare in the client, then an UPDATE without the token
//     condition, as two autocommitted statements.
//   - TOCTOUTx: the same two statements inside one transaction at the database's
//     default isolation level (PostgreSQL: READ COMMITTED; SQLite: a deferred
//     transaction, which is serializable).
//   - TOCTOUSerializable: one SERIALIZABLE transaction (PostgreSQL).
//   - TOCTOULocked: one transaction that locks the row before the check (PostgreSQL:
//     SELECT ... FOR UPDATE; SQLite: BEGIN IMMEDIATE, which takes the write lock).
//   - Outbox: the fenced UPDATE and an INSERT into fencecheck_outbox in one
//     transaction; a relay delivers committed outbox rows to the side-effect sink.
//   - Direct: the client posts the side effect to the sink itself, then makes the
//     fenced UPDATE.
//
// Errors are classified for the history: a lock conflict or serialization failure is
// retried (the whole transaction, check included) until the op's context ends, and a
// run of them that never clears is reported as unknown, never as a rejection; a
// definite answer from the database before anything could have committed is "no
// effect" (fail); anything else after the writing statement (or COMMIT) was sent is
// unknown.
package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/harness/jsonhttp"
	"github.com/fencecheck/fencecheck/resource/outbox"
)

// Table names. Both tables are created if missing; a run touches only its own key's rows.
const (
	RegisterTable = "fencecheck_register"
	OutboxTable   = "fencecheck_outbox"
)

// The statements, with PostgreSQL's $n placeholders (SQLite runs them with ?n, the same
// numbering). The README quotes them.
const (
	// SQLFencedStrict is the fenced write: accept iff token > stored, in one statement.
	// Arguments: value, token, key.
	SQLFencedStrict = `UPDATE fencecheck_register SET value = $1, token = $2 WHERE key = $3 AND token < $2`
	// SQLFencedMonotonic accepts iff token >= stored.
	SQLFencedMonotonic = `UPDATE fencecheck_register SET value = $1, token = $2 WHERE key = $3 AND token <= $2`
	// SQLRead reads the register. Argument: key.
	SQLRead = `SELECT value, token FROM fencecheck_register WHERE key = $1`
	// SQLCheck is the check of the check-then-write variants. Argument: key.
	SQLCheck = `SELECT token FROM fencecheck_register WHERE key = $1`
	// SQLCheckForUpdate is the check that locks the row (PostgreSQL).
	SQLCheckForUpdate = `SELECT token FROM fencecheck_register WHERE key = $1 FOR UPDATE`
	// SQLWriteUnconditional is the write of the check-then-write variants: no token
	// condition. Arguments: value, token, key.
	SQLWriteUnconditional = `UPDATE fencecheck_register SET value = $1, token = $2 WHERE key = $3`
	// SQLInsertOutbox records the side effect in the same transaction as the fenced
	// write. Arguments: key, value, token.
	SQLInsertOutbox = `INSERT INTO fencecheck_outbox (key, value, token) VALUES ($1, $2, $3)`
	// SQLPending is the relay's query. Arguments: key, limit.
	SQLPending = `SELECT id, value, token FROM fencecheck_outbox WHERE key = $1 AND NOT delivered ORDER BY id LIMIT $2`
	// SQLMarkDelivered marks one outbox row delivered. Argument: id.
	SQLMarkDelivered = `UPDATE fencecheck_outbox SET delivered = TRUE WHERE id = $1`
	// SQLInit creates the run's row. Argument: key.
	SQLInit = `INSERT INTO fencecheck_register (key, value, token) VALUES ($1, '', 0)`
	// SQLDeleteRegister and SQLDeleteOutbox remove the run's rows. Argument: key.
	SQLDeleteRegister = `DELETE FROM fencecheck_register WHERE key = $1`
	SQLDeleteOutbox   = `DELETE FROM fencecheck_outbox WHERE key = $1`
)

// Schema returns the CREATE statements, with serialPK the dialect's auto-increment
// primary key column type.
func Schema(serialPK string) []string {
	return []string{
		`CREATE TABLE IF NOT EXISTS fencecheck_register (
	key   TEXT   PRIMARY KEY,
	value TEXT   NOT NULL,
	token BIGINT NOT NULL
)`,
		`CREATE TABLE IF NOT EXISTS fencecheck_outbox (
	id        ` + serialPK + `,
	key       TEXT    NOT NULL,
	value     TEXT    NOT NULL,
	token     BIGINT  NOT NULL,
	delivered BOOLEAN NOT NULL DEFAULT FALSE
)`,
		`CREATE INDEX IF NOT EXISTS fencecheck_outbox_pending ON fencecheck_outbox (key, id) WHERE NOT delivered`,
	}
}

// Mode is how a client protects its write.
type Mode string

// Modes. The resource name is the dialect's name, then "-" and the mode's name for that
// dialect (Dialect.Modes), e.g. "postgres-toctou-forupdate"; Fenced is the bare name.
const (
	Fenced             Mode = "fenced"
	TOCTOU             Mode = "toctou"
	TOCTOUTx           Mode = "toctou-tx"
	TOCTOUSerializable Mode = "toctou-serializable"
	TOCTOULocked       Mode = "toctou-locked"
	Outbox             Mode = "outbox"
	Direct             Mode = "direct"
)

// ChecksThenWrites reports whether clients of the mode check the token in one statement
// and write in another, pausing (harness.PauseAfterCheck) in between.
func (m Mode) ChecksThenWrites() bool {
	switch m {
	case TOCTOU, TOCTOUTx, TOCTOUSerializable, TOCTOULocked:
		return true
	}
	return false
}

// HasEffects reports whether the mode sends side effects to a sink.
func (m Mode) HasEffects() bool { return m == Outbox || m == Direct }

// Dialect is what differs between databases.
type Dialect struct {
	// Name is the database's resource name ("sqlite", "postgres").
	Name string
	// SerialPK is the column type of an auto-increment primary key.
	SerialPK string
	// Modes maps resource-name suffixes to modes ("" is Fenced).
	Modes map[string]Mode
	// Rebind turns a $n statement into the dialect's placeholders (nil: as is).
	Rebind func(string) string
	// LockedBegin: the TOCTOULocked transaction takes its lock at BEGIN (the client's
	// connection is opened so, e.g. SQLite's BEGIN IMMEDIATE); otherwise its check is
	// SQLCheckForUpdate.
	LockedBegin bool
	// SetupFirst runs first in the setup transaction (e.g. an advisory lock, so
	// concurrent runs do not race on CREATE TABLE).
	SetupFirst []string
	// Retryable reports a conflict that undid the attempt (busy, locked, serialization
	// failure, deadlock): try the transaction again.
	Retryable func(error) bool
	// NoEffect reports a definite error answer from the database: the statement (and
	// its transaction) had no effect.
	NoEffect func(error) bool
}

// ResourceName is the name users type for a mode of the dialect.
func (d *Dialect) ResourceName(m Mode) string {
	for suffix, mm := range d.Modes {
		if mm == m {
			if suffix == "" {
				return d.Name
			}
			return d.Name + "-" + suffix
		}
	}
	return d.Name + "-" + string(m)
}

// Names lists the dialect's resource names, sorted.
func (d *Dialect) Names() []string {
	var out []string
	for suffix := range d.Modes {
		if suffix == "" {
			out = append(out, d.Name)
		} else {
			out = append(out, d.Name+"-"+suffix)
		}
	}
	sort.Strings(out)
	return out
}

// ParseName returns the mode of a resource name of this dialect.
func (d *Dialect) ParseName(name string) (Mode, bool) {
	if name == d.Name {
		m, ok := d.Modes[""]
		return m, ok
	}
	suffix, ok := strings.CutPrefix(name, d.Name+"-")
	if !ok {
		return "", false
	}
	m, ok := d.Modes[suffix]
	return m, ok
}

func (d *Dialect) sql(q string) string {
	if d.Rebind == nil {
		return q
	}
	return d.Rebind(q)
}

// Config configures a Resource.
type Config struct {
	Dialect *Dialect
	Mode    Mode
	// Fence is history.FenceStrict (default) or history.FenceMonotonic.
	Fence string
	// Key is this run's row.
	Key string
	// Admin is the resource's own connection: setup, the relay, inspection, cleanup.
	// The resource closes it.
	Admin *sql.DB
	// DBEndpoints are the database's network addresses (none for an embedded one).
	DBEndpoints []string
	// OpenClient opens one client's connection; addrs are the proxied DBEndpoints.
	OpenClient func(ctx context.Context, addrs []string, mode Mode) (*sql.DB, error)
	// DeleteRows removes the run's rows at Close (a shared database); an embedded one
	// is removed with its directory instead.
	DeleteRows bool
	// Describe names the database in messages, e.g. "PostgreSQL at 127.0.0.1:5432".
	Describe string
}

// Resource is a fenced row in a SQL database, with the client behaviour of one Mode.
type Resource struct {
	cfg   Config
	name  string
	sink  *outbox.Sink
	relay *outbox.Relay
	// conflicts counts attempts undone by a conflict (busy, serialization failure).
	conflicts atomic.Int64

	closeOnce sync.Once
	closeErr  error
}

// New creates the tables (if missing) and the run's row, and for the side-effect modes
// starts the sink (and the outbox relay). On error the admin connection is closed.
func New(ctx context.Context, cfg Config) (_ *Resource, err error) {
	defer func() {
		if err != nil {
			_ = cfg.Admin.Close()
		}
	}()
	d := cfg.Dialect
	if cfg.Fence == "" {
		cfg.Fence = history.FenceStrict
	}
	if cfg.Fence != history.FenceStrict && cfg.Fence != history.FenceMonotonic {
		return nil, fmt.Errorf("unknown fence %q (want strict or monotonic)", cfg.Fence)
	}
	if cfg.Mode == TOCTOUSerializable && d.Name != "postgres" {
		// SQLite's transactions are serializable already: that is TOCTOUTx.
		return nil, fmt.Errorf("%s: mode %s is for PostgreSQL", d.Name, cfg.Mode)
	}
	r := &Resource{cfg: cfg, name: d.ResourceName(cfg.Mode)}
	if err := r.setup(ctx); err != nil {
		return nil, err
	}
	if cfg.Mode.HasEffects() {
		if r.sink, err = outbox.StartSink(); err != nil {
			return nil, err
		}
		if cfg.Mode == Outbox {
			r.relay = outbox.StartRelay(source{r}, r.sink.Addr(), 10*time.Millisecond)
		}
	}
	return r, nil
}

func (r *Resource) setup(ctx context.Context) error {
	d := r.cfg.Dialect
	tx, err := r.cfg.Admin.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("%s: begin setup: %w", r.cfg.Describe, err)
	}
	defer func() { _ = tx.Rollback() }()
	stmts := append(append([]string(nil), d.SetupFirst...), Schema(d.SerialPK)...)
	for _, s := range stmts {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%s: create the tables: %w (statement: %s)", r.cfg.Describe, err, oneLine(s))
		}
	}
	if _, err := tx.ExecContext(ctx, d.sql(SQLInit), r.cfg.Key); err != nil {
		return fmt.Errorf("%s: create the run's row in %s: %w", r.cfg.Describe, RegisterTable, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("%s: commit setup: %w", r.cfg.Describe, err)
	}
	return nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Name implements harness.Resource.
func (r *Resource) Name() string { return r.name }

// Fence implements harness.Resource.
func (r *Resource) Fence() string { return r.cfg.Fence }

// Mode is the resource's mode.
func (r *Resource) Mode() Mode { return r.cfg.Mode }

// Key is the run's row key.
func (r *Resource) Key() string { return r.cfg.Key }

// Endpoints implements harness.Resource: the database's addresses, then the sink's for
// the direct mode (its clients call the sink, so their calls go through their links).
func (r *Resource) Endpoints() []string {
	eps := append([]string(nil), r.cfg.DBEndpoints...)
	if r.cfg.Mode == Direct {
		eps = append(eps, r.sink.Addr())
	}
	return eps
}

// Conflicts is how many write attempts a conflict undid (SQLite busy, a PostgreSQL
// serialization failure or deadlock); each was retried.
func (r *Resource) Conflicts() int64 { return r.conflicts.Load() }

// Sink is the side-effect sink (nil unless the mode has side effects).
func (r *Resource) Sink() *outbox.Sink { return r.sink }

// Relay is the outbox relay (nil unless the mode is Outbox).
func (r *Resource) Relay() *outbox.Relay { return r.relay }

// RecordEffects makes every side effect the sink receives from now on an effect in rec's
// history, on rec's clock. The runner calls it before the clients start.
func (r *Resource) RecordEffects(rec *history.Recorder) {
	if r.sink == nil {
		return
	}
	r.sink.OnDeliver(func(d outbox.Delivery) { rec.Effect(d.Value, d.Token, d.Via) })
}

// State reads the run's row through the admin connection.
func (r *Resource) State(ctx context.Context) (value string, token int64, err error) {
	err = r.cfg.Admin.QueryRowContext(ctx, r.cfg.Dialect.sql(SQLRead), r.cfg.Key).Scan(&value, &token)
	return value, token, err
}

// Close stops the relay and the sink, removes the run's rows if configured, and closes
// the admin connection. Safe to call twice.
func (r *Resource) Close() error {
	r.closeOnce.Do(func() {
		var errs []error
		if r.relay != nil {
			errs = append(errs, r.relay.Close())
		}
		if r.sink != nil {
			errs = append(errs, r.sink.Close())
		}
		if r.cfg.DeleteRows {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			for _, q := range []string{SQLDeleteOutbox, SQLDeleteRegister} {
				if _, err := r.cfg.Admin.ExecContext(ctx, r.cfg.Dialect.sql(q), r.cfg.Key); err != nil {
					errs = append(errs, fmt.Errorf("%s: remove the run's rows: %w", r.cfg.Describe, err))
					break
				}
			}
			cancel()
		}
		errs = append(errs, r.cfg.Admin.Close())
		r.closeErr = errors.Join(errs...)
	})
	return r.closeErr
}

// NewClient implements harness.Resource. addrs are the proxied Endpoints.
func (r *Resource) NewClient(ctx context.Context, _ int, addrs []string, gate harness.Gate) (harness.ResourceClient, error) {
	want := len(r.Endpoints())
	if len(addrs) != want {
		return nil, fmt.Errorf("%s: want %d address(es), got %d", r.name, want, len(addrs))
	}
	n := len(r.cfg.DBEndpoints)
	db, err := r.cfg.OpenClient(ctx, addrs[:n], r.cfg.Mode)
	if err != nil {
		return nil, err
	}
	c := &client{r: r, d: r.cfg.Dialect, db: db, gate: gate}
	if r.cfg.Mode == Direct {
		c.sink = jsonhttp.New(addrs[n])
	}
	return c, nil
}

type client struct {
	r    *Resource
	d    *Dialect
	db   *sql.DB
	gate harness.Gate
	sink *jsonhttp.Client

	closeOnce sync.Once
}

// Read implements harness.ResourceClient.
func (c *client) Read(ctx context.Context) (string, int64, error) {
	for attempt := 1; ; attempt++ {
		var v string
		var t int64
		err := c.db.QueryRowContext(ctx, c.d.sql(SQLRead), c.r.cfg.Key).Scan(&v, &t)
		if err == nil {
			return v, t, nil
		}
		if !c.d.Retryable(err) || !sleep(ctx, backoff(attempt)) {
			return "", 0, err
		}
	}
}

// Write implements harness.ResourceClient.
func (c *client) Write(ctx context.Context, lease harness.Lease, value string) (bool, error) {
	token := lease.Token()
	if c.r.cfg.Mode == Direct {
		// The side effect first, as a client that "notifies, then saves" does: if the
		// save is refused by the fence, the notification is already out.
		d := outbox.Delivery{Value: value, Token: token, Via: history.ViaDirect}
		if err := c.sink.Do(ctx, "POST", "/effects", d, nil); err != nil {
			return false, fmt.Errorf("%w: side effect call failed, the database write was not attempted: %v", harness.ErrNoEffect, err)
		}
	}
	var conflicts int
	var lastConflict error
	for {
		accepted, sent, err := c.attempt(ctx, token, value)
		switch {
		case err == nil:
			if accepted && c.r.relay != nil {
				c.r.relay.Kick()
			}
			return accepted, nil
		case c.d.Retryable(err):
			conflicts++
			c.r.conflicts.Add(1)
			lastConflict = err
			if sleep(ctx, backoff(conflicts)) {
				continue
			}
			// Never a silent rejection: a conflict that did not clear is unknown.
			return false, fmt.Errorf("gave up after %d conflicting attempts (%v): %w", conflicts, ctx.Err(), lastConflict)
		case !sent || c.d.NoEffect(err):
			return false, fmt.Errorf("%w: %v", harness.ErrNoEffect, err)
		default:
			return false, err
		}
	}
}

// attempt makes one try. sent says whether the statement that makes the write durable
// (the autocommitted UPDATE, or COMMIT) was sent: before that, any error means no effect.
func (c *client) attempt(ctx context.Context, token int64, value string) (accepted, sent bool, err error) {
	cfg := c.r.cfg
	fenced := SQLFencedStrict
	if cfg.Fence == history.FenceMonotonic {
		fenced = SQLFencedMonotonic
	}
	switch cfg.Mode {
	case Fenced, Direct:
		res, err := c.db.ExecContext(ctx, c.d.sql(fenced), value, token, cfg.Key)
		if err != nil {
			return false, true, err
		}
		return rowsAccepted(res)
	case TOCTOU:
		var stored int64
		if err := c.db.QueryRowContext(ctx, c.d.sql(SQLCheck), cfg.Key).Scan(&stored); err != nil {
			return false, false, fmt.Errorf("check: %w", err)
		}
		if !history.Passes(cfg.Fence, token, stored) {
			return false, false, nil
		}
		c.pauseAfterCheck(ctx)
		res, err := c.db.ExecContext(ctx, c.d.sql(SQLWriteUnconditional), value, token, cfg.Key)
		if err != nil {
			return false, true, err
		}
		return rowWritten(res)
	}

	// The transactional modes.
	opts := &sql.TxOptions{}
	if cfg.Mode == TOCTOUSerializable {
		opts.Isolation = sql.LevelSerializable
	}
	tx, err := c.db.BeginTx(ctx, opts)
	if err != nil {
		return false, false, fmt.Errorf("begin: %w", err)
	}
	defer func() {
		if !sent {
			_ = tx.Rollback()
		}
	}()
	switch cfg.Mode {
	case Outbox:
		res, err := tx.ExecContext(ctx, c.d.sql(fenced), value, token, cfg.Key)
		if err != nil {
			return false, false, err
		}
		ok, _, err := rowsAccepted(res)
		if err != nil || !ok {
			return false, false, err
		}
		if _, err := tx.ExecContext(ctx, c.d.sql(SQLInsertOutbox), cfg.Key, value, token); err != nil {
			return false, false, fmt.Errorf("insert outbox row: %w", err)
		}
	default: // the check-then-write transactions
		check := SQLCheck
		if cfg.Mode == TOCTOULocked && !c.d.LockedBegin {
			check = SQLCheckForUpdate
		}
		var stored int64
		if err := tx.QueryRowContext(ctx, c.d.sql(check), cfg.Key).Scan(&stored); err != nil {
			return false, false, fmt.Errorf("check: %w", err)
		}
		if !history.Passes(cfg.Fence, token, stored) {
			return false, false, nil
		}
		c.pauseAfterCheck(ctx)
		res, err := tx.ExecContext(ctx, c.d.sql(SQLWriteUnconditional), value, token, cfg.Key)
		if err != nil {
			return false, false, err
		}
		if _, _, err := rowWritten(res); err != nil {
			return false, false, err
		}
	}
	sent = true
	if err := tx.Commit(); err != nil {
		return false, true, fmt.Errorf("commit: %w", err)
	}
	return true, true, nil
}

func (c *client) pauseAfterCheck(ctx context.Context) {
	if c.gate != nil {
		c.gate.Pause(ctx, harness.PauseAfterCheck)
	}
}

// rowsAccepted turns an UPDATE's rows affected into accepted (1) or rejected (0).
func rowsAccepted(res sql.Result) (accepted, sent bool, err error) {
	n, err := res.RowsAffected()
	if err != nil {
		return false, true, fmt.Errorf("rows affected: %w", err)
	}
	switch n {
	case 0:
		return false, true, nil
	case 1:
		return true, true, nil
	}
	return false, true, fmt.Errorf("the UPDATE affected %d rows, want 0 or 1 (is key not the primary key?)", n)
}

// rowWritten checks that an unconditional UPDATE wrote the row: it cannot be refused, so
// 0 rows means the run's row is gone — an error, never a rejection.
func rowWritten(res sql.Result) (accepted, sent bool, err error) {
	ok, sent, err := rowsAccepted(res)
	if err == nil && !ok {
		err = errors.New("the unconditional UPDATE matched no row: the run's row is missing")
	}
	return ok, sent, err
}

// Close implements harness.ResourceClient. Safe to call twice.
func (c *client) Close() error {
	var err error
	c.closeOnce.Do(func() {
		if c.sink != nil {
			_ = c.sink.Close()
		}
		err = c.db.Close()
	})
	return err
}

// backoff is the pause before the n-th retry of a conflict: 2ms doubling, at most 50ms.
func backoff(n int) time.Duration {
	return min(2*time.Millisecond<<min(n-1, 5), 50*time.Millisecond)
}

// sleep waits d and reports true, or reports false at once when ctx ends.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// source is the outbox table as the relay sees it, through the admin connection.
type source struct{ r *Resource }

func (s source) Pending(ctx context.Context, limit int) ([]outbox.Row, error) {
	d := s.r.cfg.Dialect
	rows, err := s.r.cfg.Admin.QueryContext(ctx, d.sql(SQLPending), s.r.cfg.Key, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []outbox.Row
	for rows.Next() {
		var row outbox.Row
		if err := rows.Scan(&row.ID, &row.Value, &row.Token); err != nil {
			return nil, err
		}
		out = append(out, row)
	}
	return out, rows.Err()
}

func (s source) MarkDelivered(ctx context.Context, id int64) error {
	d := s.r.cfg.Dialect
	for attempt := 1; ; attempt++ {
		_, err := s.r.cfg.Admin.ExecContext(ctx, d.sql(SQLMarkDelivered), id)
		if err == nil || !d.Retryable(err) || !sleep(ctx, backoff(attempt)) {
			return err // a row not marked is delivered again: at least once
		}
	}
}
