package catalogue_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/builtin"
	"github.com/fencecheck/fencecheck/campaign"
	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/spec"
)

func TestMatchCatalogue(t *testing.T) {
	reg, cat := builtin.Registry(), builtin.Catalogue()
	cell := func(b, r string, faults []string, opts map[string]string) spec.Spec {
		return campaign.CellSpec(reg, cat, b, r, faults, opts)
	}
	for _, tc := range []struct {
		s    spec.Spec
		want string
	}{
		{cell("naive", "fenced", []string{"pause"}, nil), "naive-fenced-pause"},
		{cell("etcd", "unfenced", []string{"delay"}, nil), "etcd-unfenced-delay"},
		// Node faults on etcd run on 3 members, and given alone ride on a pause.
		{cell("etcd", "fenced", []string{"leader-isolation"}, nil), "etcd3-fenced-leader-isolation"},
		{cell("raft", "fenced", []string{"crash"}, nil), "raft-fenced-crash"},
		{spec.Spec{Backend: "naive", Resource: "fenced", Faults: []string{"pause"}, Clients: 5, Seed: 9}, "naive-fenced-pause"},
	} {
		sc, ok := cat.Match(reg, tc.s)
		require.True(t, ok, "%+v", tc.s)
		require.Equal(t, tc.want, sc.Name)
		require.Equal(t, tc.want, cat.Label(reg, tc.s))
	}
	for _, s := range []spec.Spec{
		cell("etcd", "unfenced", []string{"partition"}, nil),
		cell("etcd", "fenced", []string{"pause"}, map[string]string{"etcd-endpoints": "127.0.0.1:2379"}), // an external cluster is not the catalogue's
		{Backend: "naive", Resource: "fenced", Fence: "monotonic", Faults: []string{"delay"}},
	} {
		_, ok := cat.Match(reg, s)
		require.False(t, ok, "%+v", s)
	}
}

func TestExpect(t *testing.T) {
	reg, cat := builtin.Registry(), builtin.Catalogue()
	cell := func(b, r string, faults ...string) spec.Spec { return campaign.CellSpec(reg, cat, b, r, faults, nil) }
	e, fromCat := cat.Expect(reg, cell("naive", "fenced", "pause"))
	require.True(t, fromCat)
	require.Equal(t, models.Violated, e.Verdicts[models.Mutex])

	e, fromCat = cat.Expect(reg, cell("etcd", "unfenced", "partition"))
	require.False(t, fromCat)
	require.Equal(t, models.Violated, e.Verdicts[models.Register])
	require.Equal(t, models.Held, e.Verdicts[models.Tokens])
	require.Equal(t, 1, e.MinStaleAccepted)
	_, checked := e.Verdicts[models.Mutex]
	require.False(t, checked, "the design table leaves mutex open")

	e, _ = cat.Expect(reg, cell("raft", "fenced", "partition"))
	require.Equal(t, models.Held, e.Verdicts[models.Register])
	require.Equal(t, models.Held, e.Verdicts[models.Updates])
	require.True(t, e.NoStaleAccepted)
	require.Equal(t, 1, e.MinStaleRejected)

	// The design table: the naive in-memory counter restarts after a crash.
	e, _ = cat.Expect(reg, spec.Spec{Backend: "naive", Resource: "fenced", Fence: "monotonic", Faults: []string{"crash"}})
	require.Equal(t, models.Violated, e.Verdicts[models.Tokens])
	require.Equal(t, models.Violated, e.Verdicts[models.Updates])

	// Without a catalogue every cell's expectation is derived.
	e, fromCat = catalogue.Catalogue(nil).Expect(reg, cell("naive", "fenced", "pause"))
	require.False(t, fromCat)
	require.Equal(t, models.Held, e.Verdicts[models.Register])
}

func TestLabel(t *testing.T) {
	reg, cat := builtin.Registry(), builtin.Catalogue()
	cell := func(b, r string, faults []string, opts map[string]string) spec.Spec {
		return campaign.CellSpec(reg, cat, b, r, faults, opts)
	}
	require.Equal(t, "etcd-unfenced-partition", cat.Label(reg, cell("etcd", "unfenced", []string{"partition"}, nil)))
	require.Equal(t, "etcd-txn-partition", cat.Label(reg, cell("etcd", "etcd-txn", []string{"partition"}, nil)))
	require.Equal(t, "etcd-external-fenced-pause", cat.Label(reg, cell("etcd", "fenced", []string{"pause"}, map[string]string{"etcd-endpoints": "127.0.0.1:1"})))
	require.Equal(t, "raft-3-unfenced-crash", cat.Label(reg, spec.Spec{Backend: "raft", Members: 3, Resource: "unfenced", Faults: []string{"crash"}}))
}

// The shared expectations are fresh values: changing one changes no other scenario's.
func TestExpectValues(t *testing.T) {
	a := catalogue.Safe()
	a.Verdicts[models.Mutex] = models.Held
	require.Equal(t, models.Violated, catalogue.Safe().Verdicts[models.Mutex])
	b := catalogue.Unsafe().With(models.Effects, models.Held)
	require.Equal(t, models.Held, b.Verdicts[models.Effects])
	require.NotContains(t, catalogue.Unsafe().Verdicts, models.Effects)
}

// Every built-in scenario resolves, and no two share a name.
func TestBuiltinCatalogue(t *testing.T) {
	require.NoError(t, builtin.Catalogue().Check(builtin.Registry()))
	_, skipped, err := builtin.Catalogue().Select(builtin.Registry(), "all")
	require.NoError(t, err)
	for _, name := range skipped {
		sc, ok := builtin.Catalogue().Lookup(name)
		require.True(t, ok)
		require.NotEmpty(t, spec.Unavailable(builtin.Registry(), sc.Spec), name)
	}
	_, _, err = builtin.Catalogue().Select(builtin.Registry(), "naive-fenced-pause,nope")
	require.ErrorIs(t, err, spec.ErrSpec)
}
