package harnesstest

import (
	"testing"

	"github.com/fencecheck/fencecheck"
	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/spec"
)

// Registry is fencecheck's registry — the register resources and the faults — with
// backends added: what a backend's own scenario tests run in, linking no other backend.
func Registry(t testing.TB, backends ...registry.Backend) *registry.Registry {
	t.Helper()
	reg, err := fencecheck.Registry(backends...)
	if err != nil {
		t.Fatalf("registry: %v", err)
	}
	return reg
}

// SkipUnavailable skips t, in one line saying why and how to get it, when s cannot run
// here (a program its backend or resource needs is missing, no server configured).
func SkipUnavailable(t testing.TB, reg *registry.Registry, s spec.Spec) {
	t.Helper()
	if why := spec.Unavailable(reg, s); why != "" {
		t.Skip(why)
	}
}
