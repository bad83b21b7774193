// Package reports turns a checked history into what people read: the terminal summary,
// verdict.json, and the porcupine visualizations (HTML). It works offline from a saved
// history and never imports a backend.
package reports

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"fencecheck/harness/history"
	"fencecheck/models"
)

// VerdictFile is the content of verdict.json.
type VerdictFile struct {
	Format string `json:"format"`
	*models.Report
}

// VerdictFormat names verdict.json's format.
const VerdictFormat = "fencecheck.verdict/v1"

// WriteRun writes verdict.json and one porcupine visualization per property
// (porcupine-<property>.html, rendered also when the property is violated) into dir.
func WriteRun(ctx context.Context, dir string, h *history.History, rep *models.Report) error {
	b, err := json.MarshalIndent(VerdictFile{Format: VerdictFormat, Report: rep}, "", "  ")
	if err != nil {
		return fmt.Errorf("encode verdict: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "verdict.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	for _, p := range models.Properties {
		if err := writeVisualization(ctx, filepath.Join(dir, "porcupine-"+string(p)+".html"), p, h); err != nil {
			return fmt.Errorf("visualize %s: %w", p, err)
		}
	}
	return nil
}

func writeVisualization(ctx context.Context, path string, p models.Property, h *history.History) error {
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
