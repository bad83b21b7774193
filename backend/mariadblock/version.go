package mariadblock

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/go-sql-driver/mysql"

	"github.com/fencecheck/fencecheck/harness"
)

var (
	_ harness.ServerVersioner  = (*Backend)(nil)
	_ harness.SessionTimeouter = (*Backend)(nil)
)

// query runs f on a connection of its own to the server.
func (b *Backend) query(ctx context.Context, f func(c *sql.Conn) error) error {
	cfg := b.conn.Clone()
	cfg.DBName = ""
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		return err
	}
	db := sql.OpenDB(c)
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return f(conn)
}

// ServerVersion implements harness.ServerVersioner: SELECT VERSION(), asked of the
// server (started or external).
func (b *Backend) ServerVersion(ctx context.Context) (string, error) {
	var v string
	err := b.query(ctx, func(c *sql.Conn) error { return c.QueryRowContext(ctx, "SELECT VERSION()").Scan(&v) })
	if err != nil {
		return "", fmt.Errorf("%s: SELECT VERSION(): %w", Name, err)
	}
	return "MariaDB " + v, nil
}

// SessionTimeouts implements harness.SessionTimeouter: wait_timeout (what ends an idle
// session, and with it its GET_LOCK) and the read and write timeouts of a session that
// is mid-statement, as SELECT @@ gives them.
func (b *Backend) SessionTimeouts(ctx context.Context) (map[string]string, error) {
	var wait, read, write string
	err := b.query(ctx, func(c *sql.Conn) error {
		return c.QueryRowContext(ctx, "SELECT @@global.wait_timeout, @@global.net_read_timeout, @@global.net_write_timeout").Scan(&wait, &read, &write)
	})
	if err != nil {
		return nil, fmt.Errorf("%s: SELECT @@: %w", Name, err)
	}
	return map[string]string{"wait_timeout": wait, "net_read_timeout": read, "net_write_timeout": write}, nil
}
