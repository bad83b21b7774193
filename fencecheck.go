// Package fencecheck is the small front of fencecheck for a Go test: run one scenario
// or an evaluation against a lock backend of your own — a harness.Backend value, or a
// registry.Backend descriptor — with the options in one Config. It links the harness,
// the register resources and the faults, and no backend it is not given.
package fencecheck

import (
	"github.com/fencecheck/fencecheck/harness/faults"
	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/harness/resource/register"
)

// Registry returns a registry of fencecheck's faults and its register resources
// (fenced, unfenced, toctou) with backends added: what a run of those backends needs,
// and nothing else. An error names a descriptor that cannot be registered.
func Registry(backends ...registry.Backend) (*registry.Registry, error) {
	r := registry.New()
	if err := r.AddResource(register.Descriptors()...); err != nil {
		return nil, err
	}
	if err := r.AddFault(faults.All()...); err != nil {
		return nil, err
	}
	if err := r.AddBackend(backends...); err != nil {
		return nil, err
	}
	return r, nil
}
