package scenarios

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/models"
)

func TestMatchCatalogue(t *testing.T) {
	for _, tc := range []struct {
		spec Spec
		want string
	}{
		{CellSpec("naive", "fenced", []string{"pause"}, nil), "naive-fenced-pause"},
		{CellSpec("etcd", "unfenced", []string{"delay"}, nil), "etcd-unfenced-delay"},
		// Node faults on etcd run on 3 members, and given alone ride on a pause.
		{CellSpec("etcd", "fenced", []string{"leader-isolation"}, nil), "etcd3-fenced-leader-isolation"},
		{CellSpec("raft", "fenced", []string{"crash"}, nil), "raft-fenced-crash"},
		{Spec{Backend: "naive", Resource: "fenced", Faults: []string{"pause"}, Clients: 5, Seed: 9}, "naive-fenced-pause"},
	} {
		sc, ok := Match(tc.spec)
		require.True(t, ok, "%+v", tc.spec)
		require.Equal(t, tc.want, sc.Name)
		require.Equal(t, tc.want, Label(tc.spec))
	}
	for _, s := range []Spec{
		CellSpec("etcd", "unfenced", []string{"partition"}, nil),
		CellSpec("etcd", "fenced", []string{"pause"}, map[string]string{"etcd-endpoints": "127.0.0.1:2379"}), // an external cluster is not the catalogue's
		{Backend: "naive", Resource: "fenced", Fence: "monotonic", Faults: []string{"delay"}},
	} {
		_, ok := Match(s)
		require.False(t, ok, "%+v", s)
	}
}

func TestExpectFor(t *testing.T) {
	e, cat := ExpectFor(CellSpec("naive", "fenced", []string{"pause"}, nil))
	require.True(t, cat)
	require.Equal(t, models.Violated, e.Verdicts[models.Mutex])

	e, cat = ExpectFor(CellSpec("etcd", "unfenced", []string{"partition"}, nil))
	require.False(t, cat)
	require.Equal(t, models.Violated, e.Verdicts[models.Register])
	require.Equal(t, models.Held, e.Verdicts[models.Tokens])
	require.Equal(t, 1, e.MinStaleAccepted)
	_, checked := e.Verdicts[models.Mutex]
	require.False(t, checked, "the design table leaves mutex open")

	e, _ = ExpectFor(CellSpec("raft", "fenced", []string{"partition"}, nil))
	require.Equal(t, models.Held, e.Verdicts[models.Register])
	require.Equal(t, models.Held, e.Verdicts[models.Updates])
	require.True(t, e.NoStaleAccepted)
	require.Equal(t, 1, e.MinStaleRejected)

	// The design table: the naive in-memory counter restarts after a crash.
	e, _ = ExpectFor(Spec{Backend: "naive", Resource: "fenced", Fence: "monotonic", Faults: []string{"crash"}})
	require.Equal(t, models.Violated, e.Verdicts[models.Tokens])
	require.Equal(t, models.Violated, e.Verdicts[models.Updates])
}

func TestLabel(t *testing.T) {
	require.Equal(t, "etcd-unfenced-partition", Label(CellSpec("etcd", "unfenced", []string{"partition"}, nil)))
	require.Equal(t, "etcd-txn-partition", Label(CellSpec("etcd", "etcd-txn", []string{"partition"}, nil)))
	require.Equal(t, "etcd-external-fenced-pause", Label(CellSpec("etcd", "fenced", []string{"pause"}, map[string]string{"etcd-endpoints": "127.0.0.1:1"})))
	require.Equal(t, "raft-3-unfenced-crash", Label(Spec{Backend: "raft", Members: 3, Resource: "unfenced", Faults: []string{"crash"}}))
}

func TestApplicableFaults(t *testing.T) {
	naive := ApplicableFaults("naive", nil)
	require.Contains(t, naive, "pause")
	require.Contains(t, naive, "crash")
	require.NotContains(t, naive, "leader-isolation")
	etcd := ApplicableFaults("etcd", nil)
	require.Contains(t, etcd, "leader-isolation")
	require.Contains(t, etcd, "node-pause")
	external := ApplicableFaults("etcd", map[string]string{"etcd-endpoints": "127.0.0.1:2379"})
	require.Contains(t, external, "pause")
	require.NotContains(t, external, "leader-isolation")
	require.NotContains(t, external, "crash")
	require.Equal(t, []string{"etcd-txn"}, NativeResources("etcd"))
	require.Empty(t, NativeResources("raft"))
	_, err := Normalize(Spec{Backend: "chubby"})
	require.ErrorIs(t, err, ErrSpec)
}
