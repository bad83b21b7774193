package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/fencecheck/fencecheck/campaign"
	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/internal/term"
	"github.com/fencecheck/fencecheck/judge"
	"github.com/fencecheck/fencecheck/spec"
)

// zooFlags are `fencecheck zoo`'s flags.
type zooFlags struct {
	soakCommon
	bugs    []string
	options func() map[string]string
}

// zooJSON is `zoo --json`: a row per entry run, the entries skipped here, the soak of
// their scenarios it was judged from, its outcome and exit code.
type zooJSON struct {
	// Outcome: "as-expected" (every bug detected, every control held), "differs",
	// "inconclusive" (a run tested nothing) or "incomplete" (a run failed, or the zoo
	// was interrupted).
	Outcome judge.RunOutcome     `json:"outcome"`
	Exit    int                  `json:"exit"`
	Entries []catalogue.ZooRow   `json:"entries"`
	Skipped []zooSkip            `json:"skipped"`
	Soak    *campaign.SoakResult `json:"soak"`
}

// zooSkip is an entry whose software this machine lacks.
type zooSkip struct {
	ID  string `json:"id"`
	Why string `json:"why"`
}

func (a *app) zooCmd() *cobra.Command {
	f := &zooFlags{}
	c := &cobra.Command{
		Use:   "zoo",
		Short: "reproduce the lock bugs teams reported, each beside a control that must hold",
		Long: `Runs the bug zoo (docs/zoo.md): lock bugs and hazards reported in the trackers of the
lock services and libraries teams use, and fencecheck's own findings, each reproduced on
the real software beside a control (the fixed version, or the configuration that avoids
it). Every entry runs its bug and its control N times (seeds 1..N); a row says in how many
runs the property that catches the bug was violated, and in how many the control held
it. Entries whose software is missing here are skipped, each named on stderr with what
it needs. The runs are a soak: --out, --shard and 'fencecheck merge' work as for soak.`,
		Example: `  fencecheck zoo                               # every entry that can run here, once
  fencecheck zoo --bug cilium-42920 --runs 20
  fencecheck zoo --runs 20 --shard 1/2 --out store-1   # and 2/2 elsewhere; then fencecheck merge`,
		Args: noArgs("choose entries with --bug"),
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runZoo(cmd, f) },
	}
	fs := c.Flags()
	fs.StringSliceVar(&f.bugs, "bug", nil, "entries by ID, comma-separated (default: every entry that can run here)")
	fs.IntVar(&f.runs, "runs", 1, fmt.Sprintf("runs of each entry's bug and control, with seeds 1..N (1 to %d); docs/zoo.md's figures are --runs 20", maxSoakRuns))
	outFlag(fs, &f.out, defaultOut, "results store: every run goes to DIR/zoo-<id>[-control]/<timestamp>/, the zoo's soak page to DIR/soak/<timestamp>/index.html (empty: a temporary folder keeps only the runs that differ)")
	checkTimeoutFlag(fs, &f.checkTimeout, false)
	parallelFlag(fs, &f.parallel, "runs")
	jsonFlag(fs, &f.json, "the rows")
	verboseFlag(fs, &f.verbose, "log every run's progress to stderr as well as to its run.log")
	shardFlag(fs, &f.shard)
	f.options = a.optionFlags(fs)
	a.completeCommon(c)
	completeNames(c, func() []string { return a.bugs.IDs() }, "bug")
	setExitCodes(c, exitCodes{
		exitSafe:         "every bug detected and every control held",
		exitViolated:     "a bug was missed, or a control's property was violated (a false alarm)",
		exitUsage:        "bad input, an entry asked for that cannot run here, or an interrupt",
		exitInternal:     "a run failed to complete (fencecheck's own failure)",
		exitInconclusive: inconclusiveText + ": a run tested nothing (no grant, no accepted write, the fault never struck)",
	})
	return c
}

func (a *app) runZoo(cmd *cobra.Command, f *zooFlags) error {
	fail := a.failer(f.json)
	if err := f.check(); err != nil {
		return fail(err)
	}
	entries, skipped, err := a.selectBugs(trimList(f.bugs), f.options())
	if err != nil {
		return fail(err)
	}
	var list []catalogue.Scenario
	for _, b := range entries {
		bug, control := b.Scenarios()
		list = append(list, bug, control)
	}
	done, err := a.runSoak(cmd.Context(), "zoo", &f.soakCommon, list, false, func(r campaign.SoakRun) string {
		switch {
		case r.Err != "":
			return "ERROR: " + r.Err
		case len(r.Diffs) > 0:
			return "DIFFERS: " + strings.Join(r.Diffs, "; ")
		}
		return ""
	})
	if err != nil {
		return fail(err)
	}
	defer done.pageLine()
	rows := a.bugs.Rows(done.res)
	if f.json {
		doc := zooJSON{Outcome: soakDoc(done.res, done.code, done.interrupted).Outcome, Exit: done.code, Entries: rows, Skipped: skipped, Soak: done.res}
		if doc.Entries == nil {
			doc.Entries = []catalogue.ZooRow{}
		}
		if doc.Skipped == nil {
			doc.Skipped = []zooSkip{}
		}
		if err := a.printJSON(doc); err != nil {
			return &exitError{code: exitInternal, msg: err.Error()}
		}
	} else {
		zooTable(done.out, rows)
		entries := "entries"
		if len(rows) == 1 {
			entries = "entry"
		}
		fmt.Fprintf(done.out, "zoo: %d %s × %d run(s) of the bug and of its control%s in %s\n", len(rows), entries, done.res.Runs, shardNote(done.plan), time.Since(done.began).Round(time.Second))
	}
	a.soakClosing("zoo", "not as their entry says: a bug missed or a control's false alarm", done)
	return withCode(done.code)
}

// selectBugs resolves --bug IDs (all when none): each entry with the registry options
// its backend or resource takes. An entry whose software is missing is skipped (named
// on stderr) when all were asked for, and bad input when named.
func (a *app) selectBugs(ids []string, opts map[string]string) ([]catalogue.Bug, []zooSkip, error) {
	picked := []catalogue.Bug(a.bugs)
	if len(ids) > 0 {
		picked = nil
		for _, id := range ids {
			b, ok := a.bugs.Lookup(id)
			if !ok {
				return nil, nil, checkName("zoo entry", id, a.bugs.IDs())
			}
			picked = append(picked, b)
		}
	}
	used := map[string]bool{}
	var out []catalogue.Bug
	var skipped []zooSkip
	for _, b := range picked {
		bug, control := b.Scenarios()
		b.Spec = a.withOptions(bug, opts, used).Spec
		b.Control = a.withOptions(control, opts, used).Spec
		why := spec.Unavailable(a.reg, b.Spec)
		if why == "" {
			why = spec.Unavailable(a.reg, b.Control)
		}
		if why != "" {
			if len(ids) > 0 {
				return nil, nil, badInput("zoo entry %s cannot run here: %s", b.ID, why)
			}
			fmt.Fprintf(a.stderr, "fencecheck zoo: skipping %s: %s\n", b.ID, why)
			skipped = append(skipped, zooSkip{ID: b.ID, Why: why})
			continue
		}
		out = append(out, b)
	}
	if err := a.unusedOption(opts, used); err != nil {
		return nil, nil, err
	}
	if len(out) == 0 {
		return nil, nil, badInput("no zoo entry can run here (see 'fencecheck doctor')")
	}
	return out, skipped, nil
}

// zooTable prints one row per entry.
func zooTable(w io.Writer, rows []catalogue.ZooRow) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "entry\treference\tproperty\tdetected\tcontrol false alarms\tcontrol held\tfirst detection p50\terrors")
	for _, r := range rows {
		first := "-"
		if r.FirstDetection.N > 0 {
			first = judge.Duration(r.FirstDetection.P50ns)
		}
		term.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%d/%d\t%d/%d\t%s\t%d\n", r.ID, r.Ref, r.Property, r.Detected, r.Runs,
			r.FalseAlarms, r.ControlRuns, r.ControlHeld, r.ControlRuns, first, r.Errors)
	}
	tw.Flush()
}
