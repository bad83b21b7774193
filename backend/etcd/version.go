package etcd

import (
	"context"
	"errors"
	"fmt"

	"github.com/fencecheck/fencecheck/harness"
)

var _ harness.ServerVersioner = (*Backend)(nil)

// ServerVersion implements harness.ServerVersioner: the Version of the Maintenance
// Status of the first endpoint that answers (embedded or external).
func (b *Backend) ServerVersion(ctx context.Context) (string, error) {
	cli, err := DialKeepAlive(ctx, b.cfg.Endpoints, b.cfg.DialTimeout, b.cfg.KeepAlive)
	if err != nil {
		return "", fmt.Errorf("etcd: status: %w", err)
	}
	defer func() { _ = cli.Close() }()
	var errs []error
	for _, ep := range b.cfg.Endpoints {
		st, err := cli.Status(ctx, ep)
		if err == nil && st.Version != "" {
			return "etcd " + st.Version, nil
		}
		errs = append(errs, err)
	}
	return "", fmt.Errorf("etcd: status: %w", errors.Join(errs...))
}
