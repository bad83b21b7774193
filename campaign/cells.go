package campaign

import (
	"maps"
	"slices"

	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/spec"
)

// CellSpec is the spec of one matrix or evaluate cell: backend × resource × faults,
// with those of opts that the backend or the resource declares. Service faults run on
// the backend's NodeFaultMembers (etcd: 3), like the catalogue's. A cell that runs a
// catalogue scenario gets its name.
func CellSpec(reg *registry.Registry, cat catalogue.Catalogue, backend, resource string, faults []string, opts map[string]string) spec.Spec {
	s := spec.Spec{Backend: backend, Resource: resource, Faults: slices.Clone(faults)}
	be, ok := reg.Backend(backend)
	res, _ := reg.Resource(resource)
	for k, v := range opts {
		if v != "" && (registry.HasOption(be.Options, k) || registry.HasOption(res.Options, k)) {
			if s.Options == nil {
				s.Options = map[string]string{}
			}
			s.Options[k] = v
		}
	}
	if def := be.Defaults(registry.Settings{Options: s.Options}); ok && def.NodeFaultMembers > 0 && !be.IsExternal(registry.Settings{Options: s.Options}) {
		if slices.ContainsFunc(faults, reg.ActsOnService) {
			s.Members = def.NodeFaultMembers
		}
	}
	if sc, ok := cat.Match(reg, s); ok {
		s.Name = sc.Name
	}
	return s
}

// ApplicableFaults lists, in registry order, the targeted faults that can run against a
// backend (with its options, e.g. an external cluster) and resource: each is tried on a
// cell and kept when the spec resolves.
func ApplicableFaults(reg *registry.Registry, backend, resource string, opts map[string]string) []string {
	var out []string
	for _, f := range reg.Faults() {
		if _, err := spec.Resolve(reg, CellSpec(reg, nil, backend, resource, []string{f.Name()}, opts)); err == nil {
			out = append(out, f.Name())
		}
	}
	return out
}

// cloneOptions copies an options map (nil stays nil).
func cloneOptions(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	return maps.Clone(m)
}
