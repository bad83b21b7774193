package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/reports"
)

// checkJSON is one line of `check --json`.
type checkJSON struct {
	File        string                             `json:"file"`
	Verdicts    map[models.Property]models.Verdict `json:"verdicts"`
	Results     []checkResultJSON                  `json:"results"`
	StaleWrites []models.StaleWrite                `json:"stale_writes"`
	LostUpdates []models.LostUpdate                `json:"lost_updates"`
	Evidence    models.Evidence                    `json:"evidence"`
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
		return fmt.Errorf("want a positive duration such as 1s, 0 (skip porcupine) or -1 (wait for it), got %q", s)
	}
	b.d = d
	return nil
}

func cmdCheck(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		asJSON  = fs.Bool("json", false, "print one JSON document per file per line")
		htmlDir = fs.String("html", "", "write verdict.json and the porcupine visualizations of each file into DIR/<file name>/")
		failOn  = fs.String("fail-on", "register,updates", "properties whose violation makes the exit code 1")
		timeout = fs.Duration("timeout", 0, "hard ceiling on porcupine's second opinion (default: none beyond the budget)")
		budget  = budgetFlag{models.DefaultPorcupineBudget}
	)
	fs.Var(&budget, "porcupine-budget", "how long porcupine's second opinion may take beyond the direct analysis's answer; 0 skips it, -1 waits for it")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	props, err := parseFailOn(*failOn)
	if err != nil {
		fmt.Fprintln(stderr, "fencecheck check:", err)
		return exitUsage
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "fencecheck check: no history files given")
		return exitUsage
	}
	// Open every file first: one that is missing or not a history is a usage error and
	// nothing is checked. With --html each is read whole (the pages draw every op);
	// otherwise models.CheckFile streams the large ones.
	hs := make([]*history.History, fs.NArg())
	for i, path := range fs.Args() {
		var err error
		if *htmlDir != "" {
			hs[i], err = history.ReadFile(path)
		} else {
			var sc *history.Scanner
			if sc, err = history.OpenScanner(path); err == nil {
				err = sc.Close()
			}
		}
		if err != nil {
			fmt.Fprintln(stderr, "fencecheck check:", err)
			return exitUsage
		}
	}
	code := exitSafe
	enc := json.NewEncoder(stdout)
	for i, path := range fs.Args() {
		opt := models.Options{Timeout: *timeout, PorcupineBudget: budget.d}
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
			fmt.Fprintln(stderr, "fencecheck check:", err)
			return exitUsage
		}
		if err != nil {
			fmt.Fprintf(stderr, "fencecheck check: %s: %v\n", path, err)
			return exitInternal
		}
		if *asJSON {
			doc := checkJSON{File: path, Verdicts: rep.Verdicts, StaleWrites: rep.StaleWrites, LostUpdates: rep.LostUpdates, Evidence: rep.Evidence, Trouble: rep.Trouble()}
			for _, r := range rep.Results {
				doc.Results = append(doc.Results, checkResultJSON{Property: r.Property, Verdict: r.Verdict, Certified: r.Certified, Witness: r.Witness,
					Porcupine: r.Porcupine, PorcupineNote: r.PorcupineNote, Explanation: r.Explanation})
			}
			if err := enc.Encode(doc); err != nil {
				fmt.Fprintln(stderr, "fencecheck check:", err)
				return exitInternal
			}
		} else {
			fmt.Fprintf(stdout, "== %s\n", path)
			reports.Summary(stdout, hs[i], rep)
		}
		if *htmlDir != "" {
			dir := filepath.Join(*htmlDir, strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)))
			if len(fs.Args()) > 1 {
				dir = filepath.Join(*htmlDir, fmt.Sprintf("%d-%s", i+1, filepath.Base(filepath.Dir(path))))
			}
			err := os.MkdirAll(dir, 0o755)
			if err == nil {
				err = reports.WriteRun(ctx, dir, hs[i], rep)
			}
			if err != nil {
				fmt.Fprintf(stderr, "fencecheck check: %s: write report: %v\n", path, err)
				return exitInternal
			}
		}
		if tr := rep.Trouble(); tr != "" {
			fmt.Fprintf(stderr, "fencecheck check: %s: internal error, please report this history: %s\n", path, tr)
		}
		if c := exitFor(rep, props); c > code {
			code = c
		}
	}
	return code
}
