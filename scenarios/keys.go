package scenarios

import (
	"fmt"

	"github.com/fencecheck/fencecheck/harness/registry"
)

// MaxKeys bounds Spec.Keys.
const MaxKeys = 1024

// checkKeys validates Spec.Keys: independent keys need a lock service and a resource
// that serve them (harness.KeyedBackend, harness.KeyedResourceClient).
func checkKeys(s Spec, backend string, caps registry.Caps, res registry.Resource) error {
	switch {
	case s.Keys < 0 || s.Keys > MaxKeys:
		return fmt.Errorf("keys must be between 1 and %d, got %d", MaxKeys, s.Keys)
	case s.Keys <= 1:
		return nil
	case !caps.Keyed:
		return fmt.Errorf("backend %s does not support independent keys (--keys): its lockers are not harness.KeyedLockers", backend)
	case !res.Keyed:
		return fmt.Errorf("resource %s does not support independent keys (--keys): its clients are not harness.KeyedResourceClients", res.Name)
	}
	return nil
}
