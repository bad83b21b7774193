package main

import (
	"github.com/fencecheck/fencecheck/models"
)

// exitFor maps a report to the exit code under --fail-on: 3 when the checkers disagree
// or a violation's witness was not confirmed (models.Report.Trouble: a checker bug), 1
// when a chosen property is violated, 3 when no checker decided one, 4 when one is
// inconclusive (the history lacks the evidence: judge.Why says which), else 0.
func exitFor(rep *models.Report, failOn []models.Property) int {
	if rep.Trouble() != "" {
		return exitInternal
	}
	code := exitSafe
	for _, p := range failOn {
		switch rep.Verdicts[p] {
		case models.Violated:
			code = worst(code, exitViolated)
		case models.Unknown:
			code = worst(code, exitInternal)
		case models.Inconclusive:
			code = worst(code, exitInconclusive)
		}
	}
	return code
}

// worst combines the exit codes of several runs: a proven violation (1) stands whatever
// else happened, then fencecheck's own failure (3), then a run that could not be made
// (2), then a run that proved nothing (4), then safe (0).
func worst(codes ...int) int {
	rank := map[int]int{exitSafe: 0, exitInconclusive: 1, exitUsage: 2, exitInternal: 3, exitViolated: 4}
	out := exitSafe
	for _, c := range codes {
		if rank[c] > rank[out] {
			out = c
		}
	}
	return out
}
