// Package propdocs writes what the docs say of each property from models' one list of
// them: the properties table of docs/checker.md and the property enum of the JSON
// schemas. go generate ./models rewrites the files; models' TestPropertyDocs fails when
// they differ.
package propdocs

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/fencecheck/fencecheck/models"
)

// Files are the generated files, relative to the repository's root.
var Files = []string{
	"docs/checker.md",
	"docs/verdict.schema.json",
	"docs/scorecard.schema.json",
	"docs/compare.schema.json",
}

// Markers around the generated table in docs/checker.md.
const (
	begin = "<!-- properties: written by go generate ./models from models' list; do not edit -->"
	end   = "<!-- end of properties -->"
)

// Render returns file name's generated content, given its current content.
func Render(name string, old []byte) ([]byte, error) {
	if strings.HasSuffix(name, ".md") {
		return table(old)
	}
	return enum(old)
}

// Table is the properties table of docs/checker.md.
func Table() string {
	var b strings.Builder
	b.WriteString("| property | checked | porcupine model | definition |\n|---|---|---|---|\n")
	for _, p := range models.AllProperties {
		checked := "on every history"
		switch {
		case p.OptIn():
			checked = "when asked for (`--fail-on`, `Options.Select`) and the history calls for it"
		case !p.Valid():
			checked = "when the history calls for it"
		}
		model := "no"
		if p.HasModel() {
			model = "yes"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", p, checked, model, p.Doc())
	}
	return b.String()
}

func table(old []byte) ([]byte, error) {
	i, j := bytes.Index(old, []byte(begin)), bytes.Index(old, []byte(end))
	if i < 0 || j < i {
		return nil, fmt.Errorf("no %q … %q block", begin, end)
	}
	var out bytes.Buffer
	out.Write(old[:i+len(begin)])
	out.WriteString("\n")
	out.WriteString(Table())
	out.Write(old[j:])
	return out.Bytes(), nil
}

var enumRE = regexp.MustCompile(`"property": \{(\s*)"enum": \[[^\]]*\]`)

// enum rewrites a schema's property enum, on one line or one name a line as it was.
func enum(old []byte) ([]byte, error) {
	m := enumRE.FindSubmatchIndex(old)
	if m == nil {
		return nil, fmt.Errorf("no property enum")
	}
	names := make([]string, len(models.AllProperties))
	for i, p := range models.AllProperties {
		names[i] = fmt.Sprintf("%q", string(p))
	}
	var repl string
	if space := string(old[m[2]:m[3]]); strings.Contains(space, "\n") {
		indent := strings.TrimPrefix(space, "\n")
		repl = fmt.Sprintf(`"property": {%s"enum": [`+"\n%s  %s\n%s]", space, indent, strings.Join(names, ",\n"+indent+"  "), indent)
	} else {
		repl = fmt.Sprintf(`"property": {%s"enum": [%s]`, space, strings.Join(names, ", "))
	}
	return append(append(append([]byte{}, old[:m[0]]...), repl...), old[m[1]:]...), nil
}

// Write rewrites the files under root.
func Write(root string) error {
	for _, f := range Files {
		path := filepath.Join(root, f)
		old, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out, err := Render(f, old)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if !bytes.Equal(out, old) {
			if err := os.WriteFile(path, out, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}
