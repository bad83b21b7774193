package main

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/internal/term"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/reports"
)

func (a *app) reportCmd() *cobra.Command {
	var out string
	var timeout time.Duration
	c := &cobra.Command{
		Use:   "report [flags] DIR_OR_HISTORY...",
		Short: "(re)build HTML reports, matrix, scorecard, compare and soak pages offline",
		Long: `(Re)builds reports offline from saved histories: for a history file, its verdict.json,
porcupine-<property>.html and report.html beside it (or in --out); for a folder, that for
every history.json under it, every matrix, scorecard, compare and soak page, and the store's
index.html.`,
		Example: `  fencecheck report fencecheck-results
  fencecheck report --out /tmp/r fencecheck-results/naive-unfenced-pause/latest/history.json`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError("no folder or history file given")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return a.report(cmd.Context(), out, timeout, args) },
	}
	c.Flags().StringVar(&out, "out", "", "write the report of a single history file into DIR instead of beside it")
	checkTimeoutFlag(c.Flags(), &timeout, true)
	setExitCodes(c, exitCodes{
		exitSafe:     "rebuilt (whatever the verdicts: report does not judge)",
		exitUsage:    "bad usage, a missing path or a malformed file (nothing is written)",
		exitInternal: "a page could not be written",
	})
	return c
}

func (a *app) report(ctx context.Context, out string, timeout time.Duration, args []string) error {
	stdout := a.stdout
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
		cmps     []*reports.Comparison
		cmpDirs  []string
		soaks    []*reports.SoakDoc
		soakDirs []string
		indexes  []string // store roots
	)
	for _, arg := range args {
		st, err := os.Stat(arg)
		if err != nil {
			return badInput("%v", err)
		}
		if !st.IsDir() {
			h, err := history.ReadFile(arg)
			if err != nil {
				return badInput("%v", err)
			}
			dir := filepath.Dir(arg)
			if out != "" {
				dir = out
			}
			jobs = append(jobs, job{arg, dir, h})
			continue
		}
		if out != "" {
			return badInput("--out is for a single history file; a folder's reports are rebuilt in place")
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
			case reports.CompareJSON:
				c, err := reports.ReadComparison(path)
				if err != nil {
					return err
				}
				cmps, cmpDirs = append(cmps, c), append(cmpDirs, filepath.Dir(path))
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
			return badInput("%v", err)
		}
		if found == 0 {
			return badInput("%s: no %s, %s or %s in it", arg, reports.HistoryFile, reports.MatrixJSON, reports.ScorecardJSON)
		}
		indexes = append(indexes, arg)
	}
	if out != "" && len(jobs) != 1 {
		return badInput("--out takes exactly one history file")
	}
	// Every folder a page goes into can take it, before any is written.
	what := "the report's folder"
	if out != "" {
		what = "--out"
	}
	for _, j := range jobs {
		if err := writableDir(what, j.dir); err != nil {
			return err
		}
	}
	for _, dirs := range [][]string{matDirs, scDirs, cmpDirs, soakDirs, indexes} {
		for _, d := range dirs {
			if err := writableDir("the report's folder", d); err != nil {
				return err
			}
		}
	}
	for _, j := range jobs {
		rep, err := models.Check(ctx, j.h, models.Options{Timeout: timeout})
		if err != nil {
			return &exitError{code: exitInternal, msg: fmt.Sprintf("%s: %v", j.path, err)}
		}
		err = os.MkdirAll(j.dir, 0o755)
		if err == nil {
			err = reports.WriteRun(ctx, j.dir, j.h, rep)
		}
		if err != nil {
			return &exitError{code: exitInternal, msg: fmt.Sprintf("%s: %v", j.path, err)}
		}
		term.Fprintf(stdout, "%s: %s (%s)\n", filepath.Join(j.dir, reports.ReportFile), reports.Outcome(rep), verdictList(rep))
	}
	for i, m := range mats {
		if err := reports.WriteMatrix(matDirs[i], m); err != nil {
			return &exitError{code: exitInternal, msg: err.Error()}
		}
		fmt.Fprintln(stdout, term.Text(filepath.Join(matDirs[i], reports.MatrixPage)))
	}
	for i, sc := range scs {
		sc.Judge() // the verdict's wording follows this version of fencecheck
		if err := reports.WriteScorecard(scDirs[i], sc); err != nil {
			return &exitError{code: exitInternal, msg: err.Error()}
		}
		fmt.Fprintln(stdout, term.Text(filepath.Join(scDirs[i], reports.ScorecardPage)))
	}
	for i, c := range cmps {
		c.Judge() // the words and paragraphs follow this version of fencecheck
		if err := reports.WriteComparison(cmpDirs[i], c); err != nil {
			return &exitError{code: exitInternal, msg: err.Error()}
		}
		fmt.Fprintln(stdout, term.Text(filepath.Join(cmpDirs[i], reports.ComparePage)))
	}
	for i, d := range soaks {
		if err := reports.WriteSoak(soakDirs[i], d); err != nil {
			return &exitError{code: exitInternal, msg: err.Error()}
		}
		fmt.Fprintln(stdout, term.Text(filepath.Join(soakDirs[i], reports.SoakPage)))
	}
	for _, root := range indexes {
		if err := reports.WriteStoreIndex(root); err != nil {
			return &exitError{code: exitInternal, msg: err.Error()}
		}
		term.Fprintf(stdout, "index: %s\n", filepath.Join(root, reports.StoreIndex))
	}
	if len(soaks) > 0 {
		fmt.Fprintf(stdout, "rebuilt %d run report(s), %d matrix/scorecard page(s) and %d soak page(s)\n", len(jobs), len(mats)+len(scs)+len(cmps), len(soaks))
		return nil
	}
	fmt.Fprintf(stdout, "rebuilt %d run report(s) and %d matrix/scorecard page(s)\n", len(jobs), len(mats)+len(scs)+len(cmps))
	return nil
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
