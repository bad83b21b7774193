package sqlite

import (
	"context"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/resource/sqldb"
)

// Descriptors returns the registry entries of the SQLite resources.
func Descriptors() []registry.Resource {
	entry := func(name, meaning string) registry.Resource {
		mode, _ := Mode(name)
		return registry.Resource{
			Name: name, Meaning: meaning, Embedded: "SQLite", NeedsToken: true,
			Unfenced: mode == sqldb.TOCTOU, ChecksThenWrites: mode.ChecksThenWrites(),
			Start: func(ctx context.Context, env registry.ResourceEnv) (harness.Resource, error) {
				dir, err := env.TempDir()
				if err != nil {
					return nil, err
				}
				return New(ctx, Config{Name: name, Fence: env.Fence, Dir: dir})
			},
		}
	}
	return []registry.Resource{
		entry("sqlite", "a row in an embedded SQLite database (WAL): one conditional UPDATE ... WHERE key = ? AND token < ?; rows affected decide"),
		entry("sqlite-toctou", "SQLite guarded by check-then-write: SELECT token, compare, then UPDATE without the condition, each statement autocommitted"),
		entry("sqlite-toctou-tx", "the SQLite check-then-write inside one deferred transaction (SQLite's default; serializable)"),
		entry("sqlite-toctou-immediate", "the SQLite check-then-write inside BEGIN IMMEDIATE (takes the write lock before the check)"),
		entry("sqlite-outbox", "SQLite fenced UPDATE and an outbox INSERT in one transaction; a relay delivers committed rows to the side-effect sink"),
		entry("sqlite-direct", "SQLite fenced UPDATE, but the client calls the side-effect sink itself just before writing"),
	}
}
