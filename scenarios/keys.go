package scenarios

import (
	"fmt"

	"github.com/fencecheck/fencecheck/harness/registry"
)

// MaxKeys bounds Spec.Keys.
const MaxKeys = 1024

// checkKeys validates Spec.Keys: independent keys need a lock service and a resource
// that serve them (harness.KeyedLocker, harness.KeyedResourceClient).
func checkKeys(s Spec, backend string, caps registry.Caps, res registry.Resource) error {
	switch {
	case s.Keys < 0 || s.Keys > MaxKeys:
		return fmt.Errorf("keys must be between 1 and %d, got %d", MaxKeys, s.Keys)
	case s.Keys <= 1:
		return nil
	case !caps.Keyed:
		return fmt.Errorf("backend %s does not support independent keys (--keys): it needs lockers that implement harness.KeyedLocker, and its Shape.Locker does not", backend)
	case !res.Keyed:
		return fmt.Errorf("resource %s does not support independent keys (--keys): it needs clients that implement harness.KeyedResourceClient, which its descriptor does not declare (registry.Resource.Keyed)", res.Name)
	}
	return nil
}
