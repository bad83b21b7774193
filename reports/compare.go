package reports

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/fencecheck/fencecheck/internal/term"
	"github.com/fencecheck/fencecheck/judge"
)

// The comparison's data and its judgement live in judge; this file renders it:
// compare.json, compare.html (tables, an inline SVG chart, a paragraph per service) and
// the terminal table.

// Comparison is judge's.
type Comparison = judge.Comparison

// WriteComparison writes dir/compare.json and dir/compare.html. Run folders are
// relative to the store's root, two levels up.
func WriteComparison(dir string, c *Comparison) error {
	c.Format = judge.ComparisonFormat
	if err := writeJSON(filepath.Join(dir, CompareJSON), c); err != nil {
		return err
	}
	return render(filepath.Join(dir, ComparePage), "compare.tmpl", compareView{Comparison: c, Generated: time.Now().Format("2006-01-02 15:04:05 MST")})
}

// ReadComparison reads a compare.json: the current format, or one of
// fencecheck.compare/v1 (one run per cell), read as a comparison of one run per cell
// whose runs without a fault did not run alone, judged again.
func ReadComparison(path string) (*Comparison, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var head struct {
		Format string `json:"format"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if head.Format != comparisonV1 {
		return readDocument(path, judge.ComparisonFormat, func(c *Comparison) string { return c.Format })
	}
	c, err := comparisonFromV1(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// comparisonV1 is compare.json's format before each cell ran several times.
const comparisonV1 = "fencecheck.compare/v1"

// comparisonFromV1 reads a v1 comparison: each cell's one run becomes a list of one (at
// the default seed, which v1 comparisons ran at), the row's maxima are dropped (Judge
// derives the figures from the runs), and the comparison is judged again.
func comparisonFromV1(b []byte) (*Comparison, error) {
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	list := func(v any) []any { return []any{v} }
	services, _ := doc["services"].([]any)
	for _, sv := range services {
		s, ok := sv.(map[string]any)
		if !ok {
			continue
		}
		s["baseline"] = list(s["baseline"])
		for _, k := range []string{"validity_gap_ns", "notice_delay_ns", "never_noticed", "takeover_ns"} {
			delete(s, k)
		}
		faults, _ := s["faults"].([]any)
		for _, fv := range faults {
			if f, ok := fv.(map[string]any); ok {
				f["unfenced"], f["fenced"] = list(f["unfenced"]), list(f["fenced"])
			}
		}
	}
	doc["format"], doc["runs"], doc["seeds"], doc["baseline_alone"] = judge.ComparisonFormat, 1, []int64{spec1Seed}, false
	if _, ok := doc["parallel"]; !ok {
		doc["parallel"] = 1 // not recorded by v1
	}
	nb, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	var c Comparison
	if err := json.Unmarshal(nb, &c); err != nil {
		return nil, err
	}
	for i := range c.Services {
		for _, r := range allCompareRuns(&c.Services[i]) {
			r.Seed = spec1Seed
		}
	}
	c.Judge()
	return &c, nil
}

// spec1Seed is the seed every v1 comparison ran at (spec.DefaultSeed then and now).
const spec1Seed = 1

func allCompareRuns(s *judge.ServiceRow) []*judge.CompareRun {
	var out []*judge.CompareRun
	for k := range s.Baseline {
		out = append(out, &s.Baseline[k])
	}
	for k := range s.Faults {
		for i := range s.Faults[k].Unfenced {
			out = append(out, &s.Faults[k].Unfenced[i])
		}
		for i := range s.Faults[k].Fenced {
			out = append(out, &s.Faults[k].Fenced[i])
		}
	}
	return out
}

type compareView struct {
	*Comparison
	Generated string
	// Standalone: a page outside the results store, whose runs are not beside it.
	Standalone bool
}

// RunLink is the link from the compare page to a run's report ("" when it has none).
func (v compareView) RunLink(r judge.CompareRun) string {
	if r.Dir == "" || v.Standalone {
		return ""
	}
	return "../../" + filepath.ToSlash(r.Dir) + "/" + ReportFile
}

// RunLinks lists a cell's runs, each numbered and linked to its report where it has one,
// with the outcome of a run that gave no verdict and its error.
func (v compareView) RunLinks(runs []judge.CompareRun) template.HTML {
	if len(runs) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(`<span class="sub runs">runs:`)
	for i, r := range runs {
		label := fmt.Sprintf("%d", i+1)
		if !r.Decided() {
			label += " (" + string(r.Outcome) + ")"
		}
		title := fmt.Sprintf("seed %d: %s", r.Seed, r.Outcome)
		if r.Error != "" {
			title += ": " + r.Error
		}
		if link := v.RunLink(r); link != "" {
			fmt.Fprintf(&b, ` <a href="%s" title="%s">%s</a>`, template.HTMLEscapeString(link), template.HTMLEscapeString(title), template.HTMLEscapeString(label))
		} else {
			fmt.Fprintf(&b, ` <span title="%s">%s</span>`, template.HTMLEscapeString(title), template.HTMLEscapeString(label))
		}
	}
	b.WriteString(`</span>`)
	return template.HTML(b.String())
}

// D is a spread of durations in words.
func (compareView) D(s judge.Spread[int64]) string { return judge.DurationWords(s) }

// R is a spread of grants per second in words.
func (compareView) R(s judge.Spread[float64]) string { return judge.RateWords(s) }

// VerdictClass colours a service's verdict.
func (compareView) VerdictClass(v judge.ServiceVerdict) string {
	switch v {
	case judge.VerdictSafe:
		return "good"
	case judge.VerdictUnsafe, judge.VerdictNoToken:
		return "bad"
	case judge.VerdictInconclusive:
		return "weak"
	}
	return "unknown"
}

// WordClass colours a fault's word over its runs (ServiceRow's UnfencedWord and
// FencedWord): a cell's, or a mix of them over several runs by its worst part.
func (compareView) WordClass(word string) string {
	switch judge.Cell(word) {
	case judge.CellHeld:
		return "good"
	case judge.CellStaleThrough, judge.CellViolated, judge.CellNoToken, judge.CellRefusedValid:
		return "bad"
	case judge.Cell(judge.OutcomeInconclusive), judge.CellNotTested:
		return "weak"
	case judge.CellNotRun:
		return "na"
	}
	switch {
	case strings.Contains(word, string(judge.CellViolated)), strings.Contains(word, string(judge.CellStaleThrough)), strings.Contains(word, string(judge.CellRefusedValid)):
		return "bad"
	case strings.Contains(word, " in "):
		return "weak"
	}
	return "unknown"
}

// Chart is the inline SVG bar chart of every service's validity gap and notice delay
// (each its worst fault's, by median), on one time axis.
func (v compareView) Chart() template.HTML {
	return template.HTML(compareChart(v.Comparison))
}

// compareChart draws the chart as an SVG element: two bars per service (validity gap,
// notice delay) at the median of the worst fault, each with a whisker from the least to
// the greatest run; a hatched full-width bar for "never".
func compareChart(c *Comparison) string {
	const (
		labelW, barW, rowH, top = 190, 560, 34, 28
	)
	var worst int64 = 1
	for _, s := range c.Services {
		worst = max(worst, s.ValidityGap.Max, s.NoticeDelay.Max)
	}
	x := func(ns int64) int { return int(int64(barW) * ns / worst) }
	h := top + rowH*len(c.Services) + 24
	var b strings.Builder
	fmt.Fprintf(&b, `<svg id="compare-chart" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" role="img" aria-label="validity gap and notice delay per service" font-family="system-ui, sans-serif" font-size="12">`, labelW+barW+260, h)
	b.WriteString(`<defs><pattern id="never" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="3" height="6" fill="#c62828"/></pattern></defs>`)
	fmt.Fprintf(&b, `<rect x="%d" y="6" width="10" height="10" fill="#1f5fbf"/><text x="%d" y="15">validity gap</text>`, labelW, labelW+14)
	fmt.Fprintf(&b, `<rect x="%d" y="6" width="10" height="10" fill="#e08a00"/><text x="%d" y="15">notice delay (hatched: a holder never noticed)</text>`, labelW+110, labelW+124)
	whisker := func(s judge.Spread[int64], y int) {
		if s.N > 1 && s.Max > s.Min {
			fmt.Fprintf(&b, `<line class="whisker" x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>`, labelW+x(s.Min), y+6, labelW+x(s.Max), y+6)
		}
	}
	for i, s := range c.Services {
		y := top + i*rowH
		fmt.Fprintf(&b, `<g data-service="%s"><text x="0" y="%d">%s</text>`, template.HTMLEscapeString(s.Name), y+17, template.HTMLEscapeString(s.Name))
		gap := s.ValidityGap
		gw := x(gap.Median)
		fmt.Fprintf(&b, `<rect class="gap" x="%d" y="%d" width="%d" height="12" fill="#1f5fbf"><title>validity gap %s</title></rect>`, labelW, y+2, max(gw, 1), template.HTMLEscapeString(gap.Words()))
		whisker(gap.Spread, y+2)
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`, labelW+max(gw, x(gap.Max), 1)+4, y+12, template.HTMLEscapeString(gap.Words()))
		notice := s.NoticeWords()
		nw, fill := x(s.NoticeDelay.Median), "#e08a00"
		if s.NeverNoticed > 0 {
			nw, fill = barW, "url(#never)"
		}
		fmt.Fprintf(&b, `<rect class="notice" x="%d" y="%d" width="%d" height="12" fill="%s"><title>notice delay %s</title></rect>`, labelW, y+16, max(nw, 1), fill, template.HTMLEscapeString(notice))
		if s.NeverNoticed == 0 {
			whisker(s.NoticeDelay.Spread, y+16)
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text></g>`, labelW+max(nw, x(s.NoticeDelay.Max), 1)+4, y+26, template.HTMLEscapeString(notice))
	}
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#999"/>`, labelW, top-2, labelW, h-20)
	fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#666">0</text><text x="%d" y="%d" fill="#666" text-anchor="end">%s</text>`, labelW, h-6, labelW+barW, h-6, Duration(worst))
	b.WriteString(`</svg>`)
	return b.String()
}

// PrintComparison prints the comparison for a terminal: one line per service × fault,
// the no-fault table, and each service's verdict. Every figure is the median over the
// cell's runs with the least and greatest and n.
func PrintComparison(w io.Writer, c *Comparison) {
	term.Fprintf(w, "compare: %d services at TTL %s, faults %s (each without and with fencing), %d run(s) per cell, seeds %s\n", len(c.Services), Duration(c.TTLNanos), strings.Join(c.Faults, ", "), c.Runs, seedWords(c.Seeds))
	if c.Sharding != nil {
		term.Fprintf(w, "compare: %s\n", c.Sharding.Line())
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "service\tfault\twithout fencing\twith fencing\tstale att/rej/acc\tvalidity gap (of the fault's length)\tovershoot\tnotice delay\ttakeover\tlongest no write")
	for _, s := range c.Services {
		for _, f := range s.Faults {
			fg := f.Figures
			term.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, f.Fault, f.UnfencedWord, f.FencedWord, staleWords(fg, " | "),
				fg.GapWords(), judge.DurationWords(fg.Overshoot), fg.NoticeWords(), judge.DurationWords(fg.Takeover), judge.DurationWords(fg.LongestNoAcceptedWrite))
		}
	}
	tw.Flush()
	if c.BaselineAlone {
		fmt.Fprintf(w, "without faults (each run alone; %d fault run(s) at a time):\n", c.Parallel)
	} else {
		fmt.Fprintln(w, "without faults (beside the other runs):")
	}
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "service\tacquire p50\tacquire p99\tgrants/s\tgranted TTL\tserver\tclient library")
	for _, s := range c.Services {
		l := s.Latency
		if l.AcquireP50.N == 0 {
			term.Fprintf(tw, "%s\t%s\t\t\t%s\t%s\t%s\n", s.Name, baselineOutcome(s.Baseline), s.GrantedTTLWords(), s.ServerWords(), s.ClientLibrary)
			continue
		}
		term.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, judge.DurationWords(l.AcquireP50), judge.DurationWords(l.AcquireP99), judge.RateWords(l.GrantsPerSecond), s.GrantedTTLWords(), s.ServerWords(), s.ClientLibrary)
	}
	tw.Flush()
	for _, s := range c.Services {
		if s.Inconclusive != "" {
			term.Fprintf(w, "%s: %s: %s\n", s.Name, strings.ToUpper(s.Verdict.String()), s.Inconclusive)
			continue
		}
		term.Fprintf(w, "%s: %s\n", s.Name, strings.ToUpper(s.Verdict.String()))
	}
	for _, s := range c.Skipped {
		term.Fprintf(w, "skipped %s: %s\n", s.Backend, s.Reason)
	}
}

// staleWords is a fault's stale writes, summed over its runs, without | with fencing.
func staleWords(fg judge.Figures, sep string) string {
	u, f := fg.StaleUnfenced, fg.StaleFenced
	out := fmt.Sprintf("%d/%d/%d", u.Attempted, u.Rejected, u.Accepted)
	if f.Attempted > 0 || f.Rejected > 0 || f.Accepted > 0 {
		out += fmt.Sprintf("%s%d/%d/%d", sep, f.Attempted, f.Rejected, f.Accepted)
	}
	return out
}

// baselineOutcome says why a row has no latency: its runs' outcomes.
func baselineOutcome(runs []judge.CompareRun) string {
	var words []string
	for _, r := range runs {
		words = append(words, string(r.Outcome))
	}
	if len(words) == 0 {
		return judge.NotRunWord
	}
	return strings.Join(words, ", ")
}

// seedWords lists seeds, "1, 2, 3".
func seedWords(seeds []int64) string {
	parts := make([]string, len(seeds))
	for i, s := range seeds {
		parts[i] = fmt.Sprintf("%d", s)
	}
	return strings.Join(parts, ", ")
}
