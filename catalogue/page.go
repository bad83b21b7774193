package catalogue

import (
	"bytes"
	_ "embed" // the page's template
	"fmt"
	"slices"
	"strings"
	"text/template"

	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/spec"
)

//go:embed expected.md.tmpl
var expectedTmpl string

// Section is one package's scenarios on the expected-verdicts page.
type Section struct {
	// Title heads the section; Path is the package's folder; Page, if set, its page
	// under docs/ (relative to docs/).
	Title, Path, Page string
	Scenarios         []Scenario
}

// ExpectedPage writes docs/expected-verdicts.md: the rules, then every section's
// scenarios with the verdicts each must give, then how cells outside the catalogue are
// judged, naming the backends of reg each rule concerns.
func ExpectedPage(reg *registry.Registry, sections []Section) ([]byte, error) {
	type section struct {
		Section
		Table string
	}
	var data struct {
		Sections                []section
		ResetOnCrash, Tokenless string
	}
	var reset, tokenless []string
	for _, b := range reg.Backends() {
		if b.TokensResetOnCrash {
			reset = append(reset, "`"+b.Name+"`")
		}
		if b.PlanCaps(registry.Settings{Members: max(b.Members, 1)}).NoToken != "" {
			tokenless = append(tokenless, "`"+b.Name+"`")
		}
	}
	data.ResetOnCrash, data.Tokenless = andList(reset), andList(tokenless)
	for _, s := range sections {
		if len(s.Scenarios) > 0 {
			data.Sections = append(data.Sections, section{s, Table(s.Scenarios)})
		}
	}
	t, err := template.New("expected").Parse(expectedTmpl)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Table is a Markdown table of scenarios: what each runs, the verdicts it must give and
// the evidence it must show. An effects column appears when a scenario checks effects.
func Table(scs []Scenario) string {
	effects := slices.ContainsFunc(scs, func(s Scenario) bool { _, ok := s.Expect.Verdicts[models.Effects]; return ok })
	props := []models.Property{models.Register, models.Updates, models.Tokens, models.Mutex}
	if effects {
		props = append(props, models.Effects)
	}
	var b strings.Builder
	head := []string{"scenario", "backend", "resource", "faults"}
	for _, p := range props {
		head = append(head, string(p))
	}
	head = append(head, "stale writes", "what it shows")
	row(&b, head)
	sep := make([]string, len(head))
	for i := range sep {
		sep[i] = "---"
	}
	row(&b, sep)
	for _, sc := range scs {
		cells := []string{"`" + sc.Name + "`", backendCell(sc), resourceCell(sc), faultsCell(sc)}
		for _, p := range props {
			v, ok := sc.Expect.Verdicts[p]
			if !ok {
				cells = append(cells, "any")
				continue
			}
			cells = append(cells, string(v))
		}
		cells = append(cells, evidenceCell(sc.Expect), strings.ReplaceAll(sc.About, "|", "\\|"))
		row(&b, cells)
	}
	return b.String()
}

func row(b *strings.Builder, cells []string) {
	b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
}

func backendCell(sc Scenario) string {
	s := "`" + sc.Backend + "`"
	if sc.Members > 1 {
		s += fmt.Sprintf(", %d members", sc.Members)
	}
	if sc.TTL != 0 {
		s += ", TTL " + sc.TTL.String()
	}
	return s
}

func resourceCell(sc Scenario) string {
	s := "`" + sc.Resource + "`"
	if sc.Fence != "" && sc.Fence != "strict" {
		s += ", " + sc.Fence
	}
	if sc.Policy != "" && sc.Policy != spec.PolicyTrusting {
		s += ", " + sc.Policy + " client"
	}
	return s
}

func faultsCell(sc Scenario) string {
	if len(sc.Faults) == 0 {
		return "none"
	}
	return strings.Join(sc.Faults, " + ")
}

func evidenceCell(e Expect) string {
	var parts []string
	if e.MinStaleAccepted > 0 {
		parts = append(parts, fmt.Sprintf("≥%d accepted", e.MinStaleAccepted))
	}
	if e.MinStaleRejected > 0 {
		parts = append(parts, fmt.Sprintf("≥%d rejected", e.MinStaleRejected))
	}
	if e.NoStaleAccepted {
		parts = append(parts, "none accepted")
	}
	if len(parts) == 0 {
		return "any"
	}
	return strings.Join(parts, ", ")
}

// andList joins names as "a, b and c" ("none" when empty).
func andList(xs []string) string {
	switch len(xs) {
	case 0:
		return "none"
	case 1:
		return xs[0]
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}
