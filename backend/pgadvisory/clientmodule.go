package pgadvisory

import "github.com/fencecheck/fencecheck/harness"

var _ harness.ClientModuler = (*Backend)(nil)

// ClientModule implements harness.ClientModuler: the lock client is github.com/jackc/pgx/v5.
func (b *Backend) ClientModule() string { return "github.com/jackc/pgx/v5" }
