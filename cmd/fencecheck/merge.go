package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fencecheck/fencecheck/campaign"
	"github.com/fencecheck/fencecheck/internal/term"
	"github.com/fencecheck/fencecheck/judge"
	"github.com/fencecheck/fencecheck/reports"
)

// mergeFlags are `fencecheck merge`'s flags.
type mergeFlags struct {
	store   string
	partial bool
	json    bool
}

// mergeJSON is `merge --json`: one entry per merged campaign, with the document its own
// command's --json prints, and the merge's outcome and exit code.
type mergeJSON struct {
	// Outcome: "as-expected" (every shard merged, every run as expected), "differs"
	// (some run differs from its expectation), "incomplete" (a shard missing, or a run
	// failed).
	Outcome   judge.RunOutcome `json:"outcome"`
	Exit      int              `json:"exit"`
	Store     string           `json:"store"`
	Campaigns []mergedCampaign `json:"campaigns"`
}

// mergedCampaign is one campaign of a merge: its plan, which shards came from which
// store and which are missing, and its result as matrix, evaluate, compare or soak
// --json gives it.
type mergedCampaign struct {
	Kind    string        `json:"kind"`
	Plan    string        `json:"plan"`
	Shards  []mergedShard `json:"shards"`
	Missing []string      `json:"missing,omitempty"`
	Runs    int           `json:"runs"`
	Page    string        `json:"page"`
	Result  any           `json:"result"`
}

// mergedShard is one shard of a merge and the store it came from.
type mergedShard struct {
	Store string `json:"store"`
	Shard string `json:"shard"`
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
  fencecheck merge --store merged --partial shard-1 shard-3
  fencecheck merge --store merged --json shard-1 shard-2`,
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
	jsonFlag(fs, &f.json, "each merged campaign")
	setExitCodes(c, exitCodes{
		exitSafe:         "merged, and every run as expected (a scorecard: safe with fencing; a comparison: every run decided, every service with a token held with fencing)",
		exitViolated:     "merged, and some run differs from its expectation (a scorecard: not safe; a comparison: a service with a token let a stale write through the fence)",
		exitUsage:        "bad usage, or stores that cannot be merged: of different plans, a shard twice, a shard missing without --partial (nothing is written)",
		exitInternal:     "a merged run had failed, or the merged store could not be written",
		exitInconclusive: inconclusiveText + " (a scorecard or comparison whose fenced runs had no stale write attempted; a soak run that tested nothing)",
	})
	return c
}

func (a *app) merge(f *mergeFlags, stores []string) error {
	fail := a.failer(f.json)
	if err := writableDir("--store", f.store); err != nil {
		return fail(err)
	}
	merged, err := campaign.Merge(campaign.MergeConfig{Stores: stores, Out: f.store, Partial: f.partial})
	switch {
	case errors.Is(err, campaign.ErrMerge):
		return fail(badInput("%s", strings.TrimPrefix(err.Error(), campaign.ErrMerge.Error()+": ")))
	case err != nil:
		return fail(&exitError{code: exitInternal, msg: err.Error()})
	}
	out := a.stdout
	if f.json {
		out = io.Discard // the tables; the document below is stdout's only content
	}
	doc := mergeJSON{Store: f.store, Campaigns: []mergedCampaign{}}
	code, partial := exitSafe, false
	for _, m := range merged {
		p := m.Plan
		mc := mergedCampaign{Kind: p.Name, Plan: p.ShortID(), Runs: len(p.Runs) - m.NotRun, Page: m.Page}
		var from []string
		for _, s := range p.Merged {
			shard := fmt.Sprintf("%d/%d", s.Shard.I, s.Shard.N)
			from = append(from, fmt.Sprintf("%s (%s)", s.Store, shard))
			mc.Shards = append(mc.Shards, mergedShard{Store: s.Store, Shard: shard})
		}
		term.Fprintf(out, "merge: %s plan %s: %d of %d shard(s) from %s; %d run(s)\n", p.Name, p.ShortID(), len(p.Merged), len(p.Merged)+len(p.Missing), strings.Join(from, ", "), mc.Runs)
		if len(p.Missing) > 0 {
			partial = true
			mc.Missing = shardNames(p.Missing, len(p.Merged)+len(p.Missing))
			term.Fprintf(a.stderr, "fencecheck merge: PARTIAL %s: shard(s) %s missing; their %d run(s) are not in the pages\n", p.Name, strings.Join(mc.Missing, ", "), m.NotRun)
		}
		failed := exitSafe
		for _, r := range m.Failed {
			failed = worst(failed, codeOf(r.Err))
		}
		c := failed
		switch {
		case m.Soak != nil:
			soakTable(out, &m.Soak.SoakResult)
			c = soakExit(&m.Soak.SoakResult, failed)
			mc.Result = soakDoc(&m.Soak.SoakResult, c, false)
		case m.Matrix != nil:
			m.Matrix.Table(out)
			fmt.Fprintln(out, m.Matrix.SummaryLine())
			if m.Matrix.Mismatches() > 0 {
				c = worst(c, exitViolated)
			}
			mc.Result = matrixDoc(m.Matrix, c, m.Page, false)
		case m.Scorecard != nil:
			reports.PrintScorecard(out, m.Scorecard)
			c = evaluateExit(m.Scorecard, m.Failed, false, len(p.Missing) > 0)
			mc.Result = evaluateDoc(m.Scorecard, c, m.Page)
		case m.Compare != nil:
			reports.PrintComparison(out, m.Compare)
			c = compareExit(m.Compare, m.Failed, false, len(p.Missing) > 0)
			mc.Result = compareJSON{Outcome: m.Compare.Outcome(), Exit: c, Page: m.Page, Comparison: m.Compare}
		}
		term.Fprintf(out, "page: %s\n", m.Page)
		code = worst(code, c)
		doc.Campaigns = append(doc.Campaigns, mc)
	}
	term.Fprintf(out, "merged store: %s (exit %d)\n", f.store, code)
	if f.json {
		doc.Exit = code
		switch {
		case code == exitViolated:
			doc.Outcome = outcomeDiffers
		case code == exitInconclusive && !partial:
			doc.Outcome = judge.OutcomeInconclusive
		case code != exitSafe || partial:
			doc.Outcome = judge.OutcomeIncomplete
		default:
			doc.Outcome = outcomeAsExpected
		}
		if err := a.printJSON(doc); err != nil {
			return &exitError{code: exitInternal, msg: err.Error()}
		}
	}
	return withCode(code)
}

// shardNames writes shards as "2/4", "3/4".
func shardNames(is []int, n int) []string {
	var out []string
	for _, i := range is {
		out = append(out, fmt.Sprintf("%d/%d", i, n))
	}
	return out
}
