package leasetable

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	sqlite "modernc.org/sqlite"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/jsonhttp"
	"github.com/fencecheck/fencecheck/harness/nemesis"
	"github.com/fencecheck/fencecheck/harness/proc"
)

// DBFile is the SQLite database's file name in its directory.
const DBFile = "locks.db"

// sqliteNow is the SQL function the database-time statements read the database's
// clock with: microseconds since the epoch on a clock fencecheck owns (the skew fault's).
const sqliteNow = "fencecheck_now_us()"

// sqliteStore is the lock table in an embedded SQLite database (modernc.org/sqlite, no
// cgo), served to the clients over loopback HTTP by a statement server inside
// fencecheck: each client's statements cross its own fault-proxy link, as a database
// client's do, so a paused holder's renewals stall in the network. The server runs
// every statement on one connection (statements are serialized, as on a one-threaded
// server); the file is in WAL mode with synchronous=FULL, so a grant's fence is on disk
// before its answer leaves. A crash closes the listener, every client connection and
// the database; the file survives it (or is wiped).
type sqliteStore struct {
	path  string
	clock *nemesis.Clock
	drv   *sqlite.Driver
	addr  string

	mu  sync.Mutex
	db  *sql.DB      // nil while crashed
	srv *http.Server // nil while crashed
	// served is closed when the serving goroutine of srv has returned.
	served chan struct{}
}

// connector opens connections of one constructed driver (its function reads this
// store's clock, and no other database's).
type connector struct {
	drv *sqlite.Driver
	dsn string
}

func (c connector) Connect(context.Context) (driver.Conn, error) { return c.drv.Open(c.dsn) }
func (c connector) Driver() driver.Driver                        { return c.drv }

// startSQLite creates the database in dir and starts its statement server on a free
// loopback port. clock is the database's clock (fencecheck_now_us reads it).
func startSQLite(ctx context.Context, dir string, clock *nemesis.Clock) (*sqliteStore, error) {
	drv := &sqlite.Driver{}
	err := drv.RegisterScalarFunction(strings.TrimSuffix(sqliteNow, "()"), 0,
		func(*sqlite.FunctionContext, []driver.Value) (driver.Value, error) {
			return clock.Now().UnixMicro(), nil
		})
	if err != nil {
		return nil, fmt.Errorf("%s: sqlite: %w", Name, err)
	}
	s := &sqliteStore{path: filepath.Join(dir, DBFile), clock: clock, drv: drv}
	if err := s.start(ctx, ""); err != nil {
		return nil, err
	}
	return s, nil
}

// start opens the database and serves it on addr ("": a free port below the ephemeral
// range, so that no outgoing connection can hold the number when a restart binds it again).
func (s *sqliteStore) start(ctx context.Context, addr string) error {
	q := url.Values{}
	for _, p := range []string{"journal_mode(WAL)", "synchronous(FULL)", "busy_timeout(5000)"} {
		q.Add("_pragma", p)
	}
	db := sql.OpenDB(connector{drv: s.drv, dsn: "file:" + s.path + "?" + q.Encode()})
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxIdleTime(0)
	if _, err := db.ExecContext(ctx, schema); err != nil {
		_ = db.Close()
		return fmt.Errorf("%s: sqlite %s: create the lock table: %w", Name, s.path, err)
	}
	var ln net.Listener
	var err error
	if addr == "" {
		ln, err = proc.ListenFree()
	} else {
		ln, err = net.Listen("tcp", addr)
	}
	if err != nil {
		_ = db.Close()
		return fmt.Errorf("%s: sqlite statement server on %s: %w", Name, addr, err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(s.serve(db)), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
	s.mu.Lock()
	s.db, s.srv, s.served, s.addr = db, srv, served, ln.Addr().String()
	s.mu.Unlock()
	return nil
}

// request is one statement sent to the statement server.
type request struct {
	SQL  string `json:"sql"`
	Args []any  `json:"args"`
}

// response lists the fences the statement returned.
type response struct {
	Fences []int64 `json:"fences"`
}

// serve runs one statement per request on db. A statement SQLite refused answers 409
// (busy: 503), which the client reads as "no effect"; any other failure aborts the
// connection, so the client cannot tell whether it took effect (it may have).
func (s *sqliteStore) serve(db *sql.DB) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/run" {
			http.Error(w, "POST /run only", http.StatusNotFound)
			return
		}
		var req request
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
		dec.UseNumber()
		if err := dec.Decode(&req); err != nil {
			http.Error(w, "bad request: "+err.Error(), http.StatusBadRequest)
			return
		}
		args, err := sqliteArgs(req.Args)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fences, err := queryFences(r.Context(), db, req.SQL, args...)
		switch {
		case err == nil:
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(response{Fences: fences})
		case sqliteBusy(err):
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
		case sqliteDefinite(err):
			http.Error(w, err.Error(), http.StatusConflict)
		default:
			panic(http.ErrAbortHandler) // the outcome is unknown: so is the client's
		}
	}
}

// sqliteArgs turns JSON arguments into SQLite values: integers and strings only.
func sqliteArgs(in []any) ([]any, error) {
	out := make([]any, len(in))
	for i, a := range in {
		switch v := a.(type) {
		case json.Number:
			n, err := v.Int64()
			if err != nil {
				return nil, fmt.Errorf("argument %d: %q is not an integer", i+1, v)
			}
			out[i] = n
		case string:
			out[i] = v
		default:
			return nil, fmt.Errorf("argument %d: want an integer or a string, got %T", i+1, a)
		}
	}
	return out, nil
}

// queryFences runs q and collects the first column of every returned row.
func queryFences(ctx context.Context, db *sql.DB, q string, args ...any) ([]int64, error) {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	var out []int64
	for rows.Next() {
		var f int64
		if err := rows.Scan(&f); err != nil {
			_ = rows.Close()
			return nil, err
		}
		out = append(out, f)
	}
	// The statement commits when it is reset: Close reports a failed commit.
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, err
	}
	return out, nil
}

// SQLite primary result codes (the low byte of an extended code).
const (
	sqliteCodeError      = 1
	sqliteCodeBusy       = 5
	sqliteCodeLocked     = 6
	sqliteCodeReadOnly   = 8
	sqliteCodeConstraint = 19
	sqliteCodeMismatch   = 20
	sqliteCodeMisuse     = 21
	sqliteCodeRange      = 25
)

func sqliteCode(err error) (int, bool) {
	var e *sqlite.Error
	if !errors.As(err, &e) {
		return 0, false
	}
	return e.Code() & 0xff, true
}

func sqliteBusy(err error) bool {
	c, ok := sqliteCode(err)
	return ok && (c == sqliteCodeBusy || c == sqliteCodeLocked)
}

// sqliteDefinite: SQLite refused the statement before it changed anything.
func sqliteDefinite(err error) bool {
	c, ok := sqliteCode(err)
	if !ok {
		return false
	}
	switch c {
	case sqliteCodeError, sqliteCodeReadOnly, sqliteCodeConstraint, sqliteCodeMismatch, sqliteCodeMisuse, sqliteCodeRange:
		return true
	}
	return false
}

// sqliteRebind: SQLite numbers parameters ?NNN as PostgreSQL numbers $n.
func sqliteRebind(q string) string { return strings.ReplaceAll(q, "$", "?") }

// Endpoint implements store.
func (s *sqliteStore) Endpoint() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// Statements implements store.
func (s *sqliteStore) Statements(clock Clock) statements {
	return newStatements(clock, sqliteNow, sqliteRebind)
}

// Session implements store: a JSON-over-HTTP client of the statement server at addr
// (one kept-alive connection, like a database session).
func (s *sqliteStore) Session(addr string) session { return sqliteSession{jsonhttp.New(addr)} }

type sqliteSession struct{ c *jsonhttp.Client }

func (c sqliteSession) Run(ctx context.Context, q string, args ...any) ([]int64, error) {
	var resp response
	if err := c.c.Do(ctx, http.MethodPost, "/run", request{SQL: q, Args: args}, &resp); err != nil {
		return nil, err // jsonhttp: refused or answered with an error wraps harness.ErrNoEffect
	}
	return resp.Fences, nil
}

func (c sqliteSession) Close() error { return c.c.Close() }

// Admin implements store: q ($n placeholders) on the database itself.
func (s *sqliteStore) Admin(ctx context.Context, q string, args ...any) ([]string, error) {
	s.mu.Lock()
	db := s.db
	s.mu.Unlock()
	if db == nil {
		return nil, fmt.Errorf("%w: %s: the sqlite statement server is down (crashed)", harness.ErrNoEffect, Name)
	}
	rows, err := db.QueryContext(ctx, sqliteRebind(q), args...)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }()
	var out []string
	for rows.Next() {
		var v any
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		if b, ok := v.([]byte); ok {
			v = string(b)
		}
		out = append(out, fmt.Sprint(v))
	}
	return out, rows.Err()
}

// Crash stops the statement server at once: the listener and every client connection
// close, statements in flight finish or fail, the database is closed. The file stays.
func (s *sqliteStore) Crash() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv == nil {
		return nil
	}
	err := s.srv.Close()
	<-s.served
	err = errors.Join(err, s.db.Close())
	s.srv, s.db = nil, nil
	return err
}

// Restart starts the statement server again on the same address: on the database file
// as the crash left it (keepData), or on a new, empty one.
func (s *sqliteStore) Restart(ctx context.Context, keepData bool) error {
	s.mu.Lock()
	running, addr := s.srv != nil, s.addr
	s.mu.Unlock()
	if running {
		return fmt.Errorf("%s: restart: the sqlite statement server on %s is running", Name, addr)
	}
	if !keepData {
		for _, suffix := range []string{"", "-wal", "-shm"} {
			if err := os.Remove(s.path + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("%s: wipe %s: %w", Name, s.path+suffix, err)
			}
		}
	}
	return s.start(ctx, addr)
}

// Close implements store. Safe to call twice.
func (s *sqliteStore) Close() error { return s.Crash() }
