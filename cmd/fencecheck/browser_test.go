package main

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/reports/browsertest"
)

// The pages a user opens, in a real browser: the matrix index (from disk) with every cell
// linked and a cell's link opening its run report; the scorecard; and the store's index
// served by `fencecheck serve`, linking to both. No page logs a console error.
func TestPagesInBrowser(t *testing.T) {
	t.Parallel()
	b := browsertest.Start(t)
	ctx := context.Background()
	out := t.TempDir()
	code, stdout, stderr := run(t, "matrix", "--backend", "naive", "--resource", "unfenced,fenced", "--fault", "pause", "--out", out)
	require.Equal(t, exitSafe, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	code, stdout, stderr = run(t, "evaluate", "--backend", "naive", "--fault", "delay", "--out", out)
	require.Equal(t, exitSafe, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	shots := t.TempDir()

	p, err := b.NewPage(1300, 900)
	require.NoError(t, err)

	// The matrix, opened from disk.
	require.NoError(t, p.Navigate("file://"+filepath.Join(out, "matrix", "latest", "index.html")))
	var matrix struct {
		Page     string
		Cells    int
		Linked   int
		Outcomes []string
	}
	require.NoError(t, p.Eval(`({ page: document.body.dataset.page,
		cells: document.querySelectorAll('#matrix td.cell').length,
		linked: document.querySelectorAll('#matrix td.cell a.cell-link[href$="/report.html"]').length,
		outcomes: Array.from(document.querySelectorAll('#matrix td.cell')).map(function(e){ return e.dataset.outcome; }) })`, &matrix))
	require.Equal(t, "matrix", matrix.Page)
	require.Equal(t, 2, matrix.Cells)
	require.Equal(t, 2, matrix.Linked, "every cell links to its run")
	require.Equal(t, []string{"unsafe", "safe"}, matrix.Outcomes)
	require.NoError(t, p.Screenshot(filepath.Join(shots, "matrix.png")))
	require.Empty(t, p.Errors(), "matrix page")

	// A cell's link opens its run report, which shows the stale write on its timeline.
	require.NoError(t, p.Click(`#matrix td.cell[data-resource="unfenced"] a.cell-link`))
	require.NoError(t, p.WaitFor(ctx, `document.body.dataset.timeline === 'rendered'`))
	var report struct {
		Page, Scenario, Title string
		Stale                 int
	}
	require.NoError(t, p.Eval(`({ page: document.body.dataset.page, scenario: document.getElementById('scenario-name').innerText,
		title: document.querySelector('#headline h1').innerText,
		stale: document.querySelectorAll('#stale-writes li.stale').length })`, &report))
	require.Equal(t, "report", report.Page)
	require.Equal(t, "naive-unfenced-pause", report.Scenario)
	require.Equal(t, "UNSAFE: 1 stale write got through", report.Title)
	require.Equal(t, 1, report.Stale)
	require.NoError(t, p.Screenshot(filepath.Join(shots, "report.png")))
	require.Empty(t, p.Errors(), "run report")

	// The scorecard.
	require.NoError(t, p.Navigate("file://"+filepath.Join(out, "evaluate-naive", "latest", "scorecard.html")))
	var card struct {
		Safe, Verdict string
		Rows, Linked  int
	}
	require.NoError(t, p.Eval(`({ safe: document.body.dataset.safe, verdict: document.getElementById('verdict').innerText,
		rows: document.querySelectorAll('#scorecard tbody tr').length,
		linked: document.querySelectorAll('#scorecard td.run a[href$="/report.html"]').length })`, &card))
	require.Equal(t, "true", card.Safe)
	require.Contains(t, card.Verdict, "naive is safe to adopt with a fenced resource")
	require.Equal(t, 1, card.Rows)
	require.Equal(t, 2, card.Linked)
	require.NoError(t, p.Screenshot(filepath.Join(shots, "scorecard.png")))
	require.Empty(t, p.Errors(), "scorecard")

	// The store, served: its index links to the matrix, the scorecard and each run.
	base := startServe(t, out)
	require.NoError(t, p.Navigate(base))
	var store struct{ Kinds []string }
	require.NoError(t, p.Eval(`({ kinds: Array.from(document.querySelectorAll('#store tbody tr')).map(function(e){ return e.dataset.kind; }) })`, &store))
	require.Equal(t, []string{"scorecard", "matrix", "run", "run", "run", "run"}, store.Kinds)
	require.NoError(t, p.Click(`#store tr[data-kind="matrix"] a`))
	require.NoError(t, p.Click(`#matrix td.cell[data-resource="fenced"] a.cell-link`))
	require.NoError(t, p.WaitFor(ctx, `document.body.dataset.timeline === 'rendered'`))
	require.NoError(t, p.Eval(`document.body.dataset.outcome`, &report.Page))
	require.Equal(t, "safe", report.Page)
	require.Empty(t, p.Errors(), "served pages")
}
