package reports

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/fencecheck/fencecheck/internal/term"
	"github.com/fencecheck/fencecheck/judge"
	"github.com/fencecheck/fencecheck/models"
)

// The scorecard's data and its judgement live in judge; this file renders it.

// Scorecard, ScoreRow and ScoreRun are judge's.
type (
	Scorecard = judge.Scorecard
	ScoreRow  = judge.ScoreRow
	ScoreRun  = judge.ScoreRun
)

// NewScoreRun summarizes a checked run for the scorecard (judge.NewScoreRun).
func NewScoreRun(resource, scenario string, rep *models.Report, gaps []int64) ScoreRun {
	return judge.NewScoreRun(resource, scenario, rep, gaps)
}

// WriteScorecard writes dir/scorecard.json and dir/scorecard.html. Run folders are
// relative to the store's root, two levels up.
func WriteScorecard(dir string, s *Scorecard) error {
	s.Format = judge.ScorecardFormat
	if err := writeJSON(filepath.Join(dir, ScorecardJSON), s); err != nil {
		return err
	}
	return render(filepath.Join(dir, ScorecardPage), "scorecard.tmpl", scorecardView{Scorecard: s, Generated: time.Now().Format("2006-01-02 15:04:05 MST")})
}

// ReadScorecard reads a scorecard.json.
func ReadScorecard(path string) (*Scorecard, error) {
	return readDocument(path, judge.ScorecardFormat, func(s *Scorecard) string { return s.Format })
}

type scorecardView struct {
	*Scorecard
	Generated string
}

// RunLink is the link from a scorecard or matrix page to a run's report.
func (scorecardView) RunLink(r ScoreRun) string {
	if r.Dir == "" {
		return ""
	}
	return "../../" + filepath.ToSlash(r.Dir) + "/" + ReportFile
}

// RunWord says in a few words what a run showed.
func (scorecardView) RunWord(r ScoreRun) string {
	switch {
	case r.Outcome == OutcomeUnsafe && r.StaleAccepted > 0:
		return plural(r.StaleAccepted, "stale write got through", "stale writes got through")
	case r.Outcome == OutcomeUnsafe && r.Verdicts[models.Updates] == models.Violated:
		return "update lost"
	case r.Outcome == OutcomeUnsafe:
		return judge.RefusedValid + " (register violated)"
	case r.Outcome == OutcomeSafe:
		return "held"
	case r.Outcome == OutcomeInconclusive && r.Why != "":
		return "not tested (" + r.Why + ")"
	case r.Outcome == OutcomeInconclusive:
		return "not tested (no stale write)"
	}
	return string(r.Outcome)
}

// RunClass colours a run's cell.
func (scorecardView) RunClass(r ScoreRun) string {
	return outcomeClass(r.Outcome)
}

// TokensClass colours a row's tokens cell: good only when they stayed monotonic.
func (scorecardView) TokensClass(row ScoreRow) string {
	if row.Tokens == judge.CellMonotonic {
		return "good"
	}
	return "bad"
}

// Cell returns a row's run against a resource for the template.
func (scorecardView) Cell(row ScoreRow, resource string) *ScoreRun {
	if r, ok := row.Run(resource); ok {
		return &r
	}
	return nil
}

// PrintScorecard prints the scorecard for a terminal.
func PrintScorecard(w io.Writer, s *Scorecard) {
	term.Fprintf(w, "scorecard: %s (%s); tokens: %s\n", s.Backend, s.Setup, s.Token)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := append([]string{"fault", "without fencing", "with fencing"}, s.Native...)
	head = append(head, "tokens", "validity gap p50/p90/max", "fencing cost")
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, r := range s.Rows {
		unf := string(r.Unfenced)
		if u, ok := r.Run("unfenced"); ok && u.StaleAccepted > 0 {
			unf = fmt.Sprintf("STALE WRITES GOT THROUGH (%d)", u.StaleAccepted)
		}
		fen := string(r.Fenced)
		if f, ok := r.Run("fenced"); ok && f.Outcome == OutcomeSafe {
			fen = fmt.Sprintf("held, %d rejected", f.StaleRejected)
		}
		cols := []string{r.Fault, unf, fen}
		for range s.Native {
			cols = append(cols, string(r.Native))
		}
		cost := fmt.Sprintf("%d refused, %s without a write", r.Refused, Duration(r.LongestNoWrite))
		if s.NoToken != "" {
			cost = "- (nothing to fence with)"
		}
		cols = append(cols, string(r.Tokens),
			fmt.Sprintf("%s / %s / %s", Duration(r.GapP50), Duration(r.GapP90), Duration(r.GapMax)), cost)
		for i := range cols {
			cols[i] = term.Text(cols[i])
		}
		fmt.Fprintln(tw, strings.Join(cols, "\t"))
	}
	tw.Flush()
	switch {
	case s.Safe:
		fmt.Fprintln(w, "verdict: SAFE with fencing")
	case s.Inconclusive != "":
		fmt.Fprintln(w, "verdict: INCONCLUSIVE: "+term.Text(s.Inconclusive))
	default:
		fmt.Fprintln(w, "verdict: NOT SHOWN SAFE")
	}
	fmt.Fprintln(w, wrap(s.Verdict, 100, "  ", "  "))
	fmt.Fprintln(w, "conditions:")
	for _, c := range s.Conditions {
		fmt.Fprintln(w, wrap(c, 100, "  - ", "    "))
	}
}

// wrap breaks text into lines of at most width characters: the first line starts
// with first, the others with rest.
func wrap(text string, width int, first, rest string) string {
	var b strings.Builder
	b.WriteString(first)
	col := len(first)
	for i, word := range strings.Fields(text) {
		if i > 0 {
			if col+1+len(word) > width {
				b.WriteString("\n" + rest)
				col = len(rest)
			} else {
				b.WriteByte(' ')
				col++
			}
		}
		b.WriteString(word)
		col += len(word)
	}
	return b.String()
}
