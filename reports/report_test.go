package reports_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/reports"
	"github.com/fencecheck/fencecheck/reports/browsertest"
	"github.com/fencecheck/fencecheck/reports/reporttest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func checked(t *testing.T, o reporttest.Options) (*history.History, *models.Report) {
	t.Helper()
	h := reporttest.History(o)
	require.NoError(t, h.Validate())
	rep, err := models.Check(context.Background(), h, models.Options{})
	require.NoError(t, err)
	return h, rep
}

func TestSyntheticHistories(t *testing.T) {
	_, rep := checked(t, reporttest.Options{Ops: 400})
	require.Equal(t, models.Violated, rep.Verdicts[models.Register])
	require.Equal(t, 1, rep.Evidence.StaleAccepted)
	_, rep = checked(t, reporttest.Options{Ops: 400, Fenced: true})
	require.Equal(t, models.Held, rep.Verdicts[models.Register])
	require.Equal(t, models.Held, rep.Verdicts[models.Updates])
	require.Equal(t, 1, rep.Evidence.StaleRejected)
	require.Zero(t, rep.Evidence.StaleAccepted)
}

func TestReportContent(t *testing.T) {
	h, rep := checked(t, reporttest.Options{Ops: 200, Scenario: "synthetic-unfenced"})
	dir := t.TempDir()
	require.NoError(t, reports.WriteRun(context.Background(), dir, h, rep))
	b, err := os.ReadFile(filepath.Join(dir, reports.ReportFile))
	require.NoError(t, err)
	page := string(b)
	for _, want := range []string{
		"UNSAFE: 1 stale write got through",
		`data-property="register" data-verdict="violated"`,
		`data-property="tokens" data-verdict="held"`,
		"porcupine-register.html", "porcupine-mutex.html",
		`id="stale-writes"`, "it was accepted: the stale write got through",
		`id="timeline-canvas"`, `id="latency-canvas"`, `id="throughput-canvas"`,
		"synthetic-unfenced",
	} {
		require.Contains(t, page, want)
	}
	// Self-contained: nothing is loaded from elsewhere.
	for _, bad := range []string{"http://", "https://", "<link rel=\"stylesheet\"", "<script src"} {
		require.NotContains(t, page, bad)
	}
	for _, p := range models.Properties {
		require.FileExists(t, filepath.Join(dir, "porcupine-"+string(p)+".html"))
	}
}

// Text from a history is escaped everywhere: the scenario name, run settings, fault
// details, op values and errors.
func TestReportEscapes(t *testing.T) {
	h, rep := checked(t, reporttest.Options{Ops: 120, Scenario: reporttest.Evil, Evil: true})
	var buf bytes.Buffer
	require.NoError(t, reports.RenderReport(&buf, h, rep))
	page := buf.String()
	require.NotContains(t, page, "<script>window.pwned")
	require.NotContains(t, page, `<img src=x`)
	require.Equal(t, 2, strings.Count(page, "<script"), "only the data block and the report's own script")
}

func TestHeadline(t *testing.T) {
	h, rep := checked(t, reporttest.Options{Ops: 120, Fenced: true})
	hl := reports.MakeHeadline(h, rep)
	require.Equal(t, reports.OutcomeSafe, hl.Outcome)
	require.Equal(t, "SAFE: the fence rejected 1 stale write", hl.Title)
	require.Contains(t, hl.Text, "the fence rejected it")
	require.Contains(t, strings.Join(hl.Notes, " "), "validity gap")

	// Without faults (none asked for, none struck) and without stale writes: simply safe.
	h.Faults, h.Run.Faults = nil, nil
	h.Ops = h.Ops[:8]
	rep, err := models.Check(context.Background(), h, models.Options{})
	require.NoError(t, err)
	require.Equal(t, "SAFE: the protected data held", reports.MakeHeadline(h, rep).Title)
}

func TestGapSamples(t *testing.T) {
	h, rep := checked(t, reporttest.Options{Ops: 300})
	gaps := reports.GapSamples(h)
	require.NotEmpty(t, gaps)
	require.Equal(t, rep.Evidence.ValidityGapNanos, gaps[len(gaps)-1], "the largest sample is the validity gap")
}

func TestDuration(t *testing.T) {
	for ns, want := range map[int64]string{
		0: "0 ns", 999: "999 ns", 12_000: "12 µs", 350_000_000: "350 ms", 1_520_000_000: "1.52 s", 95 * int64(time.Second): "1m35s",
	} {
		require.Equal(t, want, reports.Duration(ns))
	}
}

// openPage opens a file in the browser and fails on console errors.
func openPage(t *testing.T, b *browsertest.Browser, path string) *browsertest.Page {
	t.Helper()
	p, err := b.NewPage(1400, 1000)
	require.NoError(t, err)
	require.NoError(t, p.Navigate("file://"+path))
	return p
}

func TestReportInBrowser(t *testing.T) {
	b := browsertest.Start(t)
	ctx := context.Background()
	h, rep := checked(t, reporttest.Options{Ops: 400, Scenario: "synthetic-unfenced", NodeFault: true})
	for _, o := range h.Ops { // a lost record on the timeline too
		if o.Kind == history.Acquire && o.Status == history.OK {
			h.Lost = append(h.Lost, history.Lost{Client: o.Client, AcquireID: o.ID, Token: o.Token, At: *o.Return + 1, Reason: "renewal refused"})
			break
		}
	}
	require.NoError(t, h.Validate())
	dir := t.TempDir()
	require.NoError(t, reports.WriteRun(ctx, dir, h, rep))
	p := openPage(t, b, filepath.Join(dir, reports.ReportFile))
	require.NoError(t, p.WaitFor(ctx, `document.body.dataset.timeline === 'rendered'`))

	var got struct {
		Title     string
		Verdicts  map[string]string
		Stale     []string
		Lanes     int
		Drawn     int
		Painted   bool
		Latency   bool
		Visible   bool
		FaultRows int
	}
	require.NoError(t, p.Eval(`(function(){
		var v = {};
		document.querySelectorAll('[data-property]').forEach(function(e){ v[e.dataset.property] = e.dataset.verdict; });
		function painted(id){ var c = document.getElementById(id), g = c.getContext('2d');
			var d = g.getImageData(0, 0, c.width, c.height).data, n = 0;
			for (var i = 0; i < d.length; i += 4) if (d[i+3] > 0 && (d[i] < 200 || d[i+1] < 200)) n++;
			return n > 500; }
		var st = document.getElementById('stale-writes');
		return { title: document.querySelector('#headline h1').innerText, verdicts: v,
			stale: Array.from(document.querySelectorAll('#stale-writes li')).map(function(e){ return e.innerText; }),
			lanes: JSON.parse(document.getElementById('fc-data').textContent).lanes.length,
			drawn: Number(document.body.dataset.opsDrawn), painted: painted('timeline-canvas'), latency: painted('latency-canvas'),
			visible: st.getBoundingClientRect().height > 0,
			faultRows: document.querySelectorAll('#faults tbody tr').length };
	})()`, &got))
	require.Equal(t, "UNSAFE: 1 stale write got through", got.Title)
	require.Equal(t, map[string]string{"register": "violated", "updates": "violated", "tokens": "held", "mutex": "violated"}, got.Verdicts)
	require.Len(t, got.Stale, 1)
	require.Contains(t, got.Stale[0], "the stale write got through")
	require.True(t, got.Visible)
	require.Equal(t, 4, got.Lanes, "3 clients and node 1")
	require.Equal(t, len(h.Ops), got.Drawn, "the whole run is drawn at first")
	require.True(t, got.Painted, "the timeline canvas is blank")
	require.True(t, got.Latency, "the latency canvas is blank")
	require.Equal(t, 2, got.FaultRows)

	// "show on timeline" zooms to the stale write and the newer write it overtook, and
	// shows the stale write's details.
	require.NoError(t, p.Eval(`document.querySelector('#stale-writes a.show').click()`, nil))
	require.NoError(t, p.WaitFor(ctx, `!document.getElementById('op-details').hidden`))
	var view struct{ A, B float64 }
	require.NoError(t, p.Eval(`window.fencecheck.view`, &view))
	var stale models.StaleWrite = rep.StaleWrites[0]
	require.Less(t, view.A, float64(h.ByID()[stale.Newer].Call), "the newer write is in view")
	require.Greater(t, view.B, float64(stale.At), "the stale write is in view")
	require.Less(t, view.A, float64(h.Faults[0].Start), "the pause is in view")
	var details string
	require.NoError(t, p.Eval(`document.getElementById('op-details').innerText`, &details))
	require.Contains(t, details, "write, stale write accepted")

	// Zoom and pan by wheel and drag, as a person would.
	var span0, span1 float64
	require.NoError(t, p.Eval(`window.fencecheck.fit(); new Promise(function(r){ requestAnimationFrame(function(){ r(window.fencecheck.view.b - window.fencecheck.view.a); }); })`, &span0))
	require.NoError(t, p.Eval(`(function(){ var c = document.getElementById('timeline-canvas'), r = c.getBoundingClientRect();
		for (var i = 0; i < 5; i++) c.dispatchEvent(new WheelEvent('wheel', {deltaY: -300, clientX: r.left + r.width/2, clientY: r.top + 80, bubbles: true, cancelable: true}));
		return window.fencecheck.view.b - window.fencecheck.view.a; })()`, &span1))
	require.Less(t, span1, span0/5, "the wheel zooms in")
	require.NoError(t, p.Screenshot(filepath.Join(t.TempDir(), "report.png")))
	require.Empty(t, p.Errors(), "console errors")
}

// A 10,000-op history: the report stays one file of reasonable size, renders, and zooms.
func TestReport10kOps(t *testing.T) {
	h, rep := checked(t, reporttest.Options{Ops: 10_000, Fenced: true, Scenario: "synthetic-10k"})
	dir := t.TempDir()
	require.NoError(t, reports.WriteReport(dir, h, rep))
	st, err := os.Stat(filepath.Join(dir, reports.ReportFile))
	require.NoError(t, err)
	t.Logf("report.html of %d ops: %d bytes", len(h.Ops), st.Size())
	require.Less(t, st.Size(), int64(4<<20), "a 10k-op report should stay a few MB")

	b := browsertest.Start(t)
	ctx := context.Background()
	p := openPage(t, b, filepath.Join(dir, reports.ReportFile))
	require.NoError(t, p.WaitFor(ctx, `document.body.dataset.timeline === 'rendered'`))
	var drawn int
	require.NoError(t, p.Eval(`Number(document.body.dataset.opsDrawn)`, &drawn))
	require.Equal(t, len(h.Ops), drawn)
	require.NoError(t, p.Eval(`window.fencecheck.zoom(0.01); new Promise(function(r){ requestAnimationFrame(function(){ requestAnimationFrame(function(){ r(Number(document.body.dataset.opsDrawn)); }); }); })`, &drawn))
	require.Less(t, drawn, len(h.Ops)/10, "zoomed in, only the visible ops are drawn")
	require.Positive(t, drawn)
	require.Empty(t, p.Errors())
}

// Tiny histories (no ops at all, no faults, one client) render without errors too.
func TestTinyReportsInBrowser(t *testing.T) {
	b := browsertest.Start(t)
	ctx := context.Background()
	ret := func(v int64) *int64 { return &v }
	for name, h := range map[string]*history.History{
		"empty": {Format: history.Format},
		"one write": {Format: history.Format, Ops: []history.Op{
			{ID: 1, Client: 0, Kind: history.Acquire, Call: 0, Return: ret(10), Status: history.OK, Token: 1},
			{ID: 2, Client: 0, Kind: history.Write, Call: 20, Return: nil, Status: history.Unknown, Token: 1, Value: "v"},
		}},
	} {
		t.Run(name, func(t *testing.T) {
			rep, err := models.Check(ctx, h, models.Options{})
			require.NoError(t, err)
			dir := t.TempDir()
			require.NoError(t, reports.WriteReport(dir, h, rep))
			p := openPage(t, b, filepath.Join(dir, reports.ReportFile))
			require.NoError(t, p.WaitFor(ctx, `document.body.dataset.timeline === 'rendered'`))
			require.NoError(t, p.Eval(`window.fencecheck.zoom(0.5); window.fencecheck.focusOp(2, false); new Promise(function(r){ requestAnimationFrame(function(){ r(); }); })`, nil))
			require.Empty(t, p.Errors())
		})
	}
}

// The timeline's view never leaves the run: a fresh report shows exactly 0 s to its end
// (it once said "showing -41 ms – 4.12 s"), and no zoom, pan or focus goes before 0 or
// past the end.
func TestTimelineViewStaysInsideTheRun(t *testing.T) {
	b := browsertest.Start(t)
	ctx := context.Background()
	h, rep := checked(t, reporttest.Options{Ops: 400, Scenario: "synthetic-unfenced"})
	dir := t.TempDir()
	require.NoError(t, reports.WriteRun(ctx, dir, h, rep))
	p := openPage(t, b, filepath.Join(dir, reports.ReportFile))
	require.NoError(t, p.WaitFor(ctx, `document.body.dataset.timeline === 'rendered'`))

	type step struct {
		Name  string
		A, B  float64
		Label string
	}
	var steps []step
	// Each action, then the view and the header once the frame is drawn.
	require.NoError(t, p.Eval(`(async function(){
		var fc = window.fencecheck, out = [], c = document.getElementById('timeline-canvas');
		function frame(){ return new Promise(function(r){ requestAnimationFrame(function(){ requestAnimationFrame(r); }); }); }
		async function take(name){ await frame(); out.push({name: name, a: fc.view.a, b: fc.view.b, label: document.getElementById('view-range').textContent}); }
		function key(k){ c.dispatchEvent(new KeyboardEvent('keydown', {key: k, bubbles: true, cancelable: true})); }
		function wheel(dy, atLeft){ var r = c.getBoundingClientRect();
			c.dispatchEvent(new WheelEvent('wheel', {deltaY: dy, clientX: atLeft ? r.left + 90 : r.right - 10, clientY: r.top + 80, bubbles: true, cancelable: true})); }
		await take('fresh');
		fc.zoom(1/4); await take('zoom in');
		for (var i = 0; i < 20; i++) key('ArrowLeft'); await take('pan left');
		for (i = 0; i < 20; i++) key('ArrowRight'); await take('pan right');
		fc.focusOp(1, false); await take('focus the first op');
		for (i = 0; i < 10; i++) wheel(300, true); await take('wheel out at the left edge');
		fc.focusOp(`+itoa(h.Ops[len(h.Ops)-1].ID)+`, false); await take('focus the last op');
		for (i = 0; i < 10; i++) wheel(300, false); await take('wheel out at the right edge');
		key('0'); await take('fit again');
		return out;
	})()`, &steps))
	end := float64(h.LastTime())
	require.Len(t, steps, 9)
	for _, s := range steps {
		require.GreaterOrEqual(t, s.A, 0.0, "%s: the view starts before the run: %s", s.Name, s.Label)
		require.LessOrEqual(t, s.B, end, "%s: the view ends after the run: %s", s.Name, s.Label)
		require.Less(t, s.A, s.B, s.Name)
		require.NotContains(t, s.Label, "-", "%s: a negative time in %q", s.Name, s.Label)
	}
	for _, i := range []int{0, len(steps) - 1} {
		require.Equal(t, 0.0, steps[i].A, steps[i].Name)
		require.Equal(t, end, steps[i].B, steps[i].Name)
		require.True(t, strings.HasPrefix(steps[i].Label, "showing 0 s – "+reports.Seconds(h.LastTime())+" of "+reports.Seconds(h.LastTime())), "%s: %q", steps[i].Name, steps[i].Label)
	}
	require.Empty(t, p.Errors(), "console errors")
}

func itoa(n int) string { return strconv.Itoa(n) }

// The lock timing reads the same in the terminal summary and on the run page: "never"
// when a superseded holder never noticed.
func TestLockTimingShown(t *testing.T) {
	tests := []struct {
		ev   models.Evidence
		want string
	}{
		{models.Evidence{}, "none (no holder was superseded)"},
		{models.Evidence{Superseded: 2, Noticed: 2, NoticeDelayNanos: 120e6, NoticeDelayP50Nanos: 3e6}, "120 ms (median 3 ms, over 2 superseded holders)"},
		{models.Evidence{Superseded: 2, Noticed: 1, NeverNoticed: 1, NoticeDelayNanos: 1.5e9, NoticeDelayP50Nanos: 1.5e9}, "never (1 of 2 superseded holders never noticed; the others within 1.50 s, median 1.50 s)"},
		{models.Evidence{Superseded: 1, NeverNoticed: 1}, "never (1 of 1 superseded holder never noticed)"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, reports.NoticeDelay(tt.ev))
	}
	require.Equal(t, "none", reports.Takeover(models.Evidence{}))
	require.Equal(t, "12.3", reports.GrantRate(12.34))

	h, rep := checked(t, reporttest.Options{Ops: 200})
	rep.Evidence.Superseded, rep.Evidence.NeverNoticed = 1, 1
	rep.Evidence.TakeoverNanos = 2.2e9
	rep.Evidence.AcquireP50Nanos, rep.Evidence.AcquireP99Nanos, rep.Evidence.GrantsPerSecond = 2e6, 40e6, 7.5
	var sum bytes.Buffer
	reports.Summary(&sum, h, rep)
	require.Contains(t, sum.String(), "lock timing: notice delay never (1 of 1 superseded holder never noticed); takeover 2.20 s; overshoot unknown (no superseded holder recorded its valid-until); acquire p50 2 ms, p99 40 ms; 7.50 grants/s\n")
	var a history.Op
	for _, o := range h.Ops {
		if o.Kind == history.Acquire && o.Status == history.OK {
			a = o
		}
	}
	h.Lost = []history.Lost{{Client: a.Client, AcquireID: a.ID, Token: a.Token, At: *a.Return + 5, Reason: "renewal refused"}}
	var page bytes.Buffer
	require.NoError(t, reports.RenderReport(&page, h, rep))
	require.Contains(t, page.String(), fmt.Sprintf(`"lost":[{"lane":%d,"at":%d,"acq":%d,"token":%d,"reason":"renewal refused"}]`, a.Client, *a.Return+5, a.ID, a.Token), "the timeline draws the lost record")
	for _, want := range []string{"<th>notice delay</th><td>never (1 of 1 superseded holder never noticed)</td>", "<th>takeover</th><td>2.20 s</td>", "<th>acquire p50 / p99</th><td>2 ms / 40 ms</td>", "<th>grants/s</th><td>7.50</td>"} {
		require.Contains(t, page.String(), want)
	}
}
