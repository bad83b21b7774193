package naive_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/backend/naive"
	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/harnesstest"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/spec"
	"github.com/fencecheck/fencecheck/trial"
)

// TestPausedHolderRecordsLost: a real run on the naive server with the holder paused.
// Its links stall, so its renewals go unconfirmed and its lease is lost by its own
// clock (or refused once the links pass again): the history records it, and the lock
// timing in the evidence is what the history's records give, in memory and streamed.
func TestPausedHolderRecordsLost(t *testing.T) {
	reg := harnesstest.Registry(t, naive.Descriptors()...)
	dir := t.TempDir()
	o, err := trial.Run(context.Background(), reg, spec.Spec{Backend: "naive", Resource: "fenced", Faults: []string{"pause"}}, trial.Options{Dir: dir})
	require.NoError(t, err)
	h := o.History

	var pause history.Fault
	for _, f := range h.Faults {
		if f.Kind == "pause" {
			pause = f
		}
	}
	require.NotEmpty(t, pause.Target, "no pause in %+v", h.Faults)
	want := recordsSay(h)
	// The paused holder: its grant held when the pause began.
	var struck *holdTiming
	for i := range want.holds {
		hd := &want.holds[i]
		if fmt.Sprintf("client-%d", hd.client) == pause.Target && hd.a <= pause.Start && pause.Start < hd.e {
			struck = hd
		}
	}
	require.NotNil(t, struck, "no hold of %s when the pause began at %d", pause.Target, pause.Start)
	require.True(t, struck.superseded, "the paused holder was not superseded: %+v", *struck)
	require.True(t, struck.noticed, "the paused holder's lost record is missing: lost %+v", h.Lost)
	for _, l := range h.Lost {
		if l.AcquireID == struck.acqID {
			require.NotEmpty(t, l.Reason, "the naive lease says why it was lost")
		}
	}

	ev := o.Report.Evidence
	require.Equal(t, want.superseded, ev.Superseded)
	require.Equal(t, want.noticed, ev.Noticed)
	require.Equal(t, want.superseded-want.noticed, ev.NeverNoticed)
	require.Equal(t, want.delay, ev.NoticeDelayNanos, "the longest notice delay")
	require.Equal(t, want.takeover, ev.TakeoverNanos)
	require.Positive(t, ev.TakeoverNanos, "the paused holder made no progress while it was stopped")
	require.Positive(t, ev.AcquireP50Nanos)
	require.GreaterOrEqual(t, ev.AcquireP99Nanos, ev.AcquireP50Nanos)
	require.Positive(t, ev.GrantsPerSecond)
	t.Logf("superseded %d, noticed %d, notice delay %d ns (the paused holder's: %d ns), takeover %d ns", ev.Superseded, ev.Noticed, ev.NoticeDelayNanos, struck.delay, ev.TakeoverNanos)

	streamed, err := models.CheckFile(context.Background(), filepath.Join(dir, "history.json"), models.Options{StreamAbove: -1})
	require.NoError(t, err)
	require.True(t, streamed.Streamed)
	require.Equal(t, ev, streamed.Report.Evidence, "the stream's evidence of the same history")
}

// holdTiming is one hold as the test reads it from the records, plainly.
type holdTiming struct {
	client, acqID       int
	a, e                int64 // the grant's return; the release's call (or never)
	superseded          bool
	noticed             bool
	delay, takeover     int64
	s, progress, lostAt int64
}

type recordsSaid struct {
	holds               []holdTiming
	superseded, noticed int
	delay, takeover     int64
}

// recordsSay works the lock timing out of h's records one hold at a time, in the
// plainest way (quadratic, single key): each client's ok acquire and its next release,
// the earliest other grant returning inside it, the holder's accepted writes in it, its
// earliest lost record.
func recordsSay(h *history.History) recordsSaid {
	var out recordsSaid
	for i, a := range h.Ops {
		if a.Kind != history.Acquire || a.Status != history.OK {
			continue
		}
		hd := holdTiming{client: a.Client, acqID: a.ID, a: *a.Return, e: history.Infinity, s: history.Infinity}
		relIdx := len(h.Ops)
		for j, r := range h.Ops[i+1:] {
			if r.Client == a.Client && r.Kind == history.Release {
				hd.e, relIdx = r.Call, i+1+j
				break
			}
		}
		for _, n := range h.Ops {
			if n.Kind == history.Acquire && n.Status == history.OK && n.Client != a.Client && *n.Return > hd.a && *n.Return < hd.e {
				hd.s = min(hd.s, *n.Return)
			}
		}
		if hd.s != history.Infinity {
			hd.superseded = true
			out.superseded++
			hd.progress = hd.a
			for _, w := range h.Ops[i+1 : relIdx] {
				if w.Client == a.Client && w.Kind == history.Write && w.Status == history.OK && *w.Return <= hd.s {
					hd.progress = max(hd.progress, *w.Return)
				}
			}
			hd.takeover = hd.s - hd.progress
			out.takeover = max(out.takeover, hd.takeover)
			for _, l := range h.Lost {
				if l.AcquireID == a.ID && (!hd.noticed || l.At < hd.lostAt) {
					hd.noticed, hd.lostAt = true, l.At
				}
			}
			if hd.noticed {
				out.noticed++
				hd.delay = max(0, hd.lostAt-hd.s)
				out.delay = max(out.delay, hd.delay)
			}
		}
		out.holds = append(out.holds, hd)
	}
	return out
}
