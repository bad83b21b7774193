package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fencecheck/fencecheck/campaign"
	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/judge"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/spec"
)

// The flags several commands share are declared here, once, with one name per concept
// across commands: --scenario (names or all), --fault (fault names), --out (the results
// store), --seed, --parallel, --check-timeout (the checker's ceiling), --json, -v, and
// one flag per registry option. Older spellings stay as hidden aliases that say what
// replaced them.

// defaultOut is the results store when --out is not given.
const defaultOut = "fencecheck-results"

// seedFlag is --seed; of says what it seeds.
func seedFlag(fs *pflag.FlagSet, p *int64, of string) {
	fs.Int64Var(p, "seed", 1, "seed of "+of)
}

// outFlag is --out, the results store (or evidence folder) with its default.
func outFlag(fs *pflag.FlagSet, p *string, def, usage string) {
	fs.StringVar(p, "out", def, usage)
}

// parallelFlag is --parallel: runs at a time.
func parallelFlag(fs *pflag.FlagSet, p *int, what string) {
	fs.IntVar(p, "parallel", 1, what+" at a time, 1 to 8 (timing-sensitive faults are most faithful at 1)")
}

// autoParallelFlag is --parallel for a command whose runs go several at a time unless
// told otherwise: 0 (the default) is campaign.DefaultParallel, what the machine takes.
func autoParallelFlag(fs *pflag.FlagSet, p *int, what string) {
	fs.IntVar(p, "parallel", 0, what+" at a time, 1 to 8 (default: 2 per CPU, at most 8; 1 runs each alone)")
}

// shardFlag is --shard I/N: run only the I-th of N shards of the command's plan
// (campaign.Shard). A value that is not I/N with 1 ≤ I ≤ N is refused as the flag is
// parsed (one line, exit 2).
func shardFlag(fs *pflag.FlagSet, p *campaign.Shard) {
	fs.Var((*shardValue)(p), "shard", "run only shard I of N of the plan (I/N, e.g. 2/4: every 4th run, from the 2nd); the store records the shard and the plan for 'fencecheck merge' (docs/sharding.md)")
}

// shardValue is a campaign.Shard as a flag's value.
type shardValue campaign.Shard

func (v *shardValue) String() string { return campaign.Shard(*v).String() }
func (v *shardValue) Type() string   { return "I/N" }
func (v *shardValue) Set(s string) error {
	sh, err := campaign.ParseShard(s)
	if err != nil {
		return err
	}
	*v = shardValue(sh)
	return nil
}

// verboseFlag is -v/--verbose.
func verboseFlag(fs *pflag.FlagSet, p *bool, usage string) {
	fs.BoolVarP(p, "verbose", "v", false, usage)
}

// jsonFlag is --json: stdout is JSON with the overall outcome and exit code.
func jsonFlag(fs *pflag.FlagSet, p *bool, what string) {
	fs.BoolVar(p, "json", false, "print "+what+" as JSON on stdout, with the overall \"outcome\" and \"exit\" code (progress goes to stderr)")
}

// checkTimeoutFlag is --check-timeout, the checker's hard ceiling; alias adds --timeout,
// its old spelling on check and report.
func checkTimeoutFlag(fs *pflag.FlagSet, p *time.Duration, alias bool) {
	fs.DurationVar(p, "check-timeout", 0, "hard ceiling on porcupine's second opinion of each property (0: none beyond its budget)")
	if alias {
		fs.DurationVar(p, "timeout", 0, "")
		deprecate(fs, "timeout", "check-timeout")
	}
}

// deprecatedFlag marks an old flag name with what replaced it.
const deprecatedFlag = "fencecheck-deprecated"

// deprecate hides an old flag name; using it works and says on stderr what replaced it
// (warnDeprecated).
func deprecate(fs *pflag.FlagSet, old, now string) {
	_ = fs.SetAnnotation(old, deprecatedFlag, []string{now})
	fs.Lookup(old).Hidden = true
}

// warnDeprecated says which old flag names a command line used.
func (a *app) warnDeprecated(c *cobra.Command) {
	c.Flags().Visit(func(f *pflag.Flag) {
		if now, ok := f.Annotations[deprecatedFlag]; ok {
			fmt.Fprintf(a.stderr, "%s: --%s is deprecated; use --%s\n", c.CommandPath(), f.Name, now[0])
		}
	})
}

// optionFlags declares one flag per backend or resource option in the registry
// (--etcd-endpoints, --postgres-dsn, ...) and returns the function that collects the
// ones given after parsing.
func (a *app) optionFlags(fs *pflag.FlagSet) func() map[string]string {
	vals := map[string]*string{}
	for _, o := range a.reg.Options() {
		vals[o.Name] = fs.String(o.Name, "", o.Usage)
		_ = fs.SetAnnotation(o.Name, optionGroup, []string{"true"})
	}
	return func() map[string]string {
		var out map[string]string
		fs.Visit(func(f *pflag.Flag) {
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

// failOnFlag is --fail-on.
func failOnFlag(fs *pflag.FlagSet, p *[]string) {
	var all, optIn []string
	for _, q := range models.AllProperties {
		all = append(all, string(q))
		if q.OptIn() {
			optIn = append(optIn, string(q))
		}
	}
	help := "properties whose violation makes the exit code 1 (of " + strings.Join(all, ", ") + ")"
	if len(optIn) > 0 {
		help += "; " + strings.Join(optIn, ", ") + " is checked only when named here"
	}
	fs.StringSliceVar(p, "fail-on", []string{"register", "updates"}, help)
}

// names of the registry's backends, resources, faults, policies and the catalogue's
// scenarios, for checks, suggestions and shell completion.
func namesOf(list []registry.Named) []string {
	out := make([]string, len(list))
	for i, n := range list {
		out[i] = n.Name
	}
	return out
}

func (a *app) backendNames() []string {
	var out []string
	for _, b := range a.reg.Backends() {
		out = append(out, b.Name)
	}
	return out
}

func (a *app) resourceNames() []string {
	var out []string
	for _, r := range a.reg.Resources() {
		out = append(out, r.Name)
	}
	return out
}

func (a *app) faultNames() []string {
	var out []string
	for _, f := range a.reg.Faults() {
		out = append(out, f.Name())
	}
	return out
}

func (a *app) scenarioNames() []string {
	var out []string
	for _, s := range a.cat {
		out = append(out, s.Name)
	}
	return out
}

// complete returns a completion function over names; for a comma-separated list flag
// it completes the last element.
func complete(names func() []string) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		prefix := ""
		if i := strings.LastIndex(toComplete, ","); i >= 0 {
			prefix, toComplete = toComplete[:i+1], toComplete[i+1:]
		}
		var out []cobra.Completion
		for _, n := range names() {
			if strings.HasPrefix(n, toComplete) {
				out = append(out, prefix+n)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	}
}

// completeNames registers name completion for flags of c.
func completeNames(c *cobra.Command, names func() []string, flags ...string) {
	for _, f := range flags {
		if c.Flags().Lookup(f) != nil {
			_ = c.RegisterFlagCompletionFunc(f, complete(names))
		}
	}
}

// completeCommon registers completion of the names every running command shares.
func (a *app) completeCommon(c *cobra.Command) {
	completeNames(c, a.backendNames, "backend", "lock-service")
	completeNames(c, a.resourceNames, "resource")
	completeNames(c, a.faultNames, "fault", "faults")
	completeNames(c, func() []string { return append(a.scenarioNames(), "all") }, "scenario", "scenarios")
	completeNames(c, func() []string { return namesOf(spec.Policies()) }, "policy")
	completeNames(c, func() []string {
		var out []string
		for _, p := range models.AllProperties {
			out = append(out, string(p))
		}
		return out
	}, "fail-on")
	completeNames(c, func() []string { return []string{"strict", "monotonic"} }, "fence")
}

// noArgs refuses arguments, saying which flag chooses instead.
func noArgs(hint string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) > 0 {
			return usageError("unexpected arguments %q (%s)", args, hint)
		}
		return nil
	}
}

// plural is "s" unless n is 1.
func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// sharding is what a shard's page says of its plan (nil for the whole plan).
func sharding(p *campaign.Plan) *judge.Sharding {
	if p == nil || p.Shard.Whole() {
		return nil
	}
	return &judge.Sharding{Plan: p.ID, Shard: p.Shard.String(), Of: p.Shard.N}
}

// shardNote is " (shard I/N of plan ID)" for a shard's summary line, else "".
func shardNote(p *campaign.Plan) string {
	if p == nil || p.Shard.Whole() {
		return ""
	}
	return fmt.Sprintf(" (shard %s of plan %s)", p.Shard, p.ShortID())
}
