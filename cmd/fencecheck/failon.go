package main

import (
	"fmt"
	"strings"

	"github.com/fencecheck/fencecheck/models"
)

// parseFailOn parses --fail-on: a comma-separated list of properties.
func parseFailOn(s string) ([]models.Property, error) {
	var out []models.Property
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		found := false
		for _, p := range models.AllProperties {
			if string(p) == part {
				out = append(out, p)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("--fail-on: unknown property %q (want some of register, updates, tokens, mutex, effects)", part)
		}
	}
	return out, nil
}

// exitFor maps a report to the exit code under --fail-on: 3 when the checkers disagree
// or a violation's witness was not confirmed (models.Report.Trouble: a checker bug), 1
// when a chosen property is violated, 3 when no checker decided one, else 0.
func exitFor(rep *models.Report, failOn []models.Property) int {
	if rep.Trouble() != "" {
		return exitInternal
	}
	code := exitSafe
	for _, p := range failOn {
		switch rep.Verdicts[p] {
		case models.Violated:
			return exitViolated
		case models.Unknown:
			code = exitInternal
		}
	}
	return code
}
