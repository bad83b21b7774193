package fencecheck_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck"
	"github.com/fencecheck/fencecheck/backend/naive"
	"github.com/fencecheck/fencecheck/builtin"
	"github.com/fencecheck/fencecheck/campaign"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/nemesis/faults"
	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/spec"
)

// userlock is a backend as a user declares it: no optional interface, its own name and
// token words. Its values are only ever looked at (Shape, a probe), never run.
type userlock struct{ name string }

func (u userlock) Name() string      { return u.name }
func (userlock) Endpoints() []string { return nil }
func (userlock) Close() error        { return nil }
func (userlock) NewLocker(context.Context, int, []string) (harness.Locker, error) {
	return userLocker{}, nil
}

type userLocker struct{}

func (userLocker) Acquire(context.Context) (harness.Lease, error) { return userLease{}, nil }
func (userLocker) Close() error                                   { return nil }

type userLease struct{}

func (userLease) Token() int64                  { return 7 }
func (userLease) TTL() time.Duration            { return 2 * time.Second }
func (userLease) Lost() <-chan struct{}         { return nil }
func (userLease) Release(context.Context) error { return nil }

// tokenlessUserlock grants without fencing tokens.
type tokenlessUserlock struct{ userlock }

func (tokenlessUserlock) NoFencingToken() string { return "its grants carry no number" }

const userToken = "userlock's grant counter"

func userDescriptor() registry.Backend {
	return registry.Backend{
		Name:    "userlock",
		Meaning: "a user's lock",
		Token:   userToken,
		Lifecycle: registry.Lifecycle{
			Start: func(context.Context, registry.Env) (harness.Backend, error) {
				return nil, errors.New("userlock is never started by these tests")
			},
			Shape: func(registry.Settings) registry.Shape {
				return registry.Shape{Backend: userlock{}, Locker: userLocker{}, Lease: userLease{}}
			},
		},
	}
}

// builtinNames matches, as whole words, the name of any built-in backend.
func builtinNames(t *testing.T) *regexp.Regexp {
	var names []string
	for _, n := range builtin.Registry().BackendNames() {
		names = append(names, regexp.QuoteMeta(n.Name))
	}
	return regexp.MustCompile(`\b(` + strings.Join(names, "|") + `)\b`)
}

// mentionsNoBuiltin fails the test when an error a user's backend got names a built-in
// backend.
func mentionsNoBuiltin(t *testing.T, re *regexp.Regexp, what string, err error) {
	t.Helper()
	require.Error(t, err, what)
	if m := re.FindString(err.Error()); m != "" {
		t.Errorf("%s: the error names the built-in backend %q: %v", what, m, err)
	}
}

// The plan of a user's backend lists its own faults and token words, the ones
// ApplicableFaults gives for it.
func TestPlanOfAUserBackend(t *testing.T) {
	ctx := context.Background()
	p, err := fencecheck.Plan(ctx, fencecheck.Config{Backend: userDescriptor(), Store: t.TempDir()})
	require.NoError(t, err)
	require.Equal(t, userToken, p.Scorecard.Token)
	require.Equal(t, "userlock", p.Scorecard.Backend)
	reg, err := fencecheck.Registry(userDescriptor())
	require.NoError(t, err)
	applicable := campaign.ApplicableFaults(reg, "userlock", "fenced", nil)
	require.Contains(t, applicable, "pause")
	var rows []string
	for _, r := range p.Scorecard.Rows {
		rows = append(rows, r.Fault)
	}
	require.Equal(t, applicable, rows)
	for _, j := range p.Jobs {
		require.Equal(t, "userlock", j.Spec.Backend)
		require.Equal(t, spec.DefaultSeed, j.Spec.Seed, "an evaluation's runs take the seed an ad-hoc run takes")
	}
	// Without words of its own, the token is named after the backend.
	d := userDescriptor()
	d.Token = ""
	p, err = fencecheck.Plan(ctx, fencecheck.Config{Backend: d, Store: t.TempDir()})
	require.NoError(t, err)
	require.Equal(t, "userlock's lease token", p.Scorecard.Token)
}

// Every refusal a user's backend can meet names what to implement or set, and never a
// built-in backend.
func TestRefusalsOfAUserBackend(t *testing.T) {
	ctx := context.Background()
	re := builtinNames(t)
	reg, err := fencecheck.Registry(userDescriptor())
	require.NoError(t, err)
	applicable := campaign.ApplicableFaults(reg, "userlock", "fenced", nil)
	store := t.TempDir()
	cfg := func(edit func(*fencecheck.Config)) fencecheck.Config {
		c := fencecheck.Config{Backend: userDescriptor(), Store: store}
		edit(&c)
		return c
	}
	// Each fault that does not apply, in a plan and in a run.
	refused := 0
	for _, f := range faults.All() {
		if slices.Contains(applicable, f.Name()) {
			continue
		}
		refused++
		_, err := fencecheck.Plan(ctx, cfg(func(c *fencecheck.Config) { c.Faults = []string{f.Name()} }))
		mentionsNoBuiltin(t, re, "plan "+f.Name(), err)
		require.ErrorIs(t, err, spec.ErrSpec)
		require.Regexp(t, `harness\.|registry\.|--`, err.Error(), "fault %s: the refusal names the interface, descriptor field or option that would make it apply", f.Name())
		_, err = fencecheck.Run(ctx, cfg(func(c *fencecheck.Config) { c.Faults = []string{f.Name()} }))
		mentionsNoBuiltin(t, re, "run "+f.Name(), err)
		require.ErrorIs(t, err, spec.ErrSpec)
	}
	require.Positive(t, refused, "a backend without capabilities must be refused some faults")

	for _, tc := range []struct {
		name string
		edit func(*fencecheck.Config)
		want string
	}{
		{"members", func(c *fencecheck.Config) { c.Members = 3 }, "MultiMember"},
		{"keys", func(c *fencecheck.Config) { c.Keys = 4 }, "harness.KeyedLocker"},
		{"careful", func(c *fencecheck.Config) { c.Policy = "careful" }, "harness.Expiring"},
		{"unknown fault", func(c *fencecheck.Config) { c.Faults = []string{"meteor"} }, "unknown fault"},
		{"unknown resource", func(c *fencecheck.Config) { c.Resource = "tape" }, "tape"},
		{"unknown option", func(c *fencecheck.Config) { c.Options = map[string]string{"colour": "red"} }, "colour"},
		{"registry without it", func(c *fencecheck.Config) { c.Backend = registry.Backend{Name: "userlock2"}; c.Registry = reg }, "backend userlock2 is not in this registry; registered: userlock"},
		{"bad policy", func(c *fencecheck.Config) { c.Policy = "hopeful" }, "hopeful"},
	} {
		_, err := fencecheck.Run(ctx, cfg(tc.edit))
		mentionsNoBuiltin(t, re, tc.name, err)
		require.ErrorIs(t, err, spec.ErrSpec, tc.name)
		require.ErrorContains(t, err, tc.want, tc.name)
	}

	// A backend without tokens: the fenced register is refused in its own words.
	d := userDescriptor()
	d.Token = "no token: its grants carry no number"
	d.Shape = func(registry.Settings) registry.Shape {
		return registry.Shape{Backend: tokenlessUserlock{}, Locker: userLocker{}, Lease: userLease{}}
	}
	_, err = fencecheck.Run(ctx, fencecheck.Config{Backend: d, Store: store, Resource: "fenced"})
	mentionsNoBuiltin(t, re, "tokenless fenced", err)
	require.ErrorIs(t, err, spec.ErrNoToken)
	require.ErrorContains(t, err, "its grants carry no number")
	p, err := fencecheck.Plan(ctx, fencecheck.Config{Backend: d, Store: store})
	require.NoError(t, err)
	require.Equal(t, "no token: its grants carry no number", p.Scorecard.NoToken)
	for _, j := range p.Jobs {
		require.NotEqual(t, "fenced", j.Resource, "no fenced run of a backend without tokens")
	}
}

// Validate names each unset or mismatched field; a configuration that runs has none.
func TestValidate(t *testing.T) {
	reg, err := fencecheck.Registry(userDescriptor())
	require.NoError(t, err)
	started := userlock{name: "userlock"}
	for _, tc := range []struct {
		cfg  fencecheck.Config
		want []string
	}{
		{fencecheck.Config{}, []string{"Backend: unset", "Store: unset"}},
		{fencecheck.Config{Backend: registry.Backend{Name: "x"}, Store: "s"}, []string{"Backend.Start: unset"}},
		{fencecheck.Config{Backend: userDescriptor(), Registry: reg, Store: "s"}, []string{`Registry: already has a backend "userlock"`}},
		{fencecheck.Config{Backend: userDescriptor(), Started: started, Store: "s"}, []string{"Backend.Start: set together with Started"}},
		{fencecheck.Config{Backend: registry.Backend{Name: "other"}, Started: started, Store: "s"}, []string{`Backend.Name: "other", but Started.Name() is "userlock"`}},
		{fencecheck.Config{Started: started, Store: "s", Parallel: 2}, []string{"Parallel: 2"}},
		{fencecheck.Config{Backend: userDescriptor(), Store: "s", TTL: -1, Clients: -2}, []string{"TTL: negative", "Clients: negative"}},
	} {
		err := tc.cfg.Validate()
		require.ErrorIs(t, err, spec.ErrSpec)
		for _, w := range tc.want {
			require.ErrorContains(t, err, w)
		}
		require.NotContains(t, err.Error(), "\n")
	}
	for _, ok := range []fencecheck.Config{
		{Backend: userDescriptor(), Store: "s"},
		{Backend: registry.Backend{Name: "userlock"}, Registry: reg, Store: "s"},
		{Started: started, Store: "s"},
		{Started: started, Backend: registry.Backend{Token: userToken}, Store: "s"},
	} {
		require.NoError(t, ok.Validate())
	}
}

// A started backend is probed once: its lease's TTL becomes the runs' TTL, and a TTL
// that disagrees is refused.
func TestStartedIsProbed(t *testing.T) {
	ctx := context.Background()
	started := userlock{name: "userlock"}
	p, err := fencecheck.Plan(ctx, fencecheck.Config{Started: started, Backend: registry.Backend{Token: userToken}, Store: t.TempDir()})
	require.NoError(t, err)
	require.Equal(t, userToken, p.Scorecard.Token)
	require.Equal(t, (2 * time.Second).Nanoseconds(), p.Scorecard.TTLNanos)
	_, err = fencecheck.Plan(ctx, fencecheck.Config{Started: started, TTL: time.Second, Store: t.TempDir()})
	require.ErrorIs(t, err, spec.ErrSpec)
	require.ErrorContains(t, err, "TTL: 1s, but Started granted a lease of TTL 2s")
	_, err = fencecheck.Run(ctx, fencecheck.Config{Started: started, Members: 3, Store: t.TempDir()})
	require.ErrorContains(t, err, "MultiMember")
}

// A name missing from the Registry is said directly, with the names it has.
func TestNameNotInRegistry(t *testing.T) {
	reg, err := fencecheck.Registry(userDescriptor())
	require.NoError(t, err)
	empty, err := fencecheck.Registry()
	require.NoError(t, err)
	for _, tc := range []struct {
		reg  *registry.Registry
		want string
	}{
		{reg, "backend tinylock is not in this registry; registered: userlock"},
		{empty, "backend tinylock is not in this registry; registered: none"},
	} {
		err := fencecheck.Config{Backend: registry.Backend{Name: "tinylock"}, Registry: tc.reg, Store: "s"}.Validate()
		require.ErrorIs(t, err, spec.ErrSpec)
		require.ErrorContains(t, err, tc.want)
		require.NotContains(t, err.Error(), "Backend.Start", "the missing name is the error, not a missing Start")
	}
}

// Plan runs nothing and writes nothing: it needs no Store, and returns the plan's
// documented type.
func TestPlanNeedsNoStore(t *testing.T) {
	ctx := context.Background()
	var p *fencecheck.EvaluationPlan
	p, err := fencecheck.Plan(ctx, fencecheck.Config{Backend: userDescriptor()})
	require.NoError(t, err)
	require.Equal(t, "evaluate-userlock", p.Name)
	require.NotEmpty(t, p.Jobs)
	var same *campaign.EvaluatePlan = p // an alias: code written against campaign's type still compiles
	require.NotNil(t, same)
	// Run and Evaluate still need one.
	require.ErrorContains(t, fencecheck.Config{Backend: userDescriptor()}.Validate(), "Store: unset")
	_, err = fencecheck.Run(ctx, fencecheck.Config{Backend: userDescriptor()})
	require.ErrorContains(t, err, "Store: unset")
	_, err = fencecheck.Evaluate(ctx, fencecheck.Config{Backend: userDescriptor()})
	require.ErrorContains(t, err, "Store: unset")
}

// shapeless is the naive backend's descriptor (whose started value is a
// harness.Crasher) without its Shape, or with shape instead.
func shapeless(shape func(registry.Settings) registry.Shape) registry.Backend {
	d := naive.Descriptors()[0]
	d.Shape = shape
	return d
}

// A descriptor that states no Shape is refused a fault, policy or setting its values
// may well support with words that say the Shape is missing and how to set it, not
// that the values lack the interface.
func TestMissingShapeRefusals(t *testing.T) {
	ctx := context.Background()
	empty := func(registry.Settings) registry.Shape { return registry.Shape{} }
	for _, tc := range []struct {
		name   string
		shape  func(registry.Settings) registry.Shape
		edit   func(*fencecheck.Config)
		want   string
		goName string
	}{
		{"no Shape, crash", nil, func(c *fencecheck.Config) { c.Faults = []string{"crash"} }, "has no Shape", "harness.Crasher"},
		{"empty Shape, crash", empty, func(c *fencecheck.Config) { c.Faults = []string{"crash"} }, "has a Shape that gives no Backend value", "harness.Crasher"},
		{"no Shape, skew", nil, func(c *fencecheck.Config) { c.Faults = []string{"skew"} }, "has no Shape", "registry.ServiceClocked (or registry.FastClocked: a clock run fast from the server's start)"},
		{"no Shape, careful", nil, func(c *fencecheck.Config) { c.Policy = "careful" }, "has no Shape", "harness.Expiring (its leases)"},
		{"no Shape, keys", nil, func(c *fencecheck.Config) { c.Keys = 2 }, "has no Shape", "harness.KeyedLocker (its lockers)"},
	} {
		c := fencecheck.Config{Backend: shapeless(tc.shape), Store: t.TempDir()}
		tc.edit(&c)
		_, err := fencecheck.Run(ctx, c)
		require.ErrorIs(t, err, spec.ErrSpec, tc.name)
		require.ErrorContains(t, err, "backend naive's descriptor "+tc.want, tc.name)
		require.ErrorContains(t, err, "set its Shape to return values of the types its Start, NewLocker and Acquire return", tc.name)
		require.Equal(t, []string{"registry.Backend.Shape", tc.goName}, registry.GoNames(err), tc.name)
		require.ErrorContains(t, err, "(in Go: registry.Backend.Shape, "+tc.goName+")", tc.name)
		require.NotContains(t, err.Error(), "\n", tc.name)
	}
	// In a plan too.
	_, err := fencecheck.Plan(ctx, fencecheck.Config{Backend: shapeless(nil), Faults: []string{"crash"}})
	require.ErrorContains(t, err, "backend naive's descriptor has no Shape")
	// With its Shape, the same descriptor is planned with what its values have.
	_, err = fencecheck.Plan(ctx, fencecheck.Config{Backend: naive.Descriptors()[0], Faults: []string{"crash"}})
	require.NoError(t, err)
}

// A run that needs no capability goes on without a Shape, and its log says the Shape
// is missing and what the started value has; its Result names its label.
func TestMissingShapeRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a pause")
	}
	var log bytes.Buffer
	store := t.TempDir()
	res, err := fencecheck.Run(context.Background(), fencecheck.Config{
		Backend: shapeless(nil), Faults: []string{"pause"}, Store: store, Log: &log,
	})
	require.NoError(t, err)
	require.Contains(t, log.String(), "backend naive's descriptor has no Shape")
	require.Contains(t, log.String(), "Crasher: Shape false, started true")
	require.Equal(t, "naive-fenced-pause", res.Label)
	require.Equal(t, filepath.Join(store, res.Label), filepath.Dir(res.Dir))
}
