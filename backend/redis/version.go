package redis

import (
	"context"
	"fmt"
	"strings"

	redigo "github.com/gomodule/redigo/redis"

	"github.com/fencecheck/fencecheck/harness"
)

var _ harness.ServerVersioner = (*Backend)(nil)

// ServerVersion implements harness.ServerVersioner: redis_version from INFO server,
// asked of the server itself (started or external).
func (b *Backend) ServerVersion(ctx context.Context) (string, error) {
	c, err := redigo.DialContext(ctx, "tcp", b.addr)
	if err != nil {
		return "", fmt.Errorf("redis: INFO server: %w", err)
	}
	defer c.Close()
	info, err := redigo.String(redigo.DoContext(c, ctx, "INFO", "server"))
	if err != nil {
		return "", fmt.Errorf("redis: INFO server: %w", err)
	}
	if v := infoField(info, "redis_version"); v != "" {
		return "redis " + v, nil
	}
	return "", fmt.Errorf("redis: INFO server has no redis_version")
}

// infoField is the value of name in an INFO reply ("name:value" lines).
func infoField(info, name string) string {
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return ""
}
