package scenarios

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	etcdlock "github.com/fencecheck/fencecheck/harness/lease/etcd"
)

// ResolveTTL settles the lease TTL of a spec that runs against an existing etcd cluster
// (EtcdEndpoints). etcd raises a TTL below ceil(1.5 × its election timeout) to that
// minimum (a server with the default 1000 ms election timeout grants 2 s for 1 s), and
// every timing of a run — when faults arm, how long they hold, the figures it reports —
// derives from the TTL, so a run must use the one the cluster grants:
//   - a spec that leaves TTL to its default gets the TTL the cluster grants for the
//     default, and note says so (empty when the default was granted as asked);
//   - an explicit TTL the cluster would not grant as asked is refused (ErrSpec, "this
//     cluster grants at least 2s leases; use --ttl 2s").
//
// Probing grants one lease and revokes it at once. Any other spec is returned as it is.
func ResolveTTL(ctx context.Context, s Spec) (_ Spec, note string, err error) {
	if len(s.EtcdEndpoints) == 0 {
		return s, "", nil
	}
	n, err := s.withDefaults()
	if err != nil {
		return s, "", fmt.Errorf("%w: %w", ErrSpec, err)
	}
	if n.Backend != "etcd" {
		return s, "", nil
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	b, err := etcdlock.New(pctx, etcdlock.Config{Endpoints: n.EtcdEndpoints, TTL: n.TTL})
	var te *etcdlock.TTLError
	switch {
	case err == nil:
		_ = b.Close() // the probe's lease is revoked already; nothing else was written
		return s, "", nil
	case errors.As(err, &te) && s.TTL == 0:
		s.TTL = te.Granted
		if _, err := s.withDefaults(); err != nil {
			return s, "", fmt.Errorf("%w: with the granted TTL %v: %w", ErrSpec, te.Granted, err)
		}
		return s, fmt.Sprintf("the etcd cluster at %s grants at least %v leases (asked for the default %v): running with TTL %v",
			strings.Join(n.EtcdEndpoints, ","), te.Granted, n.TTL, te.Granted), nil
	default:
		// An explicit TTL the cluster would not grant, or an endpoint that does not
		// answer: the user's input either way.
		return s, "", fmt.Errorf("%w: %w", ErrSpec, err)
	}
}
