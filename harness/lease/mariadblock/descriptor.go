package mariadblock

import (
	"context"
	"fmt"
	"time"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/registry"
)

// OptionDSN points the backends at an existing PostgreSQL instead of a private cluster.
const OptionDSN = "mariadb-lock-dsn"

func dsnOption() registry.Option {
	return registry.Option{
		Name: OptionDSN, External: true,
		Usage: "existing MariaDB (user:password@tcp(host:port)/database) for the mariadb-lock backends, instead of a private mariadbd fencecheck starts (client-side faults only)",
	}
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
			Caps: func(s registry.Settings) registry.Caps {
				if s.Option(OptionDSN) != "" {
					return registry.Caps{External: externalWords, Crasher: true, ClientExpiry: true, NoToken: noToken}
				}
				return registry.Caps{Crasher: true, ProcessNodes: true, SingleProcess: true, ClientExpiry: true, NoToken: noToken}
			},
			Setup: func(s registry.Settings) string {
				if s.Option(OptionDSN) != "" {
					return "an existing MariaDB, wait_timeout = TTL"
				}
				return "a private mariadbd (Debian mariadb-server) on loopback, wait_timeout = TTL"
			},
			Unavailable: func(s registry.Settings) string {
				if s.Option(OptionDSN) != "" {
					return ""
				}
				if err := Available(); err != nil {
					return err.Error()
				}
				return ""
			},
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
	cfg := Config{TTL: env.TTL, Token: tok, DSN: env.Option(OptionDSN), name: name}
	if cfg.DSN == "" {
		var err error
		if cfg.Dir, err = env.TempDir(); err != nil {
			return nil, err
		}
		if cfg.LogWriter, _, err = env.LogFile("mariadb.log"); err != nil {
			return nil, err
		}
	}
	if err := cfg.Validate(); err != nil {
		return nil, registry.Input(err)
	}
	b, err := Start(ctx, cfg)
	switch {
	case err != nil && cfg.DSN != "":
		return nil, registry.Input(err) // the user's server
	case err != nil:
		return nil, err
	case cfg.DSN != "":
		return external{b}, nil
	}
	return b, nil
}
