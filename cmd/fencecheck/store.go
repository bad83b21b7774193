package main

import "github.com/fencecheck/fencecheck/campaign"

// defaultOut is the results store when --out is not given.
const defaultOut = "fencecheck-results"

// relTo returns path relative to root, with forward slashes.
func relTo(root, path string) string { return campaign.RelTo(root, path) }
