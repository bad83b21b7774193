package scenarios

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/builtin"
	"github.com/fencecheck/fencecheck/harness/faults"
	"github.com/fencecheck/fencecheck/harness/lease/naive"
	"github.com/fencecheck/fencecheck/harness/registry"
)

// tokenless is a backend whose tokens mean nothing: the naive server, declared
// harness.Tokenless.
type tokenless struct{ harness.Backend }

func (tokenless) NoFencingToken() string { return "its leases carry no ordering" }

func tokenlessRegistry(t *testing.T) *registry.Registry {
	t.Helper()
	reg := builtin.Registry()
	base := naive.Descriptors()[0]
	require.NoError(t, reg.AddBackend(registry.Backend{
		Name: "tokenless", Meaning: "the naive server, declared without fencing tokens", Token: "its leases carry no ordering",
		Shape: func(registry.Settings) registry.Shape { return registry.Shape{Backend: tokenless{}} },
		Start: func(ctx context.Context, env registry.Env) (harness.Backend, error) {
			b, err := base.Start(ctx, env)
			if err != nil {
				return nil, err
			}
			return tokenless{b}, nil // hides every capability but Tokenless
		},
	}))
	return reg
}

// A backend without fencing tokens cannot be made safe by fencing: a fenced resource
// refuses it (exit 2), an unfenced one runs, and its scorecard says so.
func TestTokenlessBackend(t *testing.T) {
	reg := tokenlessRegistry(t)
	_, err := normalize(reg, Spec{Backend: "tokenless", Resource: "fenced", Faults: []string{"pause"}})
	require.ErrorIs(t, err, ErrSpec)
	require.ErrorIs(t, err, ErrNoToken)
	require.ErrorContains(t, err, "no fencing token: cannot be made safe by fencing")
	_, err = normalize(reg, Spec{Backend: "tokenless", Resource: "unfenced", Faults: []string{"pause"}})
	require.NoError(t, err)
	_, err = normalize(reg, Spec{Backend: "tokenless", Resource: "unfenced", Faults: []string{"crash"}})
	require.ErrorContains(t, err, "does not implement harness.Crasher", "capabilities come from the descriptor, not the name")

	p, err := PlanEvaluate(EvaluateConfig{Registry: reg, Backend: "tokenless"})
	require.NoError(t, err)
	require.Equal(t, "its leases carry no ordering", p.Scorecard.NoToken)
	require.NotEmpty(t, p.Jobs)
	for _, j := range p.Jobs {
		require.Equal(t, "unfenced", j.Resource, "no fenced run is planned")
	}
	sc := p.Judge(make([]RunResult, len(p.Jobs)), t.TempDir(), p.Scorecard.Started)
	require.False(t, sc.Safe)
	require.Contains(t, sc.Verdict, "cannot be made safe by fencing")
	require.Equal(t, "no fencing token", sc.Rows[0].Fenced)
}

func TestRegistryRefusesDuplicates(t *testing.T) {
	reg := builtin.Registry()
	require.ErrorContains(t, reg.AddBackend(naive.Descriptors()[0]), "registered twice")
	require.ErrorContains(t, reg.AddBackend(registry.Backend{Name: "x"}), "needs a name and a Start")
	require.ErrorContains(t, reg.AddFault(faults.All()[0]), "registered twice")
	b := naive.Descriptors()[0]
	b.Name, b.Options = "other", []registry.Option{{Name: "etcd-endpoints", Usage: "something else"}}
	require.ErrorContains(t, reg.AddBackend(b), "declared twice")
}

// Options: one of another backend is an error, one of another resource is ignored, one
// nobody declares is unknown; an option alone names its backend.
func TestSpecOptions(t *testing.T) {
	_, err := Normalize(Spec{Backend: "naive", Options: map[string]string{"etcd-endpoints": "127.0.0.1:1"}})
	require.ErrorContains(t, err, "--etcd-endpoints is for the etcd backend")
	n, err := Normalize(Spec{Resource: "fenced", Options: map[string]string{"postgres-dsn": "postgres://x@127.0.0.1:1/db"}})
	require.NoError(t, err)
	require.Empty(t, n.Options)
	_, err = Normalize(Spec{Options: map[string]string{"nope": "1"}})
	require.ErrorContains(t, err, "unknown option --nope")
	n, err = Normalize(Spec{Options: map[string]string{"etcd-endpoints": "127.0.0.1:1"}})
	require.NoError(t, err)
	require.Equal(t, "etcd", n.Backend)
	require.Equal(t, 1, n.Members)
}
