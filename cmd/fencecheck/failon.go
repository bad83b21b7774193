package main

import (
	"github.com/fencecheck/fencecheck/models"
)

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

// worst combines the exit codes of several runs: a proven violation (1) stands whatever
// else happened, then fencecheck's own failure (3), then a run that could not be made
// (2), then safe (0).
func worst(codes ...int) int {
	rank := map[int]int{exitSafe: 0, exitUsage: 1, exitInternal: 2, exitViolated: 3}
	out := exitSafe
	for _, c := range codes {
		if rank[c] > rank[out] {
			out = c
		}
	}
	return out
}
