package pgadvisory

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/fencecheck/fencecheck/backend/sqlsession"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/proc"
	"github.com/fencecheck/fencecheck/harness/registry"
)

// OptionDSN points the backends at an existing PostgreSQL instead of a private cluster.
const OptionDSN = "postgres-lock-dsn"

func dsnOption() registry.Option {
	return registry.Option{
		Name: OptionDSN, External: true, Secret: true,
		Usage: "existing PostgreSQL (libpq URL naming one TCP host) for the postgres-advisory backends, instead of a private cluster fencecheck starts (client-side faults only)",
	}
}

// OptionIdle sets the lock sessions' idle_session_timeout instead of the TTL.
const OptionIdle = "postgres-idle-session-timeout"

func idleOption() registry.Option {
	return registry.Option{
		Name:  OptionIdle,
		Usage: "idle_session_timeout of the postgres-advisory lock sessions (default: the TTL; a duration, or 0 or off for none, PostgreSQL's default: a holder cut off by a silent network then keeps the lock until the network heals)",
	}
}

// idleTimeout reads OptionIdle: 0 for the TTL (not given), -1 for none.
func idleTimeout(s registry.Settings) (time.Duration, error) {
	v := s.Option(OptionIdle)
	switch v {
	case "":
		return 0, nil
	case "0", "off":
		return -1, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || d%time.Millisecond != 0 {
		return 0, fmt.Errorf("--%s %q will not do: give a duration in whole milliseconds (500ms, 2s), or 0 or off for none", OptionIdle, v)
	}
	if d == 0 {
		return -1, nil
	}
	return d, nil
}

// silentHolder is what frees the lock of a holder gone quiet (TestSilentPartition).
const silentHolder = "idle_session_timeout on the lock's sessions, about the TTL with the client pinging more often (this backend: = TTL, pings every TTL/3; next grant 0.51 s into a silent partition at TTL 500 ms); " +
	"PostgreSQL's default is none, and then the silent holder keeps the lock until the network heals (10 s in the test), TCP keepalive ending it only after hours"

// entries is what the backends' registry entries share with the other database locks.
func entries() sqlsession.Entries {
	return sqlsession.Entries{Option: OptionDSN, External: externalWords, Needs: func(registry.Settings) []proc.Need { return []proc.Need{ServerNeed} }, LogName: "postgres.log"}
}

const externalWords = "an existing PostgreSQL (--" + OptionDSN + ")"

// Descriptors returns the registry entries: postgres-advisory (sequence token),
// postgres-advisory-xact, postgres-advisory-notoken and postgres-advisory-pgbouncer.
func Descriptors() []registry.Backend {
	d := func(name string, tok TokenKind, meaning, token string) registry.Backend {
		return registry.Backend{
			Name:    name,
			Meaning: meaning,
			Token:   token,
			Options: []registry.Option{dsnOption(), idleOption()},
			Facts: registry.Facts{
				SilentHolder:  silentHolder,
				Configuration: "idle_session_timeout on the lock's sessions, about the TTL, with the client pinging more often (PostgreSQL's default is none: a holder cut off by a silent network keeps its lock until the network heals)",
				// A crash loses the commit records the WAL writer had not flushed, and the
				// restarted server hands their transaction ids out again.
				TokensResetOnCrash: tok == TokenXact,
			},
			Lifecycle: registry.Lifecycle{
				Version: version,
				Check: func(s registry.Settings) error {
					if s.TTL < 100*time.Millisecond || s.TTL%time.Millisecond != 0 {
						return fmt.Errorf("%s: --ttl %v will not do: idle_session_timeout is whole milliseconds, and below 100ms a loaded machine ends healthy sessions", name, s.TTL)
					}
					_, err := idleTimeout(s)
					return err
				},
				Shape: func(s registry.Settings) registry.Shape { return shape(s, tok) },
				Setup: func(s registry.Settings) string {
					idle := "idle_session_timeout = TTL"
					switch d, _ := idleTimeout(s); {
					case d < 0:
						idle = "no idle_session_timeout (PostgreSQL's default)"
					case d > 0:
						idle = "idle_session_timeout = " + d.String()
					}
					if s.Option(OptionDSN) != "" {
						return "an existing PostgreSQL, " + idle
					}
					return "a private PostgreSQL cluster (Debian postgresql, initdb) on loopback, " + idle
				},
				Needs: entries().NeedsOf,
				Start: func(ctx context.Context, env registry.Env) (harness.Backend, error) {
					return start(ctx, env, name, tok)
				},
			},
			Listing: registry.Listing{
				Service:     Name,
				Recommended: tok == TokenSequence,
			},
		}
	}
	return []registry.Backend{
		d(Name, TokenSequence, "pg_try_advisory_lock on a session per grant (idle_session_timeout = TTL) on a private PostgreSQL fencecheck starts (or --"+OptionDSN+"); token = nextval of a sequence in the granting statement",
			"nextval of a sequence in the granting statement"),
		d(Name+"-xact", TokenXact, "postgres-advisory with token = pg_current_xact_id() of the granting statement",
			"pg_current_xact_id() of the granting statement"),
		d(Name+"-notoken", TokenNone, "postgres-advisory with no fencing token (the lock is a boolean)", "no token"),
		bouncerDescriptor(),
	}
}

// BouncerName is the backend behind PgBouncer's transaction pooling.
const BouncerName = Name + "-pgbouncer"

func bouncerDescriptor() registry.Backend {
	return registry.Backend{
		Name: BouncerName,
		Meaning: fmt.Sprintf("postgres-advisory with the clients behind a PgBouncer fencecheck starts in pool_mode = transaction (%d server connection): "+
			"the session lock is taken on a pooled server connection every client shares; token = nextval", BouncerPoolSize),
		Token: "nextval of a sequence in the granting statement",
		Facts: registry.Facts{
			SilentHolder: "the pooled server session idles only when every client is silent (idle_session_timeout set on PgBouncer's server connections); a silent holder's lock stays while any other client talks",
			Pool:         fmt.Sprintf("PgBouncer in pool_mode = transaction with %d server connection", BouncerPoolSize),
		},
		Lifecycle: registry.Lifecycle{
			Version: version,
			Check: func(s registry.Settings) error {
				if s.TTL < 100*time.Millisecond || s.TTL%time.Millisecond != 0 {
					return fmt.Errorf("%s: --ttl %v will not do: idle_session_timeout is whole milliseconds, and below 100ms a loaded machine ends healthy sessions", BouncerName, s.TTL)
				}
				return nil
			},
			Shape: func(s registry.Settings) registry.Shape { return shape(s, TokenSequence) },
			Setup: func(registry.Settings) string {
				return fmt.Sprintf("a private PostgreSQL cluster (Debian postgresql, initdb) behind a PgBouncer (Debian pgbouncer, pool_mode = transaction, pool_size = %d) on loopback; the pooled server connections get idle_session_timeout = TTL", BouncerPoolSize)
			},
			Needs: func(registry.Settings) []proc.Need { return []proc.Need{ServerNeed, BouncerNeed} },
			Start: func(ctx context.Context, env registry.Env) (harness.Backend, error) {
				if err := BouncerAvailable(); err != nil {
					return nil, registry.Input(err) // a package to install: one line, exit 2
				}
				dir, err := env.TempDir()
				if err != nil {
					return nil, err
				}
				log, _, err := env.LogFile("postgres.log")
				if err != nil {
					return nil, err
				}
				cfg := Config{TTL: env.TTL, Token: TokenSequence, Dir: dir, LogWriter: log, Bouncer: true, name: BouncerName}
				if err := cfg.Validate(); err != nil {
					return nil, registry.Input(err)
				}
				return Start(ctx, cfg)
			},
		},
		Listing: registry.Listing{
			Service: Name,
		},
	}
}

// shape: the private server's *Backend (tokenless without a token), or the plain
// wrapper on an existing server.
func shape(s registry.Settings, tok TokenKind) registry.Shape {
	if tok == TokenNone {
		return entries().Shape(s, tokenless{}, true)
	}
	return entries().Shape(s, (*Backend)(nil), false)
}

func start(ctx context.Context, env registry.Env, name string, tok TokenKind) (harness.Backend, error) {
	idle, err := idleTimeout(env.Settings)
	if err != nil {
		return nil, registry.Input(err)
	}
	b, err := sqlsession.Start(ctx, env, entries(), func(dsn, dir string, log io.Writer) Config {
		return Config{TTL: env.TTL, Token: tok, DSN: dsn, Dir: dir, LogWriter: log, IdleSessionTimeout: idle, name: name}
	}, Start)
	noToken := ""
	if tok == TokenNone {
		noToken = NoTokenReason
	}
	switch {
	case err != nil:
		return nil, err
	case b.cfg.DSN != "":
		return entries().Wrap(b, noToken), nil
	case noToken != "":
		return tokenless{b}, nil
	}
	return b, nil
}

// version is the private server's (postgres --version); "" for an existing one.
func version(ctx context.Context, s registry.Settings) string {
	if s.Option(OptionDSN) != "" {
		return ""
	}
	return proc.Version(ctx, ServerNeed, "--version")
}
