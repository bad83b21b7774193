// Package reports turns checked histories into what people read and share: the terminal
// summary, verdict.json, the porcupine visualizations, the self-contained HTML run
// report (report.html), the matrix index page, the evaluate scorecard, and the results
// store's index. It works offline from saved histories and never imports a backend.
package reports

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"path/filepath"

	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/judge"
	"github.com/fencecheck/fencecheck/models"
)

// VerdictFile is the content of verdict.json (its JSON Schema: docs/verdict.schema.json).
type VerdictFile struct {
	Format string `json:"format"`
	// Outcome is what the run says about the protected data (Outcome: unsafe, unknown,
	// inconclusive, safe).
	Outcome judge.RunOutcome `json:"outcome"`
	*models.Report
}

// verdictFormat names verdict.json's format.
const verdictFormat = "fencecheck.verdict/v1"

// WriteRun writes verdict.json, one porcupine visualization per property
// (porcupine-<property>.html: a violated property's witness, a held one's whole history,
// or for a history too large for porcupine to draw, a page saying so) and the HTML run
// report (report.html) into dir.
func WriteRun(ctx context.Context, dir string, h *history.History, rep *models.Report) error {
	if err := WriteVerdict(dir, rep); err != nil {
		return err
	}
	for _, p := range models.Properties {
		if err := writeVisualization(ctx, filepath.Join(dir, "porcupine-"+string(p)+".html"), p, h, rep.Verdicts[p]); err != nil {
			return fmt.Errorf("visualize %s: %w", p, err)
		}
	}
	if err := WriteReport(dir, h, rep); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// WriteVerdict writes verdict.json alone: the report of a history too long for the
// pages, which draw every op (a segmented one).
func WriteVerdict(dir string, rep *models.Report) error {
	b, err := json.MarshalIndent(VerdictFile{Format: verdictFormat, Outcome: Outcome(rep), Report: rep}, "", "  ")
	if err != nil {
		return fmt.Errorf("encode verdict: %w", err)
	}
	return writeFileAtomic(filepath.Join(dir, "verdict.json"), append(b, '\n'))
}

// ReadVerdict reads a run's verdict.json.
func ReadVerdict(path string) (*models.Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var v struct {
		Format string `json:"format"`
		models.Report
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if v.Format != verdictFormat {
		return nil, fmt.Errorf("%s: field \"format\": got %q, want %q", path, v.Format, verdictFormat)
	}
	return &v.Report, nil
}

// writeVisualization draws p's porcupine page: for a violated property its witness,
// which porcupine can always draw; otherwise the whole history if porcupine can draw it,
// or a page saying why not.
func writeVisualization(ctx context.Context, path string, p models.Property, h *history.History, v models.Verdict) error {
	if ok, why := models.Drawable(p, h); !ok && v != models.Violated {
		page := fmt.Sprintf("<!doctype html><meta charset=\"utf-8\"><title>porcupine: %s</title><p>Porcupine's visualization of %s is %s. The verdict comes from the direct analysis; see report.html and verdict.json.</p>\n",
			html.EscapeString(string(p)), html.EscapeString(string(p)), html.EscapeString(why))
		return writeFileAtomic(path, []byte(page))
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := models.Visualize(ctx, f, p, h); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
