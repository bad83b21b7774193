package builtin_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/harness/builtin"
	"github.com/fencecheck/fencecheck/harness/faults"
	"github.com/fencecheck/fencecheck/harness/lease/naive"
	"github.com/fencecheck/fencecheck/harness/registry"
)

func TestRegistryRefusesDuplicates(t *testing.T) {
	reg := builtin.Registry()
	require.ErrorContains(t, reg.AddBackend(naive.Descriptors()[0]), "registered twice")
	require.ErrorContains(t, reg.AddBackend(registry.Backend{Name: "x"}), "needs a name and a Start")
	require.ErrorContains(t, reg.AddFault(faults.All()[0]), "registered twice")
	b := naive.Descriptors()[0]
	b.Name, b.Options = "other", []registry.Option{{Name: "etcd-endpoints", Usage: "something else"}}
	require.ErrorContains(t, reg.AddBackend(b), "declared twice")
}
