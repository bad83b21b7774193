package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/resource/sqldb"
)

// OptionDSN is the option (flag) naming the server.
const OptionDSN = "postgres-dsn"

// Descriptors returns the registry entries of the PostgreSQL resources.
func Descriptors() []registry.Resource {
	opt := registry.Option{
		Name: OptionDSN, Env: EnvDSN, Secret: true,
		Usage: "PostgreSQL server of the postgres resources, e.g. postgres://user:pass@127.0.0.1:5432/db (default $" + EnvDSN + ")",
	}
	entry := func(name, meaning string) registry.Resource {
		mode, _ := Mode(name)
		return registry.Resource{
			Name: name, Meaning: meaning, NeedsToken: true, Options: []registry.Option{opt},
			Unfenced: mode == sqldb.TOCTOU, ChecksThenWrites: mode.ChecksThenWrites(),
			Unavailable: func(s registry.Settings) string {
				if strings.TrimSpace(s.Option(OptionDSN)) == "" {
					return "no PostgreSQL server configured (--" + OptionDSN + " of fencecheck run, or $" + EnvDSN + ")"
				}
				return ""
			},
			Start: func(ctx context.Context, env registry.ResourceEnv) (harness.Resource, error) {
				r, err := New(ctx, Config{Name: name, Fence: env.Fence, DSN: env.Option(OptionDSN)})
				if err != nil {
					if errors.Is(err, ErrUnavailable) {
						return nil, registry.Input(fmt.Errorf("resource %s: %w", name, err))
					}
					return nil, err
				}
				return r, nil
			},
		}
	}
	return []registry.Resource{
		entry("postgres", "a row in PostgreSQL (--"+OptionDSN+" or $"+EnvDSN+"): one conditional UPDATE ... WHERE key = $3 AND token < $2"),
		entry("postgres-toctou", "PostgreSQL guarded by check-then-write: SELECT token, compare, then UPDATE without the condition, each statement autocommitted"),
		entry("postgres-toctou-tx", "the PostgreSQL check-then-write inside one transaction at the default READ COMMITTED"),
		entry("postgres-toctou-serializable", "the PostgreSQL check-then-write inside one SERIALIZABLE transaction (serialization failures retried)"),
		entry("postgres-toctou-forupdate", "the PostgreSQL check-then-write with SELECT ... FOR UPDATE in one READ COMMITTED transaction"),
		entry("postgres-outbox", "PostgreSQL fenced UPDATE and an outbox INSERT in one transaction; a relay delivers committed rows to the side-effect sink"),
		entry("postgres-direct", "PostgreSQL fenced UPDATE, but the client calls the side-effect sink itself just before writing"),
	}
}
