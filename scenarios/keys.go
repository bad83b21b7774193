package scenarios

import (
	"fmt"
	"strings"
)

// MaxKeys bounds Spec.Keys.
const MaxKeys = 1024

// checkKeys validates Spec.Keys: independent keys need a lock service and a resource
// that serve them (harness.KeyedLocker, harness.KeyedResourceClient): today the naive
// backends and the register resources.
func (s Spec) checkKeys() error {
	switch {
	case s.Keys < 0 || s.Keys > MaxKeys:
		return fmt.Errorf("keys must be between 1 and %d, got %d", MaxKeys, s.Keys)
	case s.Keys <= 1:
		return nil
	case !strings.HasPrefix(s.Backend, "naive"):
		return fmt.Errorf("backend %s does not support independent keys (--keys): only the naive backends do", s.Backend)
	}
	switch s.Resource {
	case "fenced", "unfenced", "toctou":
		return nil
	}
	return fmt.Errorf("resource %s does not support independent keys (--keys): only fenced, unfenced and toctou do", s.Resource)
}
