package pgadvisory

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/fencecheck/fencecheck/harness"
)

var (
	_ harness.ServerVersioner  = (*Backend)(nil)
	_ harness.SessionTimeouter = (*Backend)(nil)
)

// sessionSettings end an idle session, and with it its advisory lock, when its client
// goes quiet: the session timeouts and the TCP keepalive that notices a silent peer.
var sessionSettings = []string{"idle_session_timeout", "idle_in_transaction_session_timeout",
	"tcp_keepalives_idle", "tcp_keepalives_interval", "tcp_keepalives_count", "tcp_user_timeout"}

// query runs f on a connection of its own to the server (or its bouncer).
func (b *Backend) query(ctx context.Context, f func(c *pgx.Conn) error) error {
	c, err := pgx.ConnectConfig(ctx, b.conn.Copy())
	if err != nil {
		return err
	}
	defer func() { _ = c.Close(context.WithoutCancel(ctx)) }()
	return f(c)
}

// ServerVersion implements harness.ServerVersioner: SHOW server_version, asked of the
// server (started or external).
func (b *Backend) ServerVersion(ctx context.Context) (string, error) {
	var v string
	err := b.query(ctx, func(c *pgx.Conn) error {
		return c.QueryRow(ctx, "SHOW server_version").Scan(&v)
	})
	if err != nil {
		return "", fmt.Errorf("%s: SHOW server_version: %w", Name, err)
	}
	return "PostgreSQL " + v, nil
}

// SessionTimeouts implements harness.SessionTimeouter: the settings that end a lock's
// session, as SHOW gives them (a setting this server does not have is left out).
func (b *Backend) SessionTimeouts(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	err := b.query(ctx, func(c *pgx.Conn) error {
		for _, name := range sessionSettings {
			var v string
			if err := c.QueryRow(ctx, "SHOW "+name).Scan(&v); err == nil {
				out[name] = v
			} else if ctx.Err() != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: SHOW: %w", Name, err)
	}
	return out, nil
}
