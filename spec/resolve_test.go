package spec_test

import (
	"context"
	"errors"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/backend/naive"
	"github.com/fencecheck/fencecheck/builtin"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/spec"
)

func TestSpecErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    spec.Spec
		want string
	}{
		{"unknown backend", spec.Spec{Backend: "chubby"}, `unknown backend "chubby"`},
		{"unknown resource", spec.Spec{Resource: "s3"}, `unknown resource "s3"`},
		{"unknown fault", spec.Spec{Faults: []string{"meteor"}}, `unknown fault "meteor"`},
		{"negative ttl", spec.Spec{TTL: -1}, "ttl must be positive"},
		{"negative min grants", spec.Spec{MinGrants: -1}, "min grants must not be negative"},
		{"short ttl", spec.Spec{TTL: 10 * time.Millisecond}, "ttl 10ms is too short: below 50ms"},
		{"long ttl", spec.Spec{TTL: 1000 * time.Hour, Faults: []string{"pause"}}, "ttl 1000h0m0s is too long: at most 1m0s for naive (a run would last at least 4000h0m0s"},
		{"one client", spec.Spec{Clients: 1}, "clients must be between 2 and 64"},
		{"bad fence", spec.Spec{Fence: "loose"}, `unknown fence "loose"`},
		{"both kinds of faults", spec.Spec{Faults: []string{"pause"}, RandomFaults: []string{"pause"}}, "not both"},
		{"careful without expiring leases", spec.Spec{Backend: "etcd", Policy: "careful"}, "the careful policy needs a lease that knows its end by the client's clock, and backend etcd's leases do not"},
		{"native elsewhere", spec.Spec{Backend: "naive", Resource: "etcd-txn"}, "resource etcd-txn is native to the etcd backend"},
		{"clock not owned", spec.Spec{Backend: "etcd", Faults: []string{"skew"}}, `fault "skew": backend etcd's server clock cannot be skewed`},
		{"no cluster crash", spec.Spec{Backend: "naive", Faults: []string{"cluster-crash"}}, "which fencecheck cannot do to backend naive (one node or server at a time: crash)"},
		{"no client process", spec.Spec{Backend: "naive", Faults: []string{"client-crash"}}, `fault "client-crash" kills a lock client that is a process of its own, and backend naive's clients run inside fencecheck`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := spec.Resolve(builtin.Registry(), tc.s)
			require.ErrorIs(t, err, spec.ErrSpec)
			require.ErrorContains(t, err, tc.want)
			require.NotContains(t, err.Error(), "\n")
		})
	}
	_, err := spec.Resolve(nil, spec.Spec{})
	require.ErrorIs(t, err, spec.ErrSpec, "no registry is the caller's input, not a silent fallback")
}

// One pass fills every default: the backend's TTL and members, the default seed (the
// same as evaluate's), the policy.
func TestResolveDefaults(t *testing.T) {
	r, err := spec.Resolve(builtin.Registry(), spec.Spec{Backend: "etcd"})
	require.NoError(t, err)
	require.Equal(t, time.Second, r.Spec.TTL)
	require.Equal(t, 1, r.Spec.Members)
	require.Equal(t, spec.DefaultSeed, r.Spec.Seed)
	require.Equal(t, "trusting", r.Spec.Policy)
	require.Equal(t, "fenced", r.Spec.Resource)
	require.Equal(t, "etcd", r.Backend.Name)
	require.True(t, r.Target.Caps.Cluster, "an embedded etcd is a harness.Cluster by its Shape")
	// Service faults given alone ride on a pause: the carrier.
	r, err = spec.Resolve(builtin.Registry(), spec.Spec{Backend: "raft", Faults: []string{"leader-isolation"}})
	require.NoError(t, err)
	require.Empty(t, r.Strikes)
	require.Len(t, r.Riders, 1)
	require.Equal(t, "pause", r.Carrier.Name())
}

// Options: one of another backend is an error, one of another resource is ignored, one
// nobody declares is unknown; an option alone names its backend.
func TestSpecOptions(t *testing.T) {
	reg := builtin.Registry()
	_, err := spec.Normalize(reg, spec.Spec{Backend: "naive", Options: map[string]string{"etcd-endpoints": "127.0.0.1:1"}})
	require.ErrorContains(t, err, "--etcd-endpoints is for the etcd backend")
	n, err := spec.Normalize(reg, spec.Spec{Resource: "fenced", Options: map[string]string{"postgres-dsn": "postgres://x@127.0.0.1:1/db"}})
	require.NoError(t, err)
	require.Empty(t, n.Options)
	_, err = spec.Normalize(reg, spec.Spec{Options: map[string]string{"nope": "1"}})
	require.ErrorContains(t, err, "unknown option --nope")
	n, err = spec.Normalize(reg, spec.Spec{Options: map[string]string{"etcd-endpoints": "127.0.0.1:1"}})
	require.NoError(t, err)
	require.Equal(t, "etcd", n.Backend)
	require.Equal(t, 1, n.Members)
}

func TestKeysSpec(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    spec.Spec
		want string // "" = valid
	}{
		{"default", spec.Spec{}, ""},
		{"naive fenced", spec.Spec{Keys: 16}, ""},
		{"naive-persisted toctou", spec.Spec{Backend: "naive-persisted", Resource: "toctou", Keys: 2}, ""},
		{"negative", spec.Spec{Keys: -1}, "keys must be between 1 and 1024"},
		{"etcd", spec.Spec{Backend: "etcd", Keys: 4}, "backend etcd does not support independent keys (--keys): its lock client holds one lock only"},
		{"raft", spec.Spec{Backend: "raft", Keys: 4}, "backend raft does not support independent keys"},
		{"sqlite", spec.Spec{Resource: "sqlite", Keys: 4}, "resource sqlite does not support independent keys"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := spec.Resolve(builtin.Registry(), tc.s)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// tokenless is a backend whose tokens mean nothing: the naive server, declared
// harness.Tokenless.
type tokenless struct{ harness.Backend }

func (tokenless) NoFencingToken() string { return "its leases carry no ordering" }

// A backend without fencing tokens cannot be made safe by fencing: a fenced resource
// refuses it (exit 2), an unfenced one runs; its capabilities are its Shape's, not its
// name's.
func TestTokenlessBackend(t *testing.T) {
	reg := builtin.Registry()
	base := naive.Descriptors()[0]
	require.NoError(t, reg.AddBackend(registry.Backend{
		Name:    "tokenless",
		Meaning: "the naive server, declared without fencing tokens",
		Token:   "its leases carry no ordering",
		Lifecycle: registry.Lifecycle{
			Shape: func(registry.Settings) registry.Shape { return registry.Shape{Backend: tokenless{}} },
			Start: func(ctx context.Context, env registry.Env) (harness.Backend, error) {
				b, err := base.Start(ctx, env)
				if err != nil {
					return nil, err
				}
				return tokenless{b}, nil // hides every capability but Tokenless
			},
		},
	}))
	_, err := spec.Resolve(reg, spec.Spec{Backend: "tokenless", Resource: "fenced", Faults: []string{"pause"}})
	require.ErrorIs(t, err, spec.ErrSpec)
	require.ErrorIs(t, err, spec.ErrNoToken)
	require.ErrorContains(t, err, "no fencing token: cannot be made safe by fencing")
	_, err = spec.Resolve(reg, spec.Spec{Backend: "tokenless", Resource: "unfenced", Faults: []string{"pause"}})
	require.NoError(t, err)
	_, err = spec.Resolve(reg, spec.Spec{Backend: "tokenless", Resource: "unfenced", Faults: []string{"crash"}})
	require.ErrorContains(t, err, "which fencecheck cannot do to backend tokenless", "capabilities come from the Shape, not the name")
	require.Equal(t, []string{"harness.Crasher"}, registry.GoNames(err), "the Go name is kept for the Go front")
}

// A spec error is the user's input whichever stage finds it: errors.Is ErrSpec, one line.
func TestInputErrors(t *testing.T) {
	err := spec.Input(registry.Input(errors.New("no server answers at 127.0.0.1:1")))
	require.ErrorIs(t, err, spec.ErrSpec)
	require.ErrorIs(t, err, registry.ErrInput)
	other := errors.New("disk full")
	require.Equal(t, other, spec.Input(other), "an internal error stays internal")
	e := spec.Error{Err: other}
	require.ErrorIs(t, e, spec.ErrSpec)
	require.Equal(t, "disk full", e.Error())
}

// goName matches a Go identifier of the harness in a message: the CLI's refusals say
// what cannot be done in words, and leave the interface or field to the Go front.
var goName = regexp.MustCompile(`\b(harness|registry)\.[A-Z]|\bShape\.|MultiMember`)

// Every refusal the CLI can print for a built-in backend — each fault, in a targeted and
// a random schedule, more members, keys, the careful policy — is in words, and carries
// the Go names that would lift it for the Go front.
func TestRefusalsInWords(t *testing.T) {
	reg := builtin.Registry()
	refused, named := 0, 0
	for _, b := range reg.BackendNames() {
		specs := []spec.Spec{
			{Backend: b.Name, Members: 2},
			{Backend: b.Name, Keys: 2},
			{Backend: b.Name, Policy: "careful"},
		}
		for _, f := range reg.FaultNames() {
			specs = append(specs, spec.Spec{Backend: b.Name, Faults: []string{f.Name}}, spec.Spec{Backend: b.Name, RandomFaults: []string{f.Name}, Duration: 20 * time.Second})
		}
		for _, s := range specs {
			r, err := spec.Resolve(reg, s)
			if err == nil {
				for _, skipped := range r.Spec.Skipped {
					require.NotRegexp(t, goName, skipped, "%+v", s)
				}
				continue
			}
			refused++
			require.NotRegexp(t, goName, err.Error(), "%+v", s)
			if len(registry.GoNames(err)) > 0 {
				named++
				require.Regexp(t, goName, registry.WithGoNames(err).Error(), "%+v", s)
			}
		}
	}
	require.Positive(t, refused)
	require.Positive(t, named, "some refusals carry the Go name that would lift them")
}

// SettleTTL with a service that grants more than asked: the default TTL becomes the
// granted one, an explicit one is refused naming the TTL to use, and a granted TTL above
// the longest a run takes is refused either way (no --ttl would do).
func TestSettleTTL(t *testing.T) {
	base := naive.Descriptors()[0]
	for _, tc := range []struct {
		name           string
		granted, asked time.Duration
		want, note     string
	}{
		{"default raised", 2 * time.Second, 0, "", "grants at least 2s leases (asked for the default"},
		{"explicit raised", 2 * time.Second, time.Second, "this cluster grants at least 2s leases; use --ttl 2s", ""},
		{"default above the cap", 2 * time.Minute, 0, "above the longest TTL a run takes (1m0s)", ""},
		{"explicit above the cap", 2 * time.Minute, time.Second, "above the longest TTL a run takes (1m0s)", ""},
		{"as asked", time.Second, time.Second, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := builtin.Registry()
			d := base
			d.Name = "granting"
			d.GrantedTTL = func(context.Context, registry.Settings) (time.Duration, error) { return tc.granted, nil }
			require.NoError(t, reg.AddBackend(d))
			s, note, err := spec.ResolveTTL(context.Background(), reg, spec.Spec{Backend: "granting", TTL: tc.asked})
			if tc.want != "" {
				require.ErrorIs(t, err, spec.ErrSpec)
				require.ErrorContains(t, err, tc.want)
				return
			}
			require.NoError(t, err)
			require.Contains(t, note, tc.note)
			require.Equal(t, tc.granted, s.TTL)
		})
	}
}
