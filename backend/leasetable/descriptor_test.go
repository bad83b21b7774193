package leasetable

import (
	"context"
	"maps"
	"testing"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/proc"
	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/harnesstest"
)

// withOptions is d as a run with opts on its command line starts it.
func withOptions(d registry.Backend, opts map[string]string) registry.Backend {
	set := func(s registry.Settings) registry.Settings {
		s.Options = maps.Clone(opts)
		return s.WithOptions(d.Options)
	}
	check, shape, needs, start := d.Check, d.Shape, d.Needs, d.Start
	d.Check = func(s registry.Settings) error { return check(set(s)) }
	d.Shape = func(s registry.Settings) registry.Shape { return shape(set(s)) }
	d.Needs = func(s registry.Settings) []proc.Need { return needs(set(s)) }
	d.Start = func(ctx context.Context, env registry.Env) (harness.Backend, error) {
		env.Settings = set(env.Settings)
		return start(ctx, env)
	}
	return d
}

// The contract suite on both descriptors, on SQLite and on a private PostgreSQL.
func TestDescriptorContract(t *testing.T) {
	for _, st := range stores {
		for _, d := range Descriptors() {
			t.Run(st.name+"/"+d.Name, func(t *testing.T) {
				d := withOptions(d, st.opts)
				if why := d.Unavailability(registry.Settings{}); why != "" {
					t.Skip(why)
				}
				t.Parallel() // each starts its own store
				harnesstest.Descriptor(t, d)
			})
		}
	}
}
