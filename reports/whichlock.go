package reports

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/judge"
)

// The "Which lock?" table a README carries between two marker lines, written from a
// saved comparison (compare.json) by `go generate ./cmd/fencecheck`.

// WhichLockBlock is the name of the README's generated block (internal/mdblock).
const WhichLockBlock = "which-lock"

// WhichLock writes the short table of a comparison: per service its recommended token,
// its verdict without and with fencing under the faults, validity gap, notice delay and
// takeover, then the run's date, versions and machine, and a link to the full page.
func WhichLock(c *Comparison, link string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Every service's recommended variant on the same terms: TTL %s, 3 clients, under %s, each without and with a fenced resource, %s ([how to read it](docs/compare.md)). Each figure is the worst fault's (named), as the median over its runs with the least–greatest and n.\n\n",
		Duration(c.TTLNanos), strings.Join(c.Faults, " and "), runsWords(c))
	b.WriteString("| service | backend | fencing token | without fencing | with fencing | validity gap | overshoot | notice delay | takeover |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, s := range c.Services {
		token := s.Facts.Token
		if s.Facts.NoToken != "" {
			token = "none"
		}
		fmt.Fprintf(&b, "| %s | `%s` | %s | %s | %s | %s | %s | %s | %s |\n", s.Service, s.Name, mdCell(token), mdCell(faultWords(s, false)), mdCell(faultWords(s, true)),
			s.ValidityGap.Words(), s.Overshoot.Words(), s.NoticeWords(), s.Takeover.Words())
	}
	b.WriteString("\n" + whichLockSummary(c) + "\n")
	fmt.Fprintf(&b, "\nRun %s on %d CPUs, %s %s, %s; took %s.", c.Started.UTC().Format("2006-01-02 15:04 MST"), c.Machine.CPUs, c.Machine.OS, c.Machine.Arch,
		c.Machine.GoVersion, time.Duration(c.Seconds*float64(time.Second)).Round(time.Second))
	var versions []string
	for _, s := range c.Services {
		if v := s.ServerWords(); v != "" {
			versions = append(versions, s.Service+": "+v)
		}
	}
	if len(versions) > 0 {
		fmt.Fprintf(&b, " Versions: %s.", mdCell(strings.Join(versions, "; ")))
	}
	if len(c.Skipped) > 0 {
		var names []string
		for _, s := range c.Skipped {
			names = append(names, s.Backend)
		}
		fmt.Fprintf(&b, " Not compared here: %s.", strings.Join(names, ", "))
	}
	fmt.Fprintf(&b, " The tables and what the figures mean per service: [%s](%s).\n", link, link)
	return b.String()
}

// whichLockSummary says in words what the table shows: which services the fence made
// safe, which have no token to fence with, and whether any lock alone kept the data.
func whichLockSummary(c *Comparison) string {
	byVerdict := map[judge.ServiceVerdict][]string{}
	unfencedHeld := 0
	for _, s := range c.Services {
		byVerdict[s.Verdict] = append(byVerdict[s.Verdict], "`"+s.Name+"`")
		for _, f := range s.Faults {
			for _, r := range f.Unfenced {
				if r.Outcome == judge.OutcomeSafe {
					unfencedHeld++
				}
			}
		}
	}
	var parts []string
	if n := byVerdict[judge.VerdictSafe]; len(n) > 0 {
		parts = append(parts, fmt.Sprintf("**%d of the %d rows are safe with fencing** (the fence refused every stale write, and their tokens rose)", len(n), len(c.Services)))
	}
	if n := byVerdict[judge.VerdictUnsafe]; len(n) > 0 {
		parts = append(parts, fmt.Sprintf("UNSAFE even with fencing: %s", strings.Join(n, ", ")))
	}
	if n := byVerdict[judge.VerdictNoToken]; len(n) > 0 {
		parts = append(parts, fmt.Sprintf("no fencing token to fence with: %s", strings.Join(n, ", ")))
	}
	if n := byVerdict[judge.VerdictIncomplete]; len(n) > 0 {
		parts = append(parts, fmt.Sprintf("not decided: %s", strings.Join(n, ", ")))
	}
	out := strings.Join(parts, "; ") + "."
	if unfencedHeld == 0 {
		out += " Without fencing, every one let a stale write through under every fault in every run: no lock alone keeps the data safe once its holder stalls past the TTL."
	}
	return out
}

// faultWords joins a service's verdicts under each fault: "held" once when every fault
// says the same, else "pause: held, partition: VIOLATED".
func faultWords(s judge.ServiceRow, fenced bool) string {
	var words []string
	same := true
	for i, f := range s.Faults {
		w := f.UnfencedWord
		if fenced {
			w = f.FencedWord
		}
		words = append(words, w)
		same = same && (i == 0 || w == words[0])
	}
	if len(words) > 0 && same {
		return words[0]
	}
	parts := make([]string, len(words))
	for i, w := range words {
		parts[i] = s.Faults[i].Fault + ": " + w
	}
	return strings.Join(parts, ", ")
}

// runsWords says how many runs each cell had, with their seeds and parallelism.
func runsWords(c *Comparison) string {
	alone := "the runs without a fault alone"
	if !c.BaselineAlone {
		alone = "every run beside the others"
	}
	return fmt.Sprintf("%d run(s) per cell (seeds %s; %s, %d fault run(s) at a time)", c.Runs, seedWords(c.Seeds), alone, c.Parallel)
}

func mdCell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// WriteComparisonPage renders a comparison's page on its own (outside a results store:
// no links to runs), stamped with its start time so that the same comparison always
// gives the same page.
func WriteComparisonPage(w io.Writer, c *Comparison) error {
	return renderTo(w, "compare.tmpl", compareView{Comparison: c, Generated: c.Started.UTC().Format("2006-01-02 15:04:05 MST"), Standalone: true})
}

// CompareMarkdown writes a comparison as a Markdown page (docs/compare/README.md): what
// compare.html shows but the chart, for a reader of the repository.
func CompareMarkdown(c *Comparison) string {
	var b strings.Builder
	b.WriteString("<!-- Written by `go generate ./cmd/fencecheck` from compare.json in this folder; a test fails when it differs. Do not edit. -->\n\n")
	fmt.Fprintf(&b, "# Which lock? %d services on the same terms\n\n", len(c.Services))
	fmt.Fprintf(&b, "`fencecheck compare` on %s: %d CPUs, %s %s%s, %s; it took %s. Every service at a lease TTL of %s, 3 clients, under %s, each run without fencing and with a fenced register, and once without a fault. How to read it: [docs/compare.md](../compare.md); the same as a page with a chart: [compare.html](compare.html); the data: [compare.json](compare.json).\n\n",
		c.Started.UTC().Format("2006-01-02 15:04 MST"), c.Machine.CPUs, c.Machine.OS, c.Machine.Arch, kernelWords(c.Machine.Kernel), c.Machine.GoVersion,
		time.Duration(c.Seconds*float64(time.Second)).Round(time.Second), Duration(c.TTLNanos), strings.Join(c.Faults, " and "))
	fmt.Fprintf(&b, "## Per service and fault\n\n%s. Every figure is the median over the cell's runs (the runs without and with fencing alike), with the least–greatest and n, the runs that gave it. Stale writes attempted / rejected / accepted, summed over the runs without fencing | with fencing. The validity gap is shown with how long the fault lasted: the harness heals a fault only after 2 × TTL.\n\n", capital(runsWords(c)))
	b.WriteString("| service | fault | without fencing | with fencing | stale writes | validity gap (of the fault's length) | overshoot | notice delay | takeover | longest without an accepted write |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, s := range c.Services {
		for _, f := range s.Faults {
			fg := f.Figures
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", s.Name, f.Fault, mdCell(f.UnfencedWord), mdCell(f.FencedWord), staleWords(fg, " \\| "),
				fg.GapWords(), judge.DurationWords(fg.Overshoot), fg.NoticeWords(), judge.DurationWords(fg.Takeover), judge.DurationWords(fg.LongestNoAcceptedWrite))
		}
	}
	if c.BaselineAlone {
		b.WriteString("\n## Without faults\n\nEach run without a fault ran alone, with nothing else running.\n\n")
	} else {
		b.WriteString("\n## Without faults\n\nThese runs went beside the comparison's other runs (it was made before they ran alone): their latency is the machine's as much as the lock's.\n\n")
	}
	b.WriteString("| service | verdict | acquire p50 | acquire p99 | grants/s | granted TTL | server | client library |\n|---|---|---|---|---|---|---|---|\n")
	for _, s := range c.Services {
		l := s.Latency
		if l.AcquireP50.N == 0 {
			fmt.Fprintf(&b, "| %s | %s | %s | | | %s | %s | %s |\n", s.Name, s.Verdict, baselineOutcome(s.Baseline), s.GrantedTTLWords(), mdCell(s.ServerWords()), mdCell(s.ClientLibrary))
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", s.Name, s.Verdict, judge.DurationWords(l.AcquireP50), judge.DurationWords(l.AcquireP99), judge.RateWords(l.GrantsPerSecond), s.GrantedTTLWords(), mdCell(s.ServerWords()), mdCell(s.ClientLibrary))
	}
	b.WriteString("\n## What it means, per service\n")
	for _, s := range c.Services {
		fmt.Fprintf(&b, "\n### %s — %s\n\n%s\n", s.Name, s.Verdict, s.Paragraph)
	}
	if len(c.Skipped) > 0 {
		b.WriteString("\n## Not compared\n\n")
		for _, s := range c.Skipped {
			fmt.Fprintf(&b, "- `%s`: %s\n", s.Backend, s.Reason)
		}
	}
	return b.String()
}

func capital(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func kernelWords(k string) string {
	if k == "" {
		return ""
	}
	return ", Linux " + k
}
