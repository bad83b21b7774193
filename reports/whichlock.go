package reports

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/models/judge"
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
	fmt.Fprintf(&b, "Every service's recommended variant on the same terms: TTL %s, 3 clients, under %s, each without and with a fenced resource ([how to read it](docs/compare.md)).\n\n",
		Duration(c.TTLNanos), strings.Join(c.Faults, " and "))
	b.WriteString("| service | backend | fencing token | without fencing | with fencing | validity gap | notice delay | takeover |\n|---|---|---|---|---|---|---|---|\n")
	for _, s := range c.Services {
		token := s.Facts.Token
		if s.Facts.NoToken != "" {
			token = "none"
		}
		fmt.Fprintf(&b, "| %s | `%s` | %s | %s | %s | %s | %s | %s |\n", s.Service, s.Name, mdCell(token), faultWords(s, false), faultWords(s, true),
			Duration(s.ValidityGapNanos), s.NoticeWords(), Duration(s.TakeoverNanos))
	}
	b.WriteString("\n" + whichLockSummary(c) + "\n")
	fmt.Fprintf(&b, "\nRun %s on %d CPUs, %s %s, %s; took %s.", c.Started.UTC().Format("2006-01-02 15:04 MST"), c.Machine.CPUs, c.Machine.OS, c.Machine.Arch,
		c.Machine.GoVersion, time.Duration(c.Seconds*float64(time.Second)).Round(time.Second))
	var versions []string
	for _, s := range c.Services {
		if s.Version != "" {
			versions = append(versions, s.Service+": "+s.Version)
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
	byVerdict := map[string][]string{}
	unfencedHeld := 0
	for _, s := range c.Services {
		byVerdict[s.Verdict] = append(byVerdict[s.Verdict], "`"+s.Name+"`")
		for _, f := range s.Faults {
			if f.Unfenced.Outcome == judge.OutcomeSafe {
				unfencedHeld++
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
		out += " Without fencing, every one let a stale write through under every fault: no lock alone keeps the data safe once its holder stalls past the TTL."
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
	b.WriteString("## Per service and fault\n\nStale writes attempted / rejected / accepted, without fencing | with fencing; the timing figures are the run's without fencing.\n\n")
	b.WriteString("| service | fault | without fencing | with fencing | stale writes | validity gap | notice delay | takeover | longest without an accepted write |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, s := range c.Services {
		for _, f := range s.Faults {
			u, fe := f.Unfenced, f.Fenced
			stale := fmt.Sprintf("%d / %d / %d", u.StaleAttempted, u.StaleRejected, u.StaleAccepted)
			noWrite := Duration(u.LongestNoAcceptedWriteNanos)
			if fe.Decided() {
				stale += fmt.Sprintf(" \\| %d / %d / %d", fe.StaleAttempted, fe.StaleRejected, fe.StaleAccepted)
				noWrite += " \\| " + Duration(fe.LongestNoAcceptedWriteNanos)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", s.Name, f.Fault, f.UnfencedWord, f.FencedWord, stale,
				Duration(u.ValidityGapNanos), u.NoticeWords(), Duration(u.TakeoverNanos), noWrite)
		}
	}
	b.WriteString("\n## Without faults\n\n| service | verdict | acquire p50 | acquire p99 | grants/s | version |\n|---|---|---|---|---|---|\n")
	for _, s := range c.Services {
		bl := s.Baseline
		if !bl.Decided() {
			fmt.Fprintf(&b, "| %s | %s | %s | | | %s |\n", s.Name, s.Verdict, bl.Outcome, mdCell(s.Version))
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %.1f | %s |\n", s.Name, s.Verdict, Duration(bl.AcquireP50Nanos), Duration(bl.AcquireP99Nanos), bl.GrantsPerSecond, mdCell(s.Version))
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

func kernelWords(k string) string {
	if k == "" {
		return ""
	}
	return ", Linux " + k
}
