package scenarios

import (
	"fmt"
	"strings"

	"github.com/fencecheck/fencecheck/harness/registry"
)

// MaxKeys bounds Spec.Keys.
const MaxKeys = 1024

// checkKeys validates Spec.Keys: independent keys need a lock service and a resource
// that serve them (harness.KeyedBackend, harness.KeyedResourceClient).
func checkKeys(reg *registry.Registry, s Spec, backend string, caps registry.Caps, res registry.Resource) error {
	switch {
	case s.Keys < 0 || s.Keys > MaxKeys:
		return fmt.Errorf("keys must be between 1 and %d, got %d", MaxKeys, s.Keys)
	case s.Keys <= 1:
		return nil
	case !caps.Keyed:
		var keyed []string
		for _, b := range reg.Backends() {
			if b.DeclaredCaps(registry.Settings{Members: max(b.Members, 1)}).Keyed {
				keyed = append(keyed, b.Name)
			}
		}
		return fmt.Errorf("backend %s does not support independent keys (--keys): only %s do", backend, andList(keyed))
	case !res.Keyed:
		var keyed []string
		for _, r := range reg.Resources() {
			if r.Keyed {
				keyed = append(keyed, r.Name)
			}
		}
		return fmt.Errorf("resource %s does not support independent keys (--keys): only %s do", res.Name, andList(keyed))
	}
	return nil
}

// andList joins names as "a, b and c" ("none" when empty).
func andList(xs []string) string {
	switch len(xs) {
	case 0:
		return "none"
	case 1:
		return xs[0]
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}
