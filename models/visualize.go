package models

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/fencecheck/fencecheck/harness/history"
)

// Visualize writes porcupine's HTML visualization of property p's check of h to w. When
// the direct analysis finds p violated, it draws the witness (the sub-history porcupine
// certifies, docs/checker.md): the longest partial linearizations of a few ops show
// where the history gets stuck, and porcupine draws them at once at any history size.
// Otherwise it draws porcupine's linearization of the whole history (whatever it found
// before its timeout, if it did not finish), for histories within Drawable. Faults are
// drawn as annotation rows, and so are the direct analysis's stale writes (register)
// and lost updates (updates). A deadline on ctx bounds the check (DefaultTimeout
// otherwise).
func Visualize(ctx context.Context, w io.Writer, p Property, h *history.History) error {
	if !p.Valid() {
		return fmt.Errorf("visualize: unknown property %q", p)
	}
	if h == nil {
		return fmt.Errorf("visualize %s: no history", p)
	}
	d := Direct(h)
	drawn := h
	var extra []porcupine.Annotation
	if f := d.Findings[p]; f.Violated && len(f.Ops) > 0 {
		cut := cutWitness(ctx, modelled(p), newPartIndex(partFor(splitByKey(h), f.Key).h), f.Ops)
		if cut.res == porcupine.Illegal {
			drawn = cut.sub
			lo, hi := int64(history.Infinity), int64(0)
			for _, o := range cut.sub.Ops {
				lo, hi = min(lo, o.Call), max(hi, o.Call)
				if o.Return != nil {
					hi = max(hi, *o.Return)
				}
			}
			extra = append(extra, porcupine.Annotation{
				Tag: "witness", Start: lo, End: hi, BackgroundColor: "#f6d5d5",
				Description: fmt.Sprintf("%d of %d ops", len(cut.sub.Ops), len(h.Ops)),
				Details:     fmt.Sprintf("The witness of the %s violation: the %d ops cut out of the history that porcupine cannot linearize (docs/checker.md). %s", p, len(cut.sub.Ops), f.Reason),
			})
		}
	}
	if drawn == h {
		if ok, why := Drawable(p, h); !ok {
			return fmt.Errorf("visualize %s: %s", p, why)
		}
	}
	vals := newValues(drawn)
	model := newModel(ctx, modelled(p), drawn, vals)
	ops := operations(modelled(p), drawn, vals)
	_, info := porcupine.CheckOperationsVerbose(model, ops, visualizeTimeout(ctx))
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("visualize %s: %w", p, err)
	}
	rows := annotations(p, h, d)
	if len(extra) > 0 { // only the rows near the witness, not the whole history's
		w := extra[0]
		rows = slices.DeleteFunc(rows, func(a porcupine.Annotation) bool { return a.End < w.Start || a.Start > w.End })
	}
	info.AddAnnotations(append(extra, rows...))
	if err := porcupine.Visualize(model, info, w); err != nil {
		return fmt.Errorf("visualize %s: %w", p, err)
	}
	return nil
}

// Drawable says whether Visualize can draw held property p of h, and if not, why: the
// drawing needs porcupine's search of the whole history, whose memory grows as n², so it
// is drawn only within the second opinion's default cap (DefaultPorcupineMaxBytes). A
// violated property's witness can always be drawn.
func Drawable(p Property, h *history.History) (bool, string) {
	if !p.Valid() || h == nil {
		return false, "unknown property or no history"
	}
	_, largest, est := modelSize(modelled(p), splitByKey(h))
	if est > DefaultPorcupineMaxBytes {
		return false, fmt.Sprintf("not drawn: %d %s ops on the largest key, and porcupine's memory grows as n² (about %s here, over the %s cap)",
			largest, p, bytesText(est), bytesText(DefaultPorcupineMaxBytes))
	}
	return true, ""
}

// annotations draws the faults, and the direct analysis's findings d for p, as extra
// rows.
func annotations(p Property, h *history.History, d *DirectResult) []porcupine.Annotation {
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
	if an, ok := pluginOf(p).(annotator); ok {
		out = append(out, an.annotations(h, d)...)
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
