package scenarios

import (
	"context"
	"fmt"
	"time"

	"github.com/fencecheck/fencecheck/harness/registry"
)

// ResolveTTL settles the lease TTL of a spec whose backend asks its service which TTL it
// grants (registry.Backend.GrantedTTL: an existing etcd cluster raises a TTL below
// 1.5 × its election timeout, so a server with the default 1000 ms grants 2 s for 1 s).
// Every timing of a run — when faults arm, how long they hold, the figures it reports —
// derives from the TTL, so a run must use the one the service grants:
//   - a spec that leaves TTL to its default gets the granted TTL, and note says so
//     (empty when the default was granted as asked);
//   - an explicit TTL the service would not grant as asked is refused (ErrSpec).
//
// Any other spec is returned as it is.
func ResolveTTL(ctx context.Context, reg *registry.Registry, s Spec) (_ Spec, note string, err error) {
	r, err := resolve(reg, s)
	if err != nil {
		return s, "", fmt.Errorf("%w: %w", ErrSpec, err)
	}
	if r.backend.GrantedTTL == nil {
		return s, "", nil
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	granted, err := r.backend.GrantedTTL(pctx, r.settings)
	switch {
	case err != nil:
		return s, "", input(err)
	case granted == r.TTL:
		return s, "", nil
	case s.TTL != 0 && granted > r.TTL:
		return s, "", fmt.Errorf("%w: this cluster grants at least %v leases; use --ttl %v", ErrSpec, granted, granted)
	case s.TTL != 0:
		return s, "", fmt.Errorf("%w: this cluster granted a %v lease when asked for %v; use --ttl %v", ErrSpec, granted, r.TTL, granted)
	}
	s.TTL = granted
	if _, err := resolve(reg, s); err != nil {
		return s, "", fmt.Errorf("%w: with the granted TTL %v: %w", ErrSpec, granted, err)
	}
	return s, fmt.Sprintf("the %s grants at least %v leases (asked for the default %v): running with TTL %v",
		serviceWords(r), granted, r.TTL, granted), nil
}

// serviceWords names the service a spec runs against, as its descriptor describes it.
func serviceWords(r resolved) string { return r.backend.SetupOf(r.settings) }
