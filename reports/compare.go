package reports

import (
	"fmt"
	"html/template"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/fencecheck/fencecheck/internal/term"
	"github.com/fencecheck/fencecheck/models/judge"
)

// The comparison's data and its judgement live in models/judge; this file renders it:
// compare.json, compare.html (tables, an inline SVG chart, a paragraph per service) and
// the terminal table.

// ComparisonFormat names compare.json's format.
const ComparisonFormat = judge.ComparisonFormat

// Comparison is judge's.
type Comparison = judge.Comparison

// WriteComparison writes dir/compare.json and dir/compare.html. Run folders are
// relative to the store's root, two levels up.
func WriteComparison(dir string, c *Comparison) error {
	c.Format = ComparisonFormat
	if err := writeJSON(filepath.Join(dir, CompareJSON), c); err != nil {
		return err
	}
	return render(filepath.Join(dir, ComparePage), "compare.tmpl", compareView{Comparison: c, Generated: time.Now().Format("2006-01-02 15:04:05 MST")})
}

// ReadComparison reads a compare.json.
func ReadComparison(path string) (*Comparison, error) {
	return readDocument(path, ComparisonFormat, func(c *Comparison) string { return c.Format })
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

// WordClass colours a verdict word.
func (compareView) WordClass(word string) string {
	switch word {
	case "held", judge.VerdictSafe:
		return "good"
	case "stale writes got through", "VIOLATED", judge.VerdictUnsafe, judge.NoTokenWord, judge.RefusedValid:
		return "bad"
	case "inconclusive", "not tested":
		return "weak"
	case judge.NotRunWord:
		return "na"
	}
	return "unknown"
}

// Chart is the inline SVG bar chart of every service's validity gap and notice delay
// (the worst over the faults' unfenced runs), on one time axis.
func (v compareView) Chart() template.HTML {
	return template.HTML(CompareChart(v.Comparison))
}

// CompareChart draws the chart as an SVG element: two bars per service (validity gap,
// notice delay; a hatched full-width bar for "never").
func CompareChart(c *Comparison) string {
	const (
		labelW, barW, rowH, top = 190, 560, 34, 28
	)
	var worst int64 = 1
	for _, s := range c.Services {
		worst = max(worst, s.ValidityGapNanos, s.NoticeDelayNanos)
	}
	h := top + rowH*len(c.Services) + 24
	var b strings.Builder
	fmt.Fprintf(&b, `<svg id="compare-chart" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" role="img" aria-label="validity gap and notice delay per service" font-family="system-ui, sans-serif" font-size="12">`, labelW+barW+120, h)
	b.WriteString(`<defs><pattern id="never" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="3" height="6" fill="#c62828"/></pattern></defs>`)
	fmt.Fprintf(&b, `<rect x="%d" y="6" width="10" height="10" fill="#1f5fbf"/><text x="%d" y="15">validity gap</text>`, labelW, labelW+14)
	fmt.Fprintf(&b, `<rect x="%d" y="6" width="10" height="10" fill="#e08a00"/><text x="%d" y="15">notice delay (hatched: a holder never noticed)</text>`, labelW+110, labelW+124)
	for i, s := range c.Services {
		y := top + i*rowH
		fmt.Fprintf(&b, `<g data-service="%s"><text x="0" y="%d">%s</text>`, template.HTMLEscapeString(s.Name), y+17, template.HTMLEscapeString(s.Name))
		gw := int(int64(barW) * s.ValidityGapNanos / worst)
		fmt.Fprintf(&b, `<rect class="gap" x="%d" y="%d" width="%d" height="12" fill="#1f5fbf"><title>validity gap %s</title></rect>`, labelW, y+2, max(gw, 1), Duration(s.ValidityGapNanos))
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`, labelW+max(gw, 1)+4, y+12, Duration(s.ValidityGapNanos))
		notice := s.NoticeWords()
		nw, fill := int(int64(barW)*s.NoticeDelayNanos/worst), "#e08a00"
		if notice == "never" {
			nw, fill = barW, "url(#never)"
		}
		fmt.Fprintf(&b, `<rect class="notice" x="%d" y="%d" width="%d" height="12" fill="%s"><title>notice delay %s</title></rect>`, labelW, y+16, max(nw, 1), fill, notice)
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text></g>`, labelW+max(nw, 1)+4, y+26, notice)
	}
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#999"/>`, labelW, top-2, labelW, h-20)
	fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#666">0</text><text x="%d" y="%d" fill="#666" text-anchor="end">%s</text>`, labelW, h-6, labelW+barW, h-6, Duration(worst))
	b.WriteString(`</svg>`)
	return b.String()
}

// PrintComparison prints the comparison for a terminal: one line per service × fault,
// the no-fault table, and each service's verdict.
func PrintComparison(w io.Writer, c *Comparison) {
	term.Fprintf(w, "compare: %d services at TTL %s, faults %s (each without and with fencing)\n", len(c.Services), Duration(c.TTLNanos), strings.Join(c.Faults, ", "))
	if c.Sharding != nil {
		term.Fprintf(w, "compare: %s\n", c.Sharding.Line())
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "service\tfault\twithout fencing\twith fencing\tstale att/rej/acc\tvalidity gap\tnotice delay\ttakeover\tlongest no write")
	for _, s := range c.Services {
		for _, f := range s.Faults {
			u, fe := f.Unfenced, f.Fenced
			stale := fmt.Sprintf("%d/%d/%d", u.StaleAttempted, u.StaleRejected, u.StaleAccepted)
			if fe.Decided() {
				stale += fmt.Sprintf(" | %d/%d/%d", fe.StaleAttempted, fe.StaleRejected, fe.StaleAccepted)
			}
			term.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, f.Fault, f.UnfencedWord, f.FencedWord, stale,
				Duration(u.ValidityGapNanos), u.NoticeWords(), Duration(u.TakeoverNanos), Duration(max(u.LongestNoAcceptedWriteNanos, fe.LongestNoAcceptedWriteNanos)))
		}
	}
	tw.Flush()
	fmt.Fprintln(w, "without faults:")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "service\tacquire p50\tacquire p99\tgrants/s\tversion")
	for _, s := range c.Services {
		b := s.Baseline
		if !b.Decided() {
			term.Fprintf(tw, "%s\t%s\t\t\t%s\n", s.Name, b.Outcome, s.Version)
			continue
		}
		term.Fprintf(tw, "%s\t%s\t%s\t%.1f\t%s\n", s.Name, Duration(b.AcquireP50Nanos), Duration(b.AcquireP99Nanos), b.GrantsPerSecond, s.Version)
	}
	tw.Flush()
	for _, s := range c.Services {
		if s.Inconclusive != "" {
			term.Fprintf(w, "%s: %s: %s\n", s.Name, strings.ToUpper(s.Verdict), s.Inconclusive)
			continue
		}
		term.Fprintf(w, "%s: %s\n", s.Name, strings.ToUpper(s.Verdict))
	}
	for _, s := range c.Skipped {
		term.Fprintf(w, "skipped %s: %s\n", s.Backend, s.Reason)
	}
}
