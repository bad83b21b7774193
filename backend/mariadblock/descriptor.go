package mariadblock

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/backend/sqlsession"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/nemesis/faults"
	"github.com/fencecheck/fencecheck/harness/proc"
	"github.com/fencecheck/fencecheck/harness/registry"
)

// OptionDSN points the backends at an existing MariaDB instead of a private mariadbd.
const OptionDSN = "mariadb-lock-dsn"

func dsnOption() registry.Option {
	return registry.Option{
		Name: OptionDSN, External: true, Secret: true,
		Usage: "existing MariaDB (user:password@tcp(host:port)/database) for the mariadb-lock backends, instead of a private mariadbd fencecheck starts (client-side faults only)",
	}
}

// entries is what the backends' registry entries share with the other database locks.
func entries() sqlsession.Entries {
	return sqlsession.Entries{Option: OptionDSN, External: externalWords, Needs: needs, LogName: "mariadb.log"}
}

const externalWords = "an existing MariaDB (--" + OptionDSN + ")"

// SkewRate is how many times fast the private mariadbd's clock runs in a run with the
// skew fault. Not the registry's 20: a holder pings its session every TTL/3, which at
// rate r is r*TTL/3 by the server's clock, so at 3x or more the server ends every
// session, busy or not. At 2x a healthy session keeps a third of its wait_timeout in
// hand (TTL/6 of real time for a late ping), and a silent one is ended after TTL/2 in
// real time, while its holder, by its own clock, is well inside its TTL.
const SkewRate = 2.0

// skewed says whether settings run the private server's clock fast: only in a run with
// the skew fault (libfaketime can set it only when mariadbd starts), never on an
// existing server.
func skewed(s registry.Settings) bool {
	return slices.Contains(s.Faults, faults.Skew) && s.Option(OptionDSN) == ""
}

func clockRate(s registry.Settings) float64 {
	if skewed(s) {
		return SkewRate
	}
	return 0
}

// shape: the private server's *Backend (tokenless without a token; both FastClocked),
// or the plain wrapper on an existing server.
func shape(s registry.Settings, tok TokenKind) registry.Shape {
	if tok == TokenNone {
		return entries().Shape(s, tokenless{}, true)
	}
	return entries().Shape(s, (*Backend)(nil), false)
}

// needs: a private server's mariadbd, with libfaketime in a skew run.
func needs(s registry.Settings) []proc.Need {
	if skewed(s) {
		return []proc.Need{ServerNeed, proc.Libfaketime}
	}
	return []proc.Need{ServerNeed}
}

// Descriptors returns the registry entries: mariadb-lock (counter token),
// mariadb-lock-connid and mariadb-lock-notoken.
func Descriptors() []registry.Backend {
	d := func(name string, tok TokenKind, meaning, token string) registry.Backend {
		return registry.Backend{
			Name:    name,
			Meaning: meaning,
			Token:   token,
			Options: []registry.Option{dsnOption()},
			Facts: registry.Facts{
				Configuration: "wait_timeout on the lock's sessions, about the TTL in whole seconds, with the client pinging more often (MariaDB's default is 8 hours: a holder cut off by a silent network keeps its lock that long)",
				// Connection ids restart at 1 when the server restarts.
				TokensResetOnCrash: tok == TokenConnID,
				TTL:                time.Second, // wait_timeout is whole seconds
			},
			Lifecycle: registry.Lifecycle{
				Version: func(ctx context.Context, s registry.Settings) string {
					if s.Option(OptionDSN) != "" {
						return ""
					}
					// "/usr/sbin/mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu ..."
					v, _, _ := strings.Cut(proc.Version(ctx, ServerNeed, "--version"), " for ")
					if f := strings.Fields(v); len(f) > 0 {
						f[0] = filepath.Base(f[0])
						v = strings.Join(f, " ")
					}
					return v
				},
				Check: func(s registry.Settings) error {
					if s.TTL < time.Second || s.TTL%time.Second != 0 {
						return fmt.Errorf("%s: --ttl %v will not do: MariaDB's wait_timeout is whole seconds, at least 1s", name, s.TTL)
					}
					return nil
				},
				Shape: func(s registry.Settings) registry.Shape { return shape(s, tok) },
				Setup: func(s registry.Settings) string {
					switch {
					case s.Option(OptionDSN) != "":
						return "an existing MariaDB, wait_timeout = TTL"
					case skewed(s):
						return fmt.Sprintf("a private mariadbd (Debian mariadb-server) on loopback, wait_timeout = TTL, its clock %gx fast (libfaketime)", SkewRate)
					}
					return "a private mariadbd (Debian mariadb-server) on loopback, wait_timeout = TTL"
				},
				Needs: entries().NeedsOf,
				Start: func(ctx context.Context, env registry.Env) (harness.Backend, error) {
					return start(ctx, env, name, tok)
				},
			},
			Listing: registry.Listing{
				Service:     Name,
				Recommended: tok == TokenCounter,
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

var _ registry.FastClocked = (*Backend)(nil)

func start(ctx context.Context, env registry.Env, name string, tok TokenKind) (harness.Backend, error) {
	b, err := sqlsession.Start(ctx, env, entries(), func(dsn, dir string, log io.Writer) Config {
		return Config{TTL: env.TTL, Token: tok, DSN: dsn, Dir: dir, LogWriter: log, ClockRate: clockRate(env.Settings), name: name}
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
