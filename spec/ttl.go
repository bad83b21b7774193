package spec

import (
	"context"
	"fmt"
	"time"

	"github.com/fencecheck/fencecheck/harness/registry"
)

// SettleTTL settles the lease TTL with a service that says which TTL it grants
// (registry.Backend.GrantedTTL: an existing etcd cluster raises a TTL below 1.5 × its
// election timeout, so a server with the default 1000 ms grants 2 s for 1 s). Every
// timing of a run — when faults arm, how long they hold, the figures it reports —
// derives from the TTL, so a run must use the one the service grants:
//   - a spec that left TTL to its default gets the granted TTL, and note says so (empty
//     when the default was granted as asked);
//   - an explicit TTL the service would not grant as asked is refused (ErrSpec).
//
// asked is the spec as given (before defaults). Any other run is returned as it is.
func (r *Resolved) SettleTTL(ctx context.Context, asked Spec) (_ *Resolved, note string, err error) {
	if r.Backend.GrantedTTL == nil {
		return r, "", nil
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	granted, err := r.Backend.GrantedTTL(pctx, r.Settings)
	switch {
	case err != nil:
		return r, "", Input(err)
	case granted == r.Spec.TTL:
		return r, "", nil
	case granted > r.Backend.LongestTTL():
		// No --ttl would do: a run at the granted TTL would be refused as too long.
		return r, "", fmt.Errorf("%w: this cluster grants at least %v leases (asked for %v), above the longest TTL a run takes (%v): a run would wait that long for every expiry; lower the cluster's election timeout", ErrSpec, granted, r.Spec.TTL, r.Backend.LongestTTL())
	case asked.TTL != 0 && granted > r.Spec.TTL:
		return r, "", fmt.Errorf("%w: this cluster grants at least %v leases; use --ttl %v", ErrSpec, granted, granted)
	case asked.TTL != 0:
		return r, "", fmt.Errorf("%w: this cluster granted a %v lease when asked for %v; use --ttl %v", ErrSpec, granted, r.Spec.TTL, granted)
	}
	asked.TTL = granted
	again, err := Resolve(r.reg, asked)
	if err != nil {
		return r, "", fmt.Errorf("%w: with the granted TTL %v: %w", ErrSpec, granted, err)
	}
	return again, fmt.Sprintf("the %s grants at least %v leases (asked for the default %v): running with TTL %v",
		r.Backend.SetupOf(r.Settings), granted, r.Spec.TTL, granted), nil
}

// ResolveTTL resolves s (Resolve) and settles its TTL with the service (SettleTTL): s
// with the granted TTL when it left the TTL to a default the service raised, else s as
// given.
func ResolveTTL(ctx context.Context, reg *registry.Registry, s Spec) (Spec, string, error) {
	r, err := Resolve(reg, s)
	if err != nil {
		return s, "", err
	}
	r, note, err := r.SettleTTL(ctx, s)
	if err != nil {
		return s, "", err
	}
	if note != "" {
		s.TTL = r.Spec.TTL // the granted one
	}
	return s, note, nil
}
