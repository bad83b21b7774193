package leasetable

import "github.com/fencecheck/fencecheck/harness"

var _ harness.ClientModuler = (*Backend)(nil)

// ClientModule implements harness.ClientModuler: on PostgreSQL the lock client is
// github.com/jackc/pgx/v5; on SQLite it is fencecheck's own (statements over loopback
// HTTP to the database fencecheck runs), so there is no library to name.
func (b *Backend) ClientModule() string {
	if _, ok := b.st.(*pgStore); ok {
		return "github.com/jackc/pgx/v5"
	}
	return ""
}
