package reports

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/fencecheck/fencecheck/judge"
)

// soakFormat names soak.json's format.
const soakFormat = "fencecheck.soak/v1"

// Files of a soak in the results store: DIR/soak/<timestamp>/{index.html, soak.json}.
const (
	SoakPage = "index.html"
	SoakJSON = "soak.json"
)

// SoakDoc is soak.json: the soak's judgement (judge.SoakResult) and when it ran.
type SoakDoc struct {
	Format  string    `json:"format"`
	Started time.Time `json:"started"`
	Seconds float64   `json:"seconds"`
	// Interrupted: the soak was stopped before every run; the counts are of the runs
	// that finished.
	Interrupted bool `json:"interrupted,omitempty"`
	// Sharding, when set, says the soak is one shard of a plan, or merged shards.
	Sharding *judge.Sharding `json:"sharding,omitempty"`
	judge.SoakResult
}

// SummaryLine says in one line how the soak went.
func (d *SoakDoc) SummaryLine() string {
	runs := 0
	for _, s := range d.Scenarios {
		runs += len(s.Detail)
	}
	s := fmt.Sprintf("%d scenario(s) × %d run(s): %d run(s) differ from the catalogue, %d failed", len(d.Scenarios), d.Runs, d.Mismatches(), d.Errors())
	if d.Random {
		s = fmt.Sprintf("%d scenario(s) × %d random run(s), %d failed", len(d.Scenarios), d.Runs, d.Errors())
	}
	if d.Interrupted {
		s += fmt.Sprintf(" (interrupted after %d run(s))", runs)
	}
	return s
}

// WriteSoak writes dir/soak.json and dir/index.html. Run folders in the result are
// relative to the store's root, two levels up.
func WriteSoak(dir string, d *SoakDoc) error {
	d.Format = soakFormat
	if err := writeJSON(filepath.Join(dir, SoakJSON), d); err != nil {
		return err
	}
	return render(filepath.Join(dir, SoakPage), "soak.tmpl", soakView{SoakDoc: d, Generated: time.Now().Format("2006-01-02 15:04:05 MST")})
}

// ReadSoak reads a soak.json.
func ReadSoak(path string) (*SoakDoc, error) {
	return readDocument(path, soakFormat, func(d *SoakDoc) string { return d.Format })
}

type soakView struct {
	*SoakDoc
	Generated string
}

// Rate formats a rate ("-" when it does not apply).
func (soakView) Rate(f *float64) string {
	if f == nil {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", *f*100)
}

// Pct formats a share.
func (soakView) Pct(f float64) string { return fmt.Sprintf("%.0f%%", f*100) }

// Pctiles formats p50/p95/max.
func (soakView) Pctiles(p judge.Percentiles) string {
	if p.N == 0 {
		return "-"
	}
	return Duration(p.P50ns) + " / " + Duration(p.P95ns) + " / " + Duration(p.MaxNs)
}

// RunLink links a run's report from the soak page.
func (soakView) RunLink(dir string) string {
	if dir == "" || filepath.IsAbs(dir) {
		return ""
	}
	return "../../" + filepath.ToSlash(dir) + "/" + ReportFile
}
