package models

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/fencecheck/fencecheck/harness/history"
)

// Check validates h, runs the direct analysis, then checks the four properties with
// porcupine in parallel, and combines both into a Report. Porcupine is the judge of each
// verdict; the direct analysis explains it (stale writes, lost updates, evidence) and
// Report.Agree says whether the two agreed. Check returns an error for an invalid history
// or when ctx ends before the checks do; a porcupine timeout is not an error but an
// Unknown verdict.
func Check(ctx context.Context, h *history.History, opt Options) (*Report, error) {
	if h == nil {
		return nil, errors.New("check: no history")
	}
	if err := h.Validate(); err != nil {
		return nil, fmt.Errorf("check: invalid history: %w", err)
	}
	parts := splitByKey(h) // keys.go: one part per independent key
	d := directParts(h, parts)
	vals := newValues(h)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make([]Result, len(Properties))
	errs := make([]error, len(Properties))
	var wg sync.WaitGroup
	for i, p := range Properties {
		wg.Go(func() {
			results[i], errs[i] = checkProperty(ctx, p, h, parts, vals, d, opt)
			if errs[i] != nil {
				cancel() // no point finishing the others
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}

	rep := &Report{
		Verdicts:    make(map[Property]Verdict, len(Properties)),
		Results:     results,
		StaleWrites: d.StaleWrites,
		LostUpdates: d.LostUpdates,
		Evidence:    d.Evidence,
		Agree:       true,
	}
	for _, r := range results {
		rep.Verdicts[r.Property] = r.Verdict
		if r.Verdict != Unknown && (r.Verdict == Violated) != r.DirectViolated {
			rep.Agree = false
		}
	}
	if HasEffects(h) { // the optional fifth property (effects.go)
		r, er := checkEffects(h, d)
		rep.Results, rep.Verdicts[Effects], rep.Effects = append(rep.Results, r), r.Verdict, er
	}
	return rep, nil
}

// timeoutFor is the porcupine timeout: opt.Timeout (or the default), cut short by ctx's
// deadline.
func timeoutFor(ctx context.Context, opt Options) time.Duration {
	t := opt.Timeout
	if t <= 0 {
		t = DefaultTimeout
	}
	if dl, ok := ctx.Deadline(); ok {
		t = max(min(t, time.Until(dl)), time.Millisecond)
	}
	return t
}

func checkProperty(ctx context.Context, p Property, h *history.History, parts []keyPart, vals *values, d *DirectResult, opt Options) (Result, error) {
	if p == Tokens && h.Run.NoToken != "" {
		// Not measured: the backend declares that it hands out no fencing token, and
		// its grants carry only the order in which the harness saw them.
		return Result{Property: p, Verdict: Violated, DirectViolated: true, Explanation: d.Findings[p].Reason}, nil
	}
	model := newModel(ctx, p, h, vals)
	ops := operationsParts(p, parts, vals)
	timeout := timeoutFor(ctx, opt)
	began := time.Now()
	res := porcupine.CheckOperationsTimeout(model, ops, timeout)
	took := time.Since(began)
	if err := ctx.Err(); err != nil {
		return Result{}, fmt.Errorf("check %s: %w", p, err)
	}
	f := d.Findings[p]
	r := Result{Property: p, CheckNanos: took.Nanoseconds(), DirectViolated: f.Violated}
	switch res {
	case porcupine.Illegal:
		r.Verdict = Violated
		if f.Violated {
			r.Counterexample = f.Ops
			r.Explanation = f.Reason
		} else {
			// The direct analysis should have found this; let porcupine show where it
			// got stuck instead.
			r.Counterexample = porcupineCounterexample(model, ops, timeout)
			r.Explanation = fmt.Sprintf("Porcupine found no order of the %s operations that the model accepts (it got stuck around ops %v), but the direct analysis found nothing wrong: please report this history.", p, r.Counterexample)
		}
	case porcupine.Ok:
		r.Verdict = Held
		r.Explanation = heldExplanation(p, d)
		if len(h.Faults) > 0 && inconclusive(p, d) {
			r.Verdict = Inconclusive
		}
		if f.Violated {
			r.Explanation += fmt.Sprintf(" (The direct analysis disagrees: %s Please report this history.)", f.Reason)
		}
	default:
		r.Verdict = Unknown
		r.Explanation = fmt.Sprintf("Porcupine timed out after %v without a verdict.", timeout)
		if f.Violated {
			r.Explanation += " The direct analysis finds it violated: " + f.Reason
			r.Counterexample = f.Ops
		} else {
			r.Explanation += " The direct analysis finds nothing wrong."
		}
	}
	return r, nil
}

// inconclusive says whether a held property proves nothing because the fault never bit.
// It applies only to histories with faults: a history without any (hand-written, or a
// fault-free baseline run) is simply held when it is linearizable.
func inconclusive(p Property, d *DirectResult) bool {
	switch p {
	case Register, Updates:
		return d.Evidence.StaleAttempted == 0
	case Tokens:
		return d.Evidence.Grants < 2
	}
	return false
}

func heldExplanation(p Property, d *DirectResult) string {
	ev := d.Evidence
	switch p {
	case Register:
		if ev.StaleAttempted == 0 {
			return "Every accepted write and read fits one atomic register that accepts a write only when its token passes the fence, but no stale write was attempted, so the fence was never tested."
		}
		return fmt.Sprintf("Every accepted write and read fits one atomic register that accepts a write only when its token passes the fence; %d stale write(s) were attempted and the fence rejected them.", ev.StaleRejected)
	case Updates:
		if ev.StaleAttempted == 0 {
			return "Every accepted read-modify-write read the value accepted just before it, but no stale write was attempted, so the run did not put that to the test."
		}
		return "Every accepted read-modify-write read the value accepted just before it: no update was lost."
	case Tokens:
		if ev.Grants < 2 {
			return fmt.Sprintf("Only %d grant(s), so there was no token order to check.", ev.Grants)
		}
		return fmt.Sprintf("All %d grants carry strictly increasing tokens in real-time order.", ev.Grants)
	default:
		return "No two clients ever both believed they held the lock."
	}
}

// porcupineCounterexample names, from porcupine's longest partial linearization, the
// last op it could place and the earliest-returning op it could not.
func porcupineCounterexample(model porcupine.Model, ops []porcupine.Operation, timeout time.Duration) []int {
	_, info := porcupine.CheckOperationsVerbose(model, ops, timeout)
	var best []porcupine.Operation
	for _, part := range info.PartialLinearizationsOperations() {
		for _, lin := range part {
			if len(lin) > len(best) {
				best = lin
			}
		}
	}
	placed := map[int]bool{}
	var out []int
	for _, o := range best {
		placed[o.Metadata.(opMeta).ID] = true
	}
	if len(best) > 0 {
		out = append(out, best[len(best)-1].Metadata.(opMeta).ID)
	}
	var stuck *porcupine.Operation
	for i := range ops {
		if o := &ops[i]; !placed[o.Metadata.(opMeta).ID] && (stuck == nil || o.Return < stuck.Return) {
			stuck = o
		}
	}
	if stuck != nil {
		out = append(out, stuck.Metadata.(opMeta).ID)
	}
	return slices.Compact(out)
}
