package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/fencecheck/fencecheck/harness"
)

var _ harness.ServerVersioner = (*Backend)(nil)

// ServerVersion implements harness.ServerVersioner: the "Zookeeper version" line of the
// srvr four-letter word of the first server that answers. A started ensemble
// whitelists srvr; an external one may refuse it ("srvr is not executed because it is
// not in the whitelist"), and then the version is unknown (an error, never a guess).
func (b *Backend) ServerVersion(ctx context.Context) (string, error) {
	var errs []error
	for _, addr := range b.endpoints {
		out, err := fourLetter(ctx, addr, "srvr")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if v := srvrVersion(out); v != "" {
			return "ZooKeeper " + v, nil
		}
		errs = append(errs, fmt.Errorf("%s answered srvr with %q", addr, strings.TrimSpace(out)))
	}
	return "", fmt.Errorf("zookeeper: srvr: %w", errors.Join(errs...))
}

// srvrVersion is the version in a srvr report ("Zookeeper version: 3.8.0-5a02a05…, built
// on …"), without its build: "3.8.0".
func srvrVersion(out string) string {
	for line := range strings.Lines(out) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "Zookeeper version: "); ok {
			v, _, _ = strings.Cut(v, ",")
			v, _, _ = strings.Cut(v, "-")
			return strings.TrimSpace(v)
		}
	}
	return ""
}
