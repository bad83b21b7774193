package mariadblock

import "github.com/fencecheck/fencecheck/harness"

var _ harness.ClientModuler = (*Backend)(nil)

// ClientModule implements harness.ClientModuler: the lock client is github.com/go-sql-driver/mysql.
func (b *Backend) ClientModule() string { return "github.com/go-sql-driver/mysql" }
