package mariadblock

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/lease/sqlsession"
	"github.com/fencecheck/fencecheck/harness/registry"
)

// OptionDSN points the backends at an existing MariaDB instead of a private mariadbd.
const OptionDSN = "mariadb-lock-dsn"

func dsnOption() registry.Option {
	return registry.Option{
		Name: OptionDSN, External: true,
		Usage: "existing MariaDB (user:password@tcp(host:port)/database) for the mariadb-lock backends, instead of a private mariadbd fencecheck starts (client-side faults only)",
	}
}

// entries is what the backends' registry entries share with the other database locks.
func entries() sqlsession.Entries {
	return sqlsession.Entries{Option: OptionDSN, External: externalWords, Available: Available, LogName: "mariadb.log"}
}

const externalWords = "an existing MariaDB (--" + OptionDSN + ")"

// Descriptors returns the registry entries: mariadb-lock (counter token),
// mariadb-lock-connid and mariadb-lock-notoken.
func Descriptors() []registry.Backend {
	d := func(name string, tok TokenKind, meaning, token string) registry.Backend {
		noToken := ""
		if tok == TokenNone {
			noToken = NoTokenReason
		}
		return registry.Backend{
			Name: name, Meaning: meaning, Token: token,
			TTL:     time.Second, // wait_timeout is whole seconds
			Options: []registry.Option{dsnOption()},
			Check: func(s registry.Settings) error {
				if s.Members != 1 {
					return fmt.Errorf("backend %s is a single server: --members must be 1, got %d", name, s.Members)
				}
				if s.TTL < time.Second || s.TTL%time.Second != 0 {
					return fmt.Errorf("%s: --ttl %v will not do: MariaDB's wait_timeout is whole seconds, at least 1s", name, s.TTL)
				}
				return nil
			},
			Caps: func(s registry.Settings) registry.Caps { return entries().Caps(s, noToken) },
			Setup: func(s registry.Settings) string {
				if s.Option(OptionDSN) != "" {
					return "an existing MariaDB, wait_timeout = TTL"
				}
				return "a private mariadbd (Debian mariadb-server) on loopback, wait_timeout = TTL"
			},
			Unavailable: entries().Unavailable,
			Start: func(ctx context.Context, env registry.Env) (harness.Backend, error) {
				return start(ctx, env, name, tok)
			},
		}
	}
	return []registry.Backend{
		d(Name, TokenCounter, "GET_LOCK(name, 0) on a session per grant (wait_timeout = TTL, whole seconds) on a private mariadbd fencecheck starts (or --"+OptionDSN+"); token = an InnoDB counter incremented right after the grant",
			"an InnoDB counter incremented right after the grant"),
		d(Name+"-connid", TokenConnID, "mariadb-lock with token = IS_USED_LOCK's connection id (restarts at 1 with the server)",
			"the holder's connection id (IS_USED_LOCK)"),
		d(Name+"-notoken", TokenNone, "mariadb-lock with no fencing token (GET_LOCK returns 1 or 0)", "no token"),
	}
}

// external is the backend on a server fencecheck did not start.
type external struct{ *Backend }

// External implements harness.External.
func (external) External() string { return externalWords }

func start(ctx context.Context, env registry.Env, name string, tok TokenKind) (harness.Backend, error) {
	b, err := sqlsession.Start(ctx, env, entries(), func(dsn, dir string, log io.Writer) Config {
		return Config{TTL: env.TTL, Token: tok, DSN: dsn, Dir: dir, LogWriter: log, name: name}
	}, Start)
	switch {
	case err != nil:
		return nil, err
	case b.cfg.DSN != "":
		return external{b}, nil
	}
	return b, nil
}
