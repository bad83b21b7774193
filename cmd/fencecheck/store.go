package main

import "github.com/fencecheck/fencecheck/campaign"

// relTo returns path relative to root, with forward slashes.
func relTo(root, path string) string { return campaign.RelTo(root, path) }
