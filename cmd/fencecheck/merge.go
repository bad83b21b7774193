package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fencecheck/fencecheck/campaign"
	"github.com/fencecheck/fencecheck/reports"
)

// mergeFlags are `fencecheck merge`'s flags.
type mergeFlags struct {
	store   string
	partial bool
}

func (a *app) mergeCmd() *cobra.Command {
	f := &mergeFlags{}
	c := &cobra.Command{
		Use:   "merge [--store OUT] STORE...",
		Short: "combine the results stores of a sharded matrix, evaluate, compare or soak into one",
		Long: `Combines the results stores of the shards of a matrix, evaluate, compare or soak (each
run with --shard I/N on its own machine, docs/sharding.md) into one store: the run folders
are copied (hard-linked where the file system allows), and the store's index, every
scorecard, matrix, comparison and soak page are recomputed from the runs' own verdict.json
and history.json, never from the shards' pages. Each store's plan record (plan.json in the
campaign's folder) says which plan and shard it holds: stores of different plans, the
same shard twice or a missing shard are refused (--partial merges the shards there are,
and the pages say which are missing).`,
		Example: `  fencecheck merge --store merged shard-1 shard-2 shard-3 shard-4
  fencecheck merge --store merged --partial shard-1 shard-3`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError("name the shards' results stores to merge")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return a.merge(f, args) },
	}
	fs := c.Flags()
	fs.StringVar(&f.store, "store", defaultOut, "the merged results store (created if missing)")
	fs.BoolVar(&f.partial, "partial", false, "merge the shards there are when some are missing; the pages say which")
	setExitCodes(c, exitCodes{
		exitSafe:     "merged, and every run as expected (a scorecard: safe with fencing; a comparison: every run decided, every service with a token held with fencing)",
		exitViolated: "merged, and some run differs from its expectation (a scorecard: not safe; a comparison: a service with a token let a stale write through the fence)",
		exitUsage:    "bad usage, or stores that cannot be merged: of different plans, a shard twice, a shard missing without --partial (nothing is written)",
		exitInternal: "a merged run had failed, or the merged store could not be written",
	})
	return c
}

func (a *app) merge(f *mergeFlags, stores []string) error {
	merged, err := campaign.Merge(campaign.MergeConfig{Stores: stores, Out: f.store, Partial: f.partial})
	switch {
	case errors.Is(err, campaign.ErrMerge):
		return badInput("%s", strings.TrimPrefix(err.Error(), campaign.ErrMerge.Error()+": "))
	case err != nil:
		return &exitError{code: exitInternal, msg: err.Error()}
	}
	code := exitSafe
	for _, m := range merged {
		p := m.Plan
		var from []string
		for _, s := range p.Merged {
			from = append(from, fmt.Sprintf("%s (%d/%d)", s.Store, s.Shard.I, s.Shard.N))
		}
		fmt.Fprintf(a.stdout, "merge: %s plan %s: %d of %d shard(s) from %s; %d run(s)\n", p.Name, p.ShortID(), len(p.Merged), len(p.Merged)+len(p.Missing), strings.Join(from, ", "), len(p.Runs)-m.NotRun)
		if len(p.Missing) > 0 {
			fmt.Fprintf(a.stderr, "fencecheck merge: PARTIAL %s: shard(s) %s missing; their %d run(s) are not in the pages\n", p.Name, shardList(p.Missing, len(p.Merged)+len(p.Missing)), m.NotRun)
		}
		failed := exitSafe
		for _, r := range m.Failed {
			failed = worst(failed, codeOf(r.Err))
		}
		c := failed
		switch {
		case m.Soak != nil:
			soakTable(a.stdout, &m.Soak.SoakResult)
			if m.Soak.Mismatches() > 0 {
				c = worst(c, exitViolated)
			}
		case m.Matrix != nil:
			m.Matrix.Table(a.stdout)
			fmt.Fprintln(a.stdout, m.Matrix.SummaryLine())
			if m.Matrix.Mismatches() > 0 {
				c = worst(c, exitViolated)
			}
		case m.Scorecard != nil:
			reports.PrintScorecard(a.stdout, m.Scorecard)
			c = evaluateExit(m.Scorecard, m.Failed, false, len(p.Missing) > 0)
		case m.Compare != nil:
			reports.PrintComparison(a.stdout, m.Compare)
			c = compareExit(m.Compare, m.Failed, false, len(p.Missing) > 0)
		}
		fmt.Fprintf(a.stdout, "page: %s\n", m.Page)
		code = worst(code, c)
	}
	fmt.Fprintf(a.stdout, "merged store: %s (exit %d)\n", f.store, code)
	return withCode(code)
}

// shardList writes shards as "2/4, 3/4".
func shardList(is []int, n int) string {
	var out []string
	for _, i := range is {
		out = append(out, fmt.Sprintf("%d/%d", i, n))
	}
	return strings.Join(out, ", ")
}
