package reports

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/fencecheck/fencecheck/judge"
	"github.com/fencecheck/fencecheck/models"
)

// The pages are html/template templates with their CSS and script inlined, so every page
// is one self-contained file that opens from disk without a network.

//go:embed assets
var assets embed.FS

func asset(name string) string {
	b, err := assets.ReadFile("assets/" + name)
	if err != nil {
		panic(err) // embedded at build time: cannot happen
	}
	return string(b)
}

var funcs = template.FuncMap{
	"dur":     Duration,
	"seconds": Seconds,
	"css":     func(name string) template.CSS { return template.CSS(asset(name)) },
	"js":      func(name string) template.JS { return template.JS(asset(name)) },
	"verdict": verdictClass,
	"outcome": outcomeClass,
	"add":     func(a, b int) int { return a + b },
	"plural":  plural,
	"initial": func(p models.Property) string { return strings.ToUpper(string(p)[:1]) },
}

var pages = template.Must(template.New("pages").Funcs(funcs).ParseFS(assets, "assets/*.tmpl"))

// render executes a page template into a file, atomically: a reader never sees a half
// written page.
func render(path, name string, data any) error {
	var buf bytes.Buffer
	if err := pages.ExecuteTemplate(&buf, name, data); err != nil {
		return fmt.Errorf("render %s: %w", name, err)
	}
	return writeFileAtomic(path, buf.Bytes())
}

func renderTo(w io.Writer, name string, data any) error {
	return pages.ExecuteTemplate(w, name, data)
}

func writeFileAtomic(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

// Duration formats nanoseconds for people: "1.52 s", "350 ms", "12 µs".
func Duration(ns int64) string { return judge.Duration(ns) }

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

// verdictClass maps a property's verdict to the CSS class that colours it.
func verdictClass(v models.Verdict) string {
	switch v {
	case models.Violated:
		return "bad"
	case models.Held:
		return "good"
	case models.Inconclusive:
		return "weak"
	case models.Unknown:
		return "unknown"
	}
	return "neutral"
}

// outcomeClass maps a run's (or a matrix cell's, or a stored campaign's) outcome to the
// CSS class that colours it.
func outcomeClass(o judge.RunOutcome) string {
	switch o {
	case OutcomeUnsafe:
		return "bad"
	case OutcomeSafe:
		return "good"
	case OutcomeInconclusive:
		return "weak"
	case OutcomeUnknown, OutcomeError, OutcomeFailed:
		return "unknown"
	case OutcomeNA:
		return "na"
	}
	return "neutral"
}
