package main

import (
	"flag"

	"github.com/fencecheck/fencecheck/harness/registry"
)

// The flags several commands share are declared here, once; each command says only what
// its seed seeds and where its results go.

// seedFlag is --seed; of says what it seeds.
func seedFlag(fs *flag.FlagSet, of string) *int64 {
	return fs.Int64("seed", 1, "seed of "+of)
}

// outFlag is --out, the results store (or evidence folder) with its default.
func outFlag(fs *flag.FlagSet, def, usage string) *string {
	return fs.String("out", def, usage)
}

// parallelFlag is --parallel: runs at a time.
func parallelFlag(fs *flag.FlagSet, what string) *int {
	return fs.Int("parallel", 1, what+" at a time (timing-sensitive faults are most faithful at 1)")
}

// verboseFlag is -v.
func verboseFlag(fs *flag.FlagSet, usage string) *bool {
	return fs.Bool("v", false, usage)
}

// optionFlags declares one flag per backend or resource option in the registry
// (--etcd-endpoints, --postgres-dsn, ...) and returns the function that collects the
// ones given after parsing.
func optionFlags(fs *flag.FlagSet, reg *registry.Registry) func() map[string]string {
	vals := map[string]*string{}
	for _, o := range reg.Options() {
		vals[o.Name] = fs.String(o.Name, "", o.Usage)
	}
	return func() map[string]string {
		var out map[string]string
		fs.Visit(func(f *flag.Flag) {
			if v, ok := vals[f.Name]; ok {
				if out == nil {
					out = map[string]string{}
				}
				out[f.Name] = *v
			}
		})
		return out
	}
}

// checkParallel refuses a --parallel outside 1..8.
func checkParallel(n int) bool { return n >= 1 && n <= 8 }
