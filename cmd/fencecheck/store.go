package main

import (
	"fmt"

	"github.com/fencecheck/fencecheck/campaign"
	"github.com/fencecheck/fencecheck/reports"
)

// relTo returns path relative to root, with forward slashes.
func relTo(root, path string) string { return campaign.RelTo(root, path) }

// endRun records in the results store how the run in dir ended (see reports.EndRun: a
// run that failed says so in its folder, and latest moves only to a run with a history)
// and refreshes the store's index.
func (a *app) endRun(store, dir string, runErr error) error {
	failure := ""
	if runErr != nil {
		failure = a.red.String(message(runErr))
	}
	if err := reports.EndRun(dir, failure); err != nil {
		return fmt.Errorf("results store: %w", err)
	}
	if err := reports.WriteStoreIndex(store); err != nil {
		return fmt.Errorf("store index: %w", err)
	}
	return nil
}
