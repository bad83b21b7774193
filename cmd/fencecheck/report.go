package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/reports"
)

func cmdReport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("report", flag.ContinueOnError)
	fset.SetOutput(stderr)
	var (
		out     = fset.String("out", "", "write the report of a single history file into DIR instead of beside it")
		timeout = fset.Duration("timeout", 0, "hard ceiling on porcupine's second opinion (default: none beyond its 1s budget)")
	)
	fset.Usage = func() {
		fmt.Fprintln(stderr, "usage: fencecheck report [flags] DIR_OR_HISTORY...\n\n(Re)builds reports offline from saved histories: for a history file, its verdict.json,\nporcupine-<property>.html and report.html beside it (or in --out); for a folder, that for every\nhistory.json under it, every matrix and scorecard page, and the store's index.html.\n\nflags:")
		fset.PrintDefaults()
	}
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitSafe
		}
		return exitUsage
	}
	if fset.NArg() == 0 {
		fmt.Fprintln(stderr, "fencecheck report: no folder or history file given")
		return exitUsage
	}
	// Find everything first: a missing path or a malformed history is a usage error,
	// and nothing is written.
	type job struct {
		path, dir string
		h         *history.History
	}
	var (
		jobs     []job
		mats     []*reports.Matrix
		matDirs  []string
		scs      []*reports.Scorecard
		scDirs   []string
		soaks    []*reports.SoakDoc
		soakDirs []string
		indexes  []string // store roots
	)
	for _, arg := range fset.Args() {
		st, err := os.Stat(arg)
		if err != nil {
			fmt.Fprintln(stderr, "fencecheck report:", err)
			return exitUsage
		}
		if !st.IsDir() {
			h, err := history.ReadFile(arg)
			if err != nil {
				fmt.Fprintln(stderr, "fencecheck report:", err)
				return exitUsage
			}
			dir := filepath.Dir(arg)
			if *out != "" {
				dir = *out
			}
			jobs = append(jobs, job{arg, dir, h})
			continue
		}
		if *out != "" {
			fmt.Fprintln(stderr, "fencecheck report: --out is for a single history file; a folder's reports are rebuilt in place")
			return exitUsage
		}
		found := 0
		err = filepath.WalkDir(arg, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				return nil
			}
			switch d.Name() {
			case reports.HistoryFile:
				h, err := history.ReadFile(path)
				if err != nil {
					return err
				}
				jobs = append(jobs, job{path, filepath.Dir(path), h})
				found++
			case reports.MatrixJSON:
				m, err := reports.ReadMatrix(path)
				if err != nil {
					return err
				}
				mats, matDirs = append(mats, m), append(matDirs, filepath.Dir(path))
				found++
			case reports.ScorecardJSON:
				sc, err := reports.ReadScorecard(path)
				if err != nil {
					return err
				}
				scs, scDirs = append(scs, sc), append(scDirs, filepath.Dir(path))
				found++
			case reports.SoakJSON:
				d, err := reports.ReadSoak(path)
				if err != nil {
					return err
				}
				soaks, soakDirs = append(soaks, d), append(soakDirs, filepath.Dir(path))
				found++
			}
			return nil
		})
		if err != nil {
			fmt.Fprintln(stderr, "fencecheck report:", err)
			return exitUsage
		}
		if found == 0 {
			fmt.Fprintf(stderr, "fencecheck report: %s: no %s, %s or %s in it\n", arg, reports.HistoryFile, reports.MatrixJSON, reports.ScorecardJSON)
			return exitUsage
		}
		indexes = append(indexes, arg)
	}
	if *out != "" && len(jobs) != 1 {
		fmt.Fprintln(stderr, "fencecheck report: --out takes exactly one history file")
		return exitUsage
	}
	for _, j := range jobs {
		rep, err := models.Check(ctx, j.h, models.Options{Timeout: *timeout})
		if err != nil {
			fmt.Fprintf(stderr, "fencecheck report: %s: %v\n", j.path, err)
			return exitInternal
		}
		err = os.MkdirAll(j.dir, 0o755)
		if err == nil {
			err = reports.WriteRun(ctx, j.dir, j.h, rep)
		}
		if err != nil {
			fmt.Fprintf(stderr, "fencecheck report: %s: %v\n", j.path, err)
			return exitInternal
		}
		fmt.Fprintf(stdout, "%s: %s (%s)\n", filepath.Join(j.dir, reports.ReportFile), reports.Outcome(rep), verdictList(rep))
	}
	for i, m := range mats {
		if err := reports.WriteMatrix(matDirs[i], m); err != nil {
			fmt.Fprintln(stderr, "fencecheck report:", err)
			return exitInternal
		}
		fmt.Fprintln(stdout, filepath.Join(matDirs[i], reports.MatrixPage))
	}
	for i, sc := range scs {
		sc.Judge() // the verdict's wording follows this version of fencecheck
		if err := reports.WriteScorecard(scDirs[i], sc); err != nil {
			fmt.Fprintln(stderr, "fencecheck report:", err)
			return exitInternal
		}
		fmt.Fprintln(stdout, filepath.Join(scDirs[i], reports.ScorecardPage))
	}
	for i, d := range soaks {
		if err := reports.WriteSoak(soakDirs[i], d); err != nil {
			fmt.Fprintln(stderr, "fencecheck report:", err)
			return exitInternal
		}
		fmt.Fprintln(stdout, filepath.Join(soakDirs[i], reports.SoakPage))
	}
	for _, root := range indexes {
		if err := reports.WriteStoreIndex(root); err != nil {
			fmt.Fprintln(stderr, "fencecheck report:", err)
			return exitInternal
		}
		fmt.Fprintf(stdout, "index: %s\n", filepath.Join(root, reports.StoreIndex))
	}
	if len(soaks) > 0 {
		fmt.Fprintf(stdout, "rebuilt %d run report(s), %d matrix/scorecard page(s) and %d soak page(s)\n", len(jobs), len(mats)+len(scs), len(soaks))
		return exitSafe
	}
	fmt.Fprintf(stdout, "rebuilt %d run report(s) and %d matrix/scorecard page(s)\n", len(jobs), len(mats)+len(scs))
	return exitSafe
}

func verdictList(rep *models.Report) string {
	s := ""
	for i, p := range models.Properties {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%s=%s", p, rep.Verdicts[p])
	}
	return s
}
