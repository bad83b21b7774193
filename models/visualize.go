package models

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/fencecheck/fencecheck/harness/history"
)

// Visualize writes porcupine's HTML visualization of property p's check of h to w: the
// linearization when p held, the longest partial linearizations when it was violated
// (the picture is most useful then), whatever porcupine found before its timeout
// otherwise. Faults are drawn as annotation rows, and so are the direct analysis's stale
// writes (register) and lost updates (updates). A deadline on ctx bounds the check
// (DefaultTimeout otherwise).
func Visualize(ctx context.Context, w io.Writer, p Property, h *history.History) error {
	if !p.Valid() {
		return fmt.Errorf("visualize: unknown property %q", p)
	}
	if h == nil {
		return fmt.Errorf("visualize %s: no history", p)
	}
	if ok, why := Drawable(p, h); !ok {
		return fmt.Errorf("visualize %s: %s", p, why)
	}
	vals := newValues(h)
	model := newModel(ctx, p, h, vals)
	ops := operations(p, h, vals)
	_, info := porcupine.CheckOperationsVerbose(model, ops, visualizeTimeout(ctx))
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("visualize %s: %w", p, err)
	}
	info.AddAnnotations(annotations(p, h))
	if err := porcupine.Visualize(model, info, w); err != nil {
		return fmt.Errorf("visualize %s: %w", p, err)
	}
	return nil
}

// Drawable says whether Visualize can draw property p of h, and if not, why: the
// drawing needs porcupine's search of the whole history, whose memory grows as n², so it
// is drawn only within the second opinion's default cap (DefaultPorcupineMaxBytes).
func Drawable(p Property, h *history.History) (bool, string) {
	if !p.Valid() || h == nil {
		return false, "unknown property or no history"
	}
	_, largest, est := modelSize(p, splitByKey(h))
	if est > DefaultPorcupineMaxBytes {
		return false, fmt.Sprintf("not drawn: %d %s ops on the largest key, and porcupine's memory grows as n² (about %s here, over the %s cap)",
			largest, p, bytesText(est), bytesText(DefaultPorcupineMaxBytes))
	}
	return true, ""
}

// annotations draws the faults, and the direct analysis's findings for p, as extra rows.
func annotations(p Property, h *history.History) []porcupine.Annotation {
	end := h.LastTime()
	var out []porcupine.Annotation
	for _, f := range h.Faults {
		stop, healed := end, "never healed"
		if f.End != nil {
			stop, healed = *f.End, fmt.Sprintf("healed at %d ns", *f.End)
		}
		out = append(out, porcupine.Annotation{
			Tag:             "fault " + f.Target,
			Start:           f.Start,
			End:             stop,
			Description:     f.Kind,
			Details:         fmt.Sprintf("%s on %s from %d ns, %s. %s", f.Kind, f.Target, f.Start, healed, f.Detail),
			BackgroundColor: "#f6d5d5",
		})
	}
	if p != Register && p != Updates {
		return out
	}
	d := Direct(h)
	byID := h.ByID()
	if p == Register {
		for _, s := range d.StaleWrites {
			w := byID[s.Write]
			stop := w.End()
			if stop == history.Infinity {
				stop = w.Call
			}
			out = append(out, porcupine.Annotation{
				Tag:             "stale writes",
				Start:           w.Call,
				End:             stop,
				Description:     fmt.Sprintf("#%d %s", s.Write, s.Status),
				Details:         fmt.Sprintf("write #%d (client %d, token %d) is older than write #%d (client %d, token %d), in effect by %d ns; %s", s.Write, s.Client, s.Token, s.Newer, s.NewerClient, s.NewerToken, s.NewerAt, s.Status),
				BackgroundColor: staleColor(s.Status),
			})
		}
		return out
	}
	for _, l := range d.LostUpdates {
		w := byID[l.Write]
		stop := w.End()
		if stop == history.Infinity {
			stop = w.Call
		}
		out = append(out, porcupine.Annotation{
			Tag:             "lost updates",
			Start:           w.Call,
			End:             stop,
			Description:     fmt.Sprintf("#%d", l.Write),
			Details:         fmt.Sprintf("write #%d (client %d): %s", l.Write, l.Client, l.Explanation),
			BackgroundColor: "#f6d5d5",
		})
	}
	return out
}

func staleColor(status string) string {
	if status == statusRejected {
		return "#d5f0d5"
	}
	return "#f6d5d5"
}

// visualizeTimeout is DefaultTimeout, cut short by ctx's deadline.
func visualizeTimeout(ctx context.Context) time.Duration {
	t := DefaultTimeout
	if dl, ok := ctx.Deadline(); ok {
		t = max(min(t, time.Until(dl)), time.Millisecond)
	}
	return t
}
