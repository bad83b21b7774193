package main

import "github.com/fencecheck/fencecheck/scenarios"

// defaultOut is the results store when --out is not given.
const defaultOut = "fencecheck-results"

// relTo returns path relative to root, with forward slashes.
func relTo(root, path string) string { return scenarios.RelTo(root, path) }
