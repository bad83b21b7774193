package register

import (
	"context"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/registry"
)

// Descriptors returns the registry entries of the register resources.
func Descriptors() []registry.Resource {
	kind := func(k Kind, meaning string, unfenced, checks, token bool) registry.Resource {
		return registry.Resource{
			Name: string(k), Meaning: meaning, Unfenced: unfenced, ChecksThenWrites: checks, Keyed: true, NeedsToken: token,
			Start: func(_ context.Context, env registry.ResourceEnv) (harness.Resource, error) {
				r, err := New(k, env.Fence)
				if err != nil {
					return nil, registry.Input(err)
				}
				return r, nil
			},
		}
	}
	return []registry.Resource{
		kind(Fenced, "register with one atomic conditional write (accept iff token passes the fence)", false, false, true),
		kind(Unfenced, "register that accepts every write; the token is stored, never checked", true, false, false),
		kind(TOCTOU, "register guarded by check-then-write: read the token, compare, then write in a second request", true, true, true),
	}
}
