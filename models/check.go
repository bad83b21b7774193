package models

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/anishathalye/porcupine"

	"github.com/fencecheck/fencecheck/harness/history"
)

// Check validates h and judges every property with the direct analysis, a complete
// O(n log n) decision procedure (docs/checker.md). Each violation is certified: a small
// witness sub-history is cut out and porcupine must find it illegal too
// (Result.Certified). Meanwhile porcupine checks the whole history as a second opinion,
// within opt's budget (Result.Porcupine). Report.Trouble says when the two checkers
// disagree or a witness was not confirmed. Check returns an error for an invalid history
// or when ctx ends before the direct analysis does.
func Check(ctx context.Context, h *history.History, opt Options) (*Report, error) {
	if h == nil {
		return nil, errors.New("check: no history")
	}
	if err := h.Validate(); err != nil {
		return nil, fmt.Errorf("check: invalid history: %w", err)
	}
	began := time.Now()
	parts := splitByKey(h) // keys.go: one part per independent key
	second := startSecondOpinion(ctx, h, parts, opt)
	defer second.stop()

	d := directParts(h, parts, opt.Select)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("check: %w", err)
	}
	plugs := keyedPlugins(h, opt.Select)
	results := make([]Result, len(plugs))
	for i, p := range plugs {
		results[i] = directResult(p, h, len(h.Ops), d)
	}
	directTook := time.Since(began)
	indexes := map[string]*partIndex{} // per key, shared by its violated properties
	for i, p := range plugs {
		if r := &results[i]; r.Verdict == Violated {
			switch {
			case declaredNoToken(p.name(), h):
				r.Certified, r.CertifyNote = true, noTokenNote
				continue
			case !p.name().HasModel():
				noModelWitness(r)
				continue
			}
			key := d.Findings[p.name()].Key
			if indexes[key] == nil {
				indexes[key] = newPartIndex(partFor(parts, key).h)
			}
			certify(ctx, r, indexes[key], d.Findings[p.name()].Ops)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("check: %w", err)
	}
	second.wait(ctx, opt.budget())
	for i := range results {
		if declaredNoToken(results[i].Property, h) {
			results[i].Porcupine, results[i].PorcupineNote = OpinionSkipped, noTokenNote
			continue
		}
		second.apply(&results[i])
	}

	rep := &Report{
		Verdicts:    make(map[Property]Verdict, len(Properties)),
		Results:     results,
		StaleWrites: d.StaleWrites,
		LostUpdates: d.LostUpdates,
		Evidence:    d.Evidence,
		Agree:       true,
		DirectNanos: directTook.Nanoseconds(),
	}
	for _, r := range results {
		if r.Porcupine == OpinionDisagreed {
			rep.Agree = false
		}
	}
	for _, p := range plugins { // the properties judged on the whole history (effects.go)
		if w, ok := p.(wholeChecker); ok && checked(p, h, opt.Select) {
			rep.Results = append(rep.Results, w.judge(h, d, rep))
		}
	}
	rep.order()
	return rep, nil
}

// declaredNoToken: the tokens property of a backend that declares it hands out no
// fencing token (history.Run.NoToken) is violated by that declaration, not measured (its
// grants carry only the order the harness saw them in), so there is nothing to certify
// and no second opinion to ask.
func declaredNoToken(p Property, h *history.History) bool {
	return p == Tokens && h.Run.NoToken != ""
}

const noTokenNote = "not measured: the backend declares that it hands out no fencing token"

// directResult is the direct analysis's verdict on p, explained: violated, or
// inconclusive with the reason when the history lacks the evidence (unproven), else
// held. ops counts the history's ops (a streamed history keeps none).
func directResult(p checker, h *history.History, ops int, d *DirectResult) Result {
	f := d.Findings[p.name()]
	r := Result{Property: p.name(), DirectViolated: f.Violated}
	switch {
	case f.Violated:
		r.Verdict, r.Counterexample, r.Explanation = Violated, f.Ops, f.Reason
	default:
		if reason, why := p.unproven(h, ops, d.Evidence); reason != "" {
			r.Verdict, r.Reason, r.Why = Inconclusive, reason, why
			r.Explanation = inconclusiveExplanation(p.name(), reason, why, d.Evidence)
			return r
		}
		r.Verdict, r.Explanation = Held, p.held(d.Evidence)
	}
	return r
}

// noModelWitness is the witness of a violated property without a porcupine model: the
// ops its direct analysis names, which porcupine cannot judge.
func noModelWitness(r *Result) {
	r.Witness = r.Counterexample
	r.CertifyNote = "no porcupine model: the witness is the direct analysis's, read off the recorded times"
}

// order puts the report's results in the plug-ins' order and fills Verdicts.
func (r *Report) order() {
	pos := map[Property]int{}
	for i, p := range plugins {
		pos[p.name()] = i
	}
	slices.SortStableFunc(r.Results, func(a, b Result) int { return cmp.Compare(pos[a.Property], pos[b.Property]) })
	for _, res := range r.Results {
		r.Verdicts[res.Property] = res.Verdict
	}
}

func partFor(parts []keyPart, key string) keyPart {
	for _, p := range parts {
		if p.key == key {
			return p
		}
	}
	return parts[0]
}

// Trouble says why the report cannot be taken as it stands — porcupine disagreed with
// the direct analysis, or porcupine did not confirm a violation's witness — or returns
// "" when it can. Commands exit 3 on it: it is a bug in one of the checkers.
func (r *Report) Trouble() string {
	for _, res := range r.Results {
		switch {
		case res.Porcupine == OpinionDisagreed:
			return fmt.Sprintf("%s: the direct analysis and porcupine disagree (%s)", res.Property, res.PorcupineNote)
		case res.Verdict == Violated && res.Property.HasModel() && !res.Certified:
			return fmt.Sprintf("%s: porcupine did not confirm the violation's witness (%s)", res.Property, res.CertifyNote)
		}
	}
	return ""
}

// gap is what the whole history lacks for any verdict to mean something, in the order
// of the Reasons: no op, no grant (acquires made, none granted), or faults asked for of
// which none struck. A history with no acquire at all (a register-only history written
// by hand) has nothing to grant, so it lacks no grant.
func gap(h *history.History, ops int, ev Evidence) (Reason, string) {
	switch {
	case ops == 0:
		return ReasonNoOps, "the history has no operations"
	case ev.Grants == 0 && ev.AcquireFailed > 0:
		why := fmt.Sprintf("no lock was granted: all %d acquire(s) failed", ev.AcquireFailed)
		if ev.FirstAcquireError != "" {
			why += fmt.Sprintf(", the first with %q", Shorten(ev.FirstAcquireError, maxWhyError))
		}
		return ReasonNoGrant, why
	case h.Run.AskedForFaults() && len(h.Faults) == 0:
		return ReasonFaultNeverStruck, fmt.Sprintf("the run asked for %s, but no fault struck", strings.Join(h.Run.AskedFaults(), ", "))
	case h.Run.AskedForFaults() && !struckAsked(h):
		kinds := make([]string, 0, len(h.Faults))
		for _, f := range h.Faults {
			if !slices.Contains(kinds, f.Kind) {
				kinds = append(kinds, f.Kind)
			}
		}
		return ReasonFaultNeverStruck, fmt.Sprintf("the run asked for %s, but the faults recorded (%s) are none of them", strings.Join(h.Run.AskedFaults(), ", "), Shorten(strings.Join(kinds, ", "), maxWhyError))
	}
	return "", ""
}

// struckAsked reports whether a recorded fault is of a kind the run asked for: a fault
// the run did not ask for (a misspelled kind) is no evidence that the asked one struck.
func struckAsked(h *history.History) bool {
	asked := h.Run.AskedFaults()
	for _, f := range h.Faults {
		if slices.Contains(asked, f.Kind) {
			return true
		}
	}
	return false
}

// maxWhyError bounds the acquire error a Why quotes.
const maxWhyError = 160

// inconclusiveExplanation is an inconclusive verdict's sentence. The reasons a fault
// that struck gives keep the words they always had.
func inconclusiveExplanation(p Property, reason Reason, why string, ev Evidence) string {
	switch {
	case reason == ReasonNoStaleWrite || reason == ReasonFewGrants:
		return mustPlugin(p).held(ev)
	}
	return fmt.Sprintf("Not tested: %s, so %s.", why, mustPlugin(p).untested())
}

// Shorten cuts s to about n bytes, keeping its start and its end (where a wrapped
// error names its cause) around an ellipsis, on rune boundaries.
func Shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	head, tail := n/3, n-n/3
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	start := len(s) - tail
	for start < len(s) && !utf8.RuneStart(s[start]) {
		start++
	}
	return s[:head] + " … " + s[start:]
}

// secondOpinion is porcupine checking the whole history, one goroutine per property.
type secondOpinion struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	byProp map[Property]*opinion
	budget time.Duration // as waited, for the notes
}

type opinion struct {
	skip    string // why porcupine was not run, or ""
	done    chan struct{}
	res     porcupine.CheckResult
	took    time.Duration
	aborted bool // stopped at the budget (or by ctx) before it answered
	ops     int
}

// startSecondOpinion starts porcupine on every property whose memo table fits
// opt's memory cap; the others are skipped, with the reason.
func startSecondOpinion(ctx context.Context, h *history.History, parts []keyPart, opt Options) *secondOpinion {
	pctx, cancel := context.WithCancel(ctx)
	s := &secondOpinion{cancel: cancel, byProp: map[Property]*opinion{}}
	if opt.budget() == NoPorcupine {
		for _, p := range modelPlugins() {
			s.byProp[p.name()] = &opinion{skip: "skipped (porcupine budget 0)"}
		}
		return s
	}
	vals := sync.OnceValue(func() *values { return newValues(h) })
	limit := opt.maxBytes()
	var used int64
	for _, p := range modelPlugins() {
		n, largest, est := modelSize(p, parts)
		o := &opinion{ops: n}
		s.byProp[p.name()] = o
		if used+est > limit {
			o.skip = fmt.Sprintf("skipped: porcupine's memory grows as n² (about %s for the %d ops of the largest key, %s in all), over the %s cap", bytesText(int64(largest)*int64(largest)/8), largest, bytesText(est), bytesText(limit))
			continue
		}
		used += est
		o.done = make(chan struct{})
		s.wg.Go(func() {
			defer close(o.done)
			var v *values
			if p.usesValues() {
				v = vals()
			}
			model := newModel(pctx, p, h, v)
			ops := operationsParts(p, parts, v)
			began := time.Now()
			o.res = porcupine.CheckOperationsTimeout(model, ops, opt.Timeout)
			o.took = time.Since(began)
			o.aborted = pctx.Err() != nil
		})
	}
	return s
}

// wait gives porcupine up to budget more (WaitForPorcupine: as long as it takes), then
// stops whatever has not answered.
func (s *secondOpinion) wait(ctx context.Context, budget time.Duration) {
	s.budget = budget
	var timeout <-chan time.Time
	if budget >= 0 {
		t := time.NewTimer(budget)
		defer t.Stop()
		timeout = t.C
	}
	for _, o := range s.byProp {
		if o.done == nil {
			continue
		}
		select {
		case <-o.done:
		case <-timeout:
			s.stop()
			return
		case <-ctx.Done():
			s.stop()
			return
		}
	}
}

// stop ends porcupine and waits for its goroutines. Safe to call twice.
func (s *secondOpinion) stop() {
	s.cancel()
	s.wg.Wait()
}

// apply records porcupine's opinion on r's property; r holds the direct verdict.
func (s *secondOpinion) apply(r *Result) {
	o := s.byProp[r.Property]
	if o == nil {
		return
	}
	switch {
	case o.skip != "":
		r.Porcupine, r.PorcupineNote = OpinionSkipped, o.skip
		return
	case o.aborted || o.res == porcupine.Unknown:
		r.Porcupine = OpinionTimedOut
		r.PorcupineNote = fmt.Sprintf("porcupine gave no answer on the %d ops within the budget (%s after the direct analysis)", o.ops, durationText(s.budget))
		return
	}
	r.CheckNanos = o.took.Nanoseconds()
	pViolated := o.res == porcupine.Illegal
	if pViolated == r.DirectViolated {
		r.Porcupine = OpinionAgreed
		r.PorcupineNote = fmt.Sprintf("porcupine agrees, on the whole history (%d ops, %s)", o.ops, durationText(o.took))
		return
	}
	r.Porcupine = OpinionDisagreed
	if pViolated {
		r.PorcupineNote = fmt.Sprintf("porcupine finds no order of the %d operations that the model accepts, but the direct analysis finds nothing wrong", o.ops)
	} else {
		r.PorcupineNote = fmt.Sprintf("porcupine linearizes all %d operations, but the direct analysis finds: %s", o.ops, r.Explanation)
	}
	r.Explanation += " (Porcupine disagrees: " + r.PorcupineNote + ". Please report this history.)"
}

// modelSize counts the ops of p's porcupine model on each key and estimates
// porcupine's memo table: a bitset of n bits per linearized op, n²/8 bytes per key.
func modelSize(p checker, parts []keyPart) (total, largest int, bytes int64) {
	for _, part := range parts {
		n := 0
		for i := range part.h.Ops {
			if p.inModel(&part.h.Ops[i]) {
				n++
			}
		}
		total += n
		largest = max(largest, n)
		bytes += int64(n) * int64(n) / 8
	}
	return total, largest, bytes
}

// durationText prints a duration as the reports do: "1.25 s", "12.3 ms".
func durationText(d time.Duration) string {
	if d >= time.Second {
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}

func bytesText(b int64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20))
	default:
		return fmt.Sprintf("%.0f KiB", float64(b)/(1<<10))
	}
}
