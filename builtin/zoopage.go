package builtin

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/judge"
	"github.com/fencecheck/fencecheck/reports"
	"github.com/fencecheck/fencecheck/spec"
)

// The zoo's page: docs/zoo.md, from the entries the packages declare and a saved zoo
// run (docs/zoo/zoo.json, the soak.json of `fencecheck zoo --runs 20`, merged from its
// shards). TestZooPage fails when the page differs from what this code would write.

// ZooPagePath and ZooRunPath are the page and the saved run, from the repository's root.
const (
	ZooPagePath = "docs/zoo.md"
	ZooRunPath  = "docs/zoo/zoo.json"
)

// ZooPage writes docs/zoo.md from the entries and saved, the saved run's soak.json
// (nil: every entry "not run").
func ZooPage(saved []byte) ([]byte, error) {
	zoo, untried := Zoo()
	var doc reports.SoakDoc
	if saved != nil {
		if err := json.Unmarshal(saved, &doc); err != nil {
			return nil, fmt.Errorf("%s: %w", ZooRunPath, err)
		}
	}
	rows := map[string]catalogue.ZooRow{}
	for _, r := range zoo.Rows(&doc.SoakResult) {
		rows[r.ID] = r
	}
	var b strings.Builder
	b.WriteString(generatedBy("the zoo entries (backend/*/zoo.go) and the saved run " + ZooRunPath))
	b.WriteString(`# The bug zoo

Lock bugs and hazards that teams reported in the trackers of the lock services and libraries
they use, and fencecheck's own findings, each reproduced on the real software at an affected
version, beside a **control** — the fixed version, or the configuration that avoids the bug —
that must hold. Each entry names the property that catches it; a bug run counts as detected
only when that property is violated and its counterexample shows what the tracker describes
(the operations it names are checked by ` + "`Bug.Shown`" + `); a control run counts as held only with
the evidence that its fault bit.

- ` + "`go test ./scenarios/... -run Zoo`" + ` runs every entry whose software is here once (seed 1),
  bug and control, and fails unless each bug shows its report and each control holds.
- ` + "`fencecheck zoo`" + ` runs them from the CLI (` + "`--bug ID`" + ` for one, ` + "`--runs N`" + ` for seeds 1..N, ` + "`--json`" + `,
  ` + "`--shard I/N`" + ` and ` + "`fencecheck merge`" + ` as for every campaign); an entry whose software is missing
  is skipped with one line naming its package.
- An entry is data in the folder of its backend (` + "`backend/<name>/zoo.go`" + `, a ` + "`catalogue.Bug`" + `): the
  reference, the software and how this machine gets it, the scenario, the property, the
  control and what its counterexample must show.

`)
	if saved != nil {
		fmt.Fprintf(&b, "The figures: %d seeds per entry, bug and control, from the saved run (%s), started %s and %s; %s. ",
			doc.Runs, "`"+ZooRunPath+"`", doc.Started.UTC().Format("2006-01-02 15:04 UTC"), shardWords(doc.Sharding), runTime(doc.Seconds))
		b.WriteString("Made on the 2-core reference machine with `fencecheck zoo --runs 20 --parallel 2 --shard I/2 --out sI` for I = 1, 2 at once, then `fencecheck merge --store M s1 s2`; `M/soak/<timestamp>/soak.json` is the saved run. ")
		b.WriteString("**First detection** is the median, over the detected runs, of when the run first showed the bug: the latest call among its counterexample's operations (the last one the violation needs), from the workload's start.\n\n")
	}
	b.WriteString("| entry | reported | software (how this machine gets it) | scenario | property | detected | first detection | control | control false alarms | run it |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	others := 0
	for _, e := range zoo {
		if e.ByOthers {
			others++
		}
		who := "fencecheck's own finding"
		if e.ByOthers {
			who = "reported"
		}
		detected, first, alarms := "not run", "—", "not run"
		if r, ok := rows[e.ID]; ok {
			detected = fmt.Sprintf("%d/%d", r.Detected, r.Runs)
			alarms = fmt.Sprintf("%d/%d", r.FalseAlarms, r.ControlRuns)
			if r.FirstDetection.N > 0 {
				first = judge.Duration(r.FirstDetection.P50ns)
			}
		}
		fmt.Fprintf(&b, "| `%s` | [%s](%s) (%s) | %s (%s) | %s | `%s` | %s | %s | %s | %s | `fencecheck zoo --bug %s` |\n",
			e.ID, cell(e.Ref), e.URL, who, cell(e.Software), cell(e.Source), scenarioCell(e.Spec), e.Property, detected, first,
			cell(e.ControlIs)+" ("+scenarioCell(e.Control)+")", alarms, e.ID)
	}
	fmt.Fprintf(&b, "\n%d entries, %d of them reported by others.\n\n## The entries\n\n", len(zoo), others)
	for _, e := range zoo {
		fmt.Fprintf(&b, "### `%s`: [%s](%s)\n\n%s.\n\n- **Affected:** %s.\n- **Caught by** `%s`; **control:** %s.\n\n", e.ID, e.Ref, e.URL, upperFirst(e.Pain), e.Affected, e.Property, e.ControlIs)
	}
	b.WriteString("## Tried, or considered, and not reproduced here\n\nCandidates from the trackers that the zoo does not reproduce, and why: fixed in the version this\nmachine can install, software it cannot get, a fault or a property fencecheck does not have yet.\n\n")
	b.WriteString("| reference | the bug | why not here |\n|---|---|---|\n")
	for _, u := range untried {
		fmt.Fprintf(&b, "| [%s](%s) | %s | %s |\n", cell(u.Ref), u.URL, cell(u.Pain), cell(u.Why))
	}
	return []byte(b.String()), nil
}

// scenarioCell says what a zoo spec runs: backend, resource, faults, and what else it
// sets (policy, TTL, grants).
func scenarioCell(s spec.Spec) string {
	parts := []string{"`" + s.Backend + "`", s.Resource}
	if len(s.Faults) > 0 {
		parts = append(parts, strings.Join(s.Faults, "+"))
	} else {
		parts = append(parts, "no fault")
	}
	if s.Policy != "" {
		parts = append(parts, s.Policy+" client")
	}
	if s.TTL > 0 {
		parts = append(parts, "TTL "+words(s.TTL))
	}
	if c, ok := s.Options["client-cmd"]; ok {
		parts = append(parts, "client `"+cell(c)+"`")
	}
	return strings.Join(parts, ", ")
}

// shardWords says how a saved soak was made of shards.
func shardWords(s *judge.Sharding) string {
	if s == nil || s.Merged == 0 {
		return "run whole"
	}
	return fmt.Sprintf("merged from %d shards", s.Merged)
}

// runTime says how long the saved run took.
func runTime(seconds float64) string {
	return "it took " + time.Duration(seconds*float64(time.Second)).Round(time.Second).String()
}

// upperFirst capitalises a sentence's first letter.
func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
