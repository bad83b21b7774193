package reports

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/fencecheck/fencecheck/internal/term"
	"github.com/fencecheck/fencecheck/judge"
	"github.com/fencecheck/fencecheck/models"
)

// matrixFormat names matrix.json's format.
const matrixFormat = "fencecheck.matrix/v1"

// MatrixCell is one backend × resource × fault run of a matrix.
type MatrixCell struct {
	Backend  string `json:"backend"`
	Resource string `json:"resource"`
	Fault    string `json:"fault"`
	// Scenario is the name the run is stored under (its catalogue name when it has one).
	Scenario string `json:"scenario"`
	// Catalogue: the expectation is the catalogue's; else it was derived from the
	// table of expected verdicts (docs/expected-verdicts.md).
	Catalogue bool                               `json:"catalogue"`
	Expected  map[models.Property]models.Verdict `json:"expected,omitempty"`
	Verdicts  map[models.Property]models.Verdict `json:"verdicts,omitempty"`
	// Outcome: unsafe, safe, inconclusive, unknown (see Outcome), OutcomeError (the run
	// failed) or OutcomeNA (the combination cannot run).
	Outcome judge.RunOutcome `json:"outcome"`
	// Match: the verdicts and evidence are what the expectation says; Diffs says how
	// they differ otherwise.
	Match         bool     `json:"match"`
	Diffs         []string `json:"diffs,omitempty"`
	StaleAccepted int      `json:"stale_accepted"`
	StaleRejected int      `json:"stale_rejected"`
	ValidityGap   int64    `json:"validity_gap_ns"`
	// Dir is the run's folder relative to the store's root ("" when it did not run).
	Dir     string  `json:"dir,omitempty"`
	Seconds float64 `json:"seconds"`
	// Why says why an inconclusive cell proves nothing (judge.Why).
	Why string `json:"why,omitempty"`
	// Error says why the run failed or cannot run.
	Error string `json:"error,omitempty"`
}

// V returns the cell's verdict on a property ("" when it did not run).
func (c MatrixCell) V(p string) models.Verdict { return c.Verdicts[models.Property(p)] }

// Word says in a few words what the cell showed.
func (c MatrixCell) Word() string {
	switch {
	case c.Outcome == OutcomeUnsafe && c.StaleAccepted > 0:
		return "stale write got through"
	case c.Outcome == OutcomeUnsafe && c.Verdicts[models.Updates] == models.Violated:
		return "update lost"
	case c.Outcome == OutcomeUnsafe:
		return "register violated"
	case c.Outcome == OutcomeSafe && c.StaleRejected > 0:
		return fmt.Sprintf("held, %d rejected", c.StaleRejected)
	case c.Outcome == OutcomeSafe:
		return "held"
	case c.Outcome == OutcomeInconclusive && c.Why != "":
		return "inconclusive: " + c.Why
	}
	return string(c.Outcome)
}

// Ran reports whether the cell's scenario ran and was checked.
func (c MatrixCell) Ran() bool { return c.Outcome != OutcomeError && c.Outcome != OutcomeNA }

// Matrix is one `fencecheck matrix` run: its axes and cells.
type Matrix struct {
	Format    string       `json:"format"`
	Started   time.Time    `json:"started"`
	Seconds   float64      `json:"seconds"`
	Parallel  int          `json:"parallel"`
	Backends  []string     `json:"backends"`
	Resources []string     `json:"resources"`
	Faults    []string     `json:"faults"`
	Cells     []MatrixCell `json:"cells"`
	// Sharding, when set, says the matrix is one shard of a plan, or merged shards.
	Sharding *judge.Sharding `json:"sharding,omitempty"`
}

// Mismatches counts the cells that ran and differ from their expectation.
func (m *Matrix) Mismatches() int {
	n := 0
	for _, c := range m.Cells {
		if c.Ran() && !c.Match {
			n++
		}
	}
	return n
}

// Errors counts the cells whose run failed.
func (m *Matrix) Errors() int {
	n := 0
	for _, c := range m.Cells {
		if c.Outcome == OutcomeError {
			n++
		}
	}
	return n
}

// SummaryLine says in one line how the matrix went.
func (m *Matrix) SummaryLine() string {
	ran, na := 0, 0
	for _, c := range m.Cells {
		switch {
		case c.Outcome == OutcomeNA:
			na++
		case c.Ran():
			ran++
		}
	}
	s := fmt.Sprintf("%d cells ran in %s: %d as expected, %d differ", ran, time.Duration(m.Seconds*float64(time.Second)).Round(time.Second), ran-m.Mismatches(), m.Mismatches())
	if e := m.Errors(); e > 0 {
		s += fmt.Sprintf(", %d failed to run", e)
	}
	if na > 0 {
		s += fmt.Sprintf("; %d combinations do not apply", na)
	}
	return s
}

// Cell finds a cell by its axes.
func (m *Matrix) Cell(backend, resource, fault string) (MatrixCell, bool) {
	i := slices.IndexFunc(m.Cells, func(c MatrixCell) bool {
		return c.Backend == backend && c.Resource == resource && c.Fault == fault
	})
	if i < 0 {
		return MatrixCell{}, false
	}
	return m.Cells[i], true
}

// ReadMatrix reads a matrix.json.
func ReadMatrix(path string) (*Matrix, error) {
	return readDocument(path, matrixFormat, func(m *Matrix) string { return m.Format })
}

// readDocument reads a JSON document of ours whose "format" field must be want.
func readDocument[T any](path, want string, format func(*T) string) (*T, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var d T
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if got := format(&d); got != want {
		return nil, fmt.Errorf("%s: field \"format\": got %q, want %q", path, got, want)
	}
	return &d, nil
}

// WriteMatrix writes dir/matrix.json and the index page dir/index.html. dir is the
// matrix's folder in the store; cells' Dir are relative to the store root, two levels
// up.
func WriteMatrix(dir string, m *Matrix) error {
	m.Format = matrixFormat
	if err := writeJSON(filepath.Join(dir, MatrixJSON), m); err != nil {
		return err
	}
	return render(filepath.Join(dir, MatrixPage), "matrix.tmpl", newMatrixView(m))
}

type matrixRow struct {
	Backend string
	Cells   []matrixCellView
}

type matrixCellView struct {
	MatrixCell
	Link  string
	Class string
	Title string
	Chips []chip
}

type chip struct {
	Letter, Class, Title string
}

type matrixView struct {
	*Matrix
	Summary   string
	Rows      []matrixRow
	Generated string
}

func newMatrixView(m *Matrix) matrixView {
	v := matrixView{Matrix: m, Summary: m.SummaryLine(), Generated: time.Now().Format("2006-01-02 15:04:05 MST")}
	for _, b := range m.Backends {
		row := matrixRow{Backend: b}
		for _, r := range m.Resources {
			for _, f := range m.Faults {
				c, ok := m.Cell(b, r, f)
				if !ok {
					c = MatrixCell{Backend: b, Resource: r, Fault: f, Outcome: OutcomeNA, Error: judge.NotRunWord}
				}
				row.Cells = append(row.Cells, cellView(c))
			}
		}
		v.Rows = append(v.Rows, row)
	}
	return v
}

func cellView(c MatrixCell) matrixCellView {
	cv := matrixCellView{MatrixCell: c, Class: outcomeClass(c.Outcome)}
	if c.Outcome == OutcomeUnsafe {
		cv.Class = "bad"
	}
	if c.Dir != "" {
		cv.Link = "../../" + filepath.ToSlash(c.Dir) + "/" + ReportFile
	}
	var title []string
	title = append(title, fmt.Sprintf("%s × %s × %s: %s", c.Backend, c.Resource, c.Fault, c.Scenario))
	if c.Error != "" {
		title = append(title, c.Error)
	}
	for _, p := range models.Properties {
		if v, ok := c.Verdicts[p]; ok {
			exp := "any"
			if e, ok := c.Expected[p]; ok {
				exp = string(e)
			}
			title = append(title, fmt.Sprintf("%s: %s (expected %s)", p, v, exp))
			cv.Chips = append(cv.Chips, chip{Letter: strings.ToUpper(string(p)[:1]), Class: verdictClass(v), Title: fmt.Sprintf("%s %s", p, v)})
		}
	}
	title = append(title, c.Diffs...)
	cv.Title = strings.Join(title, "\n")
	return cv
}

// Table prints the matrix as a terminal table.
func (m *Matrix) Table(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "backend\tresource\tfault\tregister\tupdates\ttokens\tmutex\tstale acc/rej\ttime\tscenario\texpected")
	for _, c := range m.Cells {
		vs := make([]string, len(models.Properties))
		for i, p := range models.Properties {
			v := string(c.Verdicts[p])
			if v == "" {
				v = "-"
			}
			if c.Verdicts[p] == models.Violated {
				v = strings.ToUpper(v)
			}
			vs[i] = v
		}
		exp := "as expected"
		switch {
		case c.Outcome == OutcomeNA:
			exp = "n/a: " + c.Error
		case c.Outcome == OutcomeError:
			exp = "ERROR: " + c.Error
		case !c.Match:
			exp = "DIFFERS: " + strings.Join(c.Diffs, "; ")
		}
		stale := "-"
		if c.Ran() {
			stale = fmt.Sprintf("%d/%d", c.StaleAccepted, c.StaleRejected)
		}
		term.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.1fs\t%s\t%s\n", c.Backend, c.Resource, c.Fault, vs[0], vs[1], vs[2], vs[3], stale, c.Seconds, c.Scenario, exp)
	}
	tw.Flush()
}
