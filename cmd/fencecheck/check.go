package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/reports"
)

// checkJSON is one line of `check --json`.
type checkJSON struct {
	File        string                             `json:"file"`
	Verdicts    map[models.Property]models.Verdict `json:"verdicts"`
	StaleWrites []models.StaleWrite                `json:"stale_writes"`
	LostUpdates []models.LostUpdate                `json:"lost_updates"`
	Evidence    models.Evidence                    `json:"evidence"`
}

func cmdCheck(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		asJSON  = fs.Bool("json", false, "print one JSON document per file per line")
		htmlDir = fs.String("html", "", "write verdict.json and the porcupine visualizations of each file into DIR/<file name>/")
		failOn  = fs.String("fail-on", "register,updates", "properties whose violation makes the exit code 1")
		timeout = fs.Duration("timeout", 0, "per-property checker timeout (default 30s)")
	)
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
	// Load every file first: a malformed one is a usage error and nothing is checked.
	hs := make([]*history.History, fs.NArg())
	for i, path := range fs.Args() {
		h, err := history.ReadFile(path)
		if err != nil {
			fmt.Fprintln(stderr, "fencecheck check:", err)
			return exitUsage
		}
		hs[i] = h
	}
	code := exitSafe
	enc := json.NewEncoder(stdout)
	for i, path := range fs.Args() {
		rep, err := models.Check(ctx, hs[i], models.Options{Timeout: *timeout})
		if err != nil {
			fmt.Fprintf(stderr, "fencecheck check: %s: %v\n", path, err)
			return exitInternal
		}
		if *asJSON {
			if err := enc.Encode(checkJSON{File: path, Verdicts: rep.Verdicts, StaleWrites: rep.StaleWrites, LostUpdates: rep.LostUpdates, Evidence: rep.Evidence}); err != nil {
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
		if c := exitFor(rep, props); c > code {
			code = c
		}
	}
	return code
}
