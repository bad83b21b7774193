package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/internal/term"
	"github.com/fencecheck/fencecheck/judge"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/reports"
)

// errorJSON is the JSON document of a command that could not give a verdict.
type errorJSON struct {
	Outcome judge.RunOutcome `json:"outcome"` // judge.OutcomeError
	Exit    int              `json:"exit"`
	Error   string           `json:"error"`
}

// checkJSON is one line of `check --json` (and the verdicts of `run --json`).
type checkJSON struct {
	File string `json:"file"`
	// Outcome is what the history says about the protected data (safe, unsafe,
	// inconclusive, unknown: see docs/cli.md), Exit the exit code this file alone gives
	// under --fail-on.
	Outcome     judge.RunOutcome                   `json:"outcome"`
	Exit        int                                `json:"exit"`
	Verdicts    map[models.Property]models.Verdict `json:"verdicts"`
	Results     []checkResultJSON                  `json:"results"`
	StaleWrites []models.StaleWrite                `json:"stale_writes"`
	LostUpdates []models.LostUpdate                `json:"lost_updates"`
	Evidence    models.Evidence                    `json:"evidence"`
	// Reason and Why say why an inconclusive outcome proves nothing (judge.Why).
	Reason models.Reason `json:"reason,omitempty"`
	Why    string        `json:"why,omitempty"`
	// Trouble is set when the checkers disagree or a witness was not confirmed (exit 3).
	Trouble string `json:"trouble,omitempty"`
}

// checkResultJSON is one property's verdict, its certificate and porcupine's opinion.
type checkResultJSON struct {
	Property      models.Property `json:"property"`
	Verdict       models.Verdict  `json:"verdict"`
	Certified     bool            `json:"certified"`
	Witness       []int           `json:"witness,omitempty"`
	Porcupine     models.Opinion  `json:"porcupine,omitempty"`
	PorcupineNote string          `json:"porcupine_note,omitempty"`
	Explanation   string          `json:"explanation"`
	Reason        models.Reason   `json:"reason,omitempty"`
	Why           string          `json:"why,omitempty"`
}

// newCheckJSON is the JSON document of a checked history.
func newCheckJSON(path string, rep *models.Report, code int) checkJSON {
	doc := checkJSON{File: path, Outcome: reports.Outcome(rep), Exit: code, Verdicts: rep.Verdicts,
		StaleWrites: rep.StaleWrites, LostUpdates: rep.LostUpdates, Evidence: rep.Evidence, Trouble: rep.Trouble()}
	doc.Reason, doc.Why = judge.Why(rep)
	if doc.StaleWrites == nil {
		doc.StaleWrites = []models.StaleWrite{}
	}
	if doc.LostUpdates == nil {
		doc.LostUpdates = []models.LostUpdate{}
	}
	for _, r := range rep.Results {
		doc.Results = append(doc.Results, checkResultJSON{Property: r.Property, Verdict: r.Verdict, Certified: r.Certified, Witness: r.Witness,
			Porcupine: r.Porcupine, PorcupineNote: r.PorcupineNote, Explanation: r.Explanation, Reason: r.Reason, Why: r.Why})
	}
	return doc
}

// budgetFlag is --porcupine-budget: a duration, 0 (skip porcupine) or -1 (wait for it).
type budgetFlag struct{ d time.Duration }

func (b *budgetFlag) String() string {
	switch b.d {
	case models.NoPorcupine:
		return "0"
	case models.WaitForPorcupine:
		return "-1"
	}
	return b.d.String()
}

func (b *budgetFlag) Set(s string) error {
	switch s {
	case "0":
		b.d = models.NoPorcupine
		return nil
	case "-1":
		b.d = models.WaitForPorcupine
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return fmt.Errorf("want a positive duration such as 1s, 0 (skip porcupine) or -1 (wait for it)")
	}
	b.d = d
	return nil
}

func (b *budgetFlag) Type() string { return "budget" }

// checkFlags are `fencecheck check`'s flags.
type checkFlags struct {
	json    bool
	htmlDir string
	failOn  []string
	timeout time.Duration
	budget  budgetFlag
}

func (a *app) checkCmd() *cobra.Command {
	f := &checkFlags{budget: budgetFlag{models.DefaultPorcupineBudget}}
	c := &cobra.Command{
		Use:   "check [flags] FILE...",
		Short: "re-check saved history files offline",
		Long: `Checks saved histories (history.json of a run, or any file in the format of
docs/history-format.md) offline, with no lock service: the direct analysis gives every
verdict, porcupine certifies each violation on a small witness and gives a second opinion
on the whole history within --porcupine-budget. A file above 8 MiB, and a segmented
history (a long run's: its history.json, its directory, or its segments' directory), is
checked as a stream, in little memory, without the second opinion. Every file is opened
first: a missing or malformed one is reported (file, op and field) and nothing is
checked; a streamed file malformed further on is reported when the check reaches it.`,
		Example: `  fencecheck check fencecheck-results/naive-unfenced-pause/latest/history.json
  fencecheck check --json --fail-on register,updates,tokens runs/*/history.json`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError("no history files given")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return a.check(cmd.Context(), f, args) },
	}
	fs := c.Flags()
	jsonFlag(fs, &f.json, "one document per file per line")
	fs.StringVar(&f.htmlDir, "html", "", "write verdict.json, report.html and the porcupine visualizations of each file into DIR/<file name>/")
	failOnFlag(fs, &f.failOn)
	checkTimeoutFlag(fs, &f.timeout, true)
	fs.Var(&f.budget, "porcupine-budget", "how long porcupine's second opinion may take beyond the direct analysis's answer; 0 skips it, -1 waits for it")
	a.completeCommon(c)
	setExitCodes(c, exitCodes{
		exitSafe:         "every file is safe under --fail-on",
		exitViolated:     "some file violates a property of --fail-on",
		exitUsage:        "bad usage, or a file is missing or malformed (nothing is checked)",
		exitInternal:     "the checkers disagree, a violation's witness was not confirmed, or the checker timed out",
		exitInconclusive: inconclusiveText + " (a file with no operation, no grant, no accepted write, or faults that never struck)",
	})
	return c
}

func (a *app) check(ctx context.Context, f *checkFlags, files []string) error {
	props, err := parseFailOn(f.failOn)
	if err != nil {
		return err
	}
	if f.htmlDir != "" {
		if err := writableDir("--html", f.htmlDir); err != nil {
			return err
		}
	}
	// Open every file first: one that is missing or not a history is a usage error and
	// nothing is checked. With --html each is read whole (the pages draw every op);
	// otherwise models.CheckFile checks a large one as a stream.
	hs := make([]*history.History, len(files))
	for i, path := range files {
		var err error
		if f.htmlDir != "" {
			hs[i], err = history.ReadFile(path)
		} else {
			var sc *history.Scanner
			if sc, err = history.OpenScanner(path); err == nil {
				err = sc.Close()
			}
		}
		if err != nil {
			return badInput("%v", err)
		}
	}
	code := exitSafe
	enc := json.NewEncoder(a.stdout)
	for i, path := range files {
		opt := models.Options{Timeout: f.timeout, PorcupineBudget: f.budget.d, Select: props} // --fail-on asks for an opt-in property
		var rep *models.Report
		var err error
		if hs[i] != nil {
			rep, err = models.Check(ctx, hs[i], opt)
		} else {
			var res *models.FileResult
			if res, err = models.CheckFile(ctx, path, opt); err == nil {
				rep, hs[i] = res.Report, res.History
			}
		}
		if errors.Is(err, models.ErrInvalid) {
			return badInput("%v", err)
		}
		if err != nil {
			return &exitError{code: exitInternal, msg: fmt.Sprintf("%s: %v", path, err)}
		}
		c := exitFor(rep, props)
		if f.json {
			if err := enc.Encode(newCheckJSON(path, rep, c)); err != nil {
				return &exitError{code: exitInternal, msg: err.Error()}
			}
		} else {
			term.Fprintf(a.stdout, "== %s\n", path)
			reports.Summary(a.stdout, hs[i], rep)
			fmt.Fprintln(a.stdout, resultLine(c, rep))
		}
		if f.htmlDir != "" {
			dir := filepath.Join(f.htmlDir, strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)))
			if len(files) > 1 {
				dir = filepath.Join(f.htmlDir, fmt.Sprintf("%d-%s", i+1, filepath.Base(filepath.Dir(path))))
			}
			err := os.MkdirAll(dir, 0o755)
			if err == nil {
				err = reports.WriteRun(ctx, dir, hs[i], rep)
			}
			if err != nil {
				return &exitError{code: exitInternal, msg: fmt.Sprintf("%s: write report: %v", path, err)}
			}
		}
		if tr := rep.Trouble(); tr != "" {
			term.Fprintf(a.stderr, "fencecheck check: %s: internal error, please report this history: %s\n", path, tr)
		}
		code = worst(code, c)
	}
	return withCode(code)
}
