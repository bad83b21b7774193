package sqlsession

import "github.com/jackc/pgx/v5"

// ProxiedPG is a copy of conn that dials host:port (a client's proxy link), its
// fallbacks too: sslmode=prefer (the default) tries TLS first and then plaintext, and
// both attempts must go through the link, never to the server itself.
func ProxiedPG(conn *pgx.ConnConfig, host string, port uint16) *pgx.ConnConfig {
	cfg := conn.Copy()
	cfg.Host, cfg.Port = host, port
	for i, fb := range cfg.Fallbacks {
		f := *fb
		f.Host, f.Port = host, port
		cfg.Fallbacks[i] = &f
	}
	return cfg
}
