package models

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"sync"

	"github.com/anishathalye/porcupine"

	"github.com/fencecheck/fencecheck/harness/history"
)

// Independent keys. A multi-key history (ops carrying history.Op.Key) is K independent
// locks and registers: each property holds iff it holds on every key's sub-history (the
// P-compositionality of linearizability). Porcupine gets every model's ops tagged with
// their key and splits them with Model.Partition, checking the partitions in parallel;
// the direct analysis runs once per key, in parallel, and merges. A history whose ops
// all have the same key (the default "", as in every v1 file without keys) is checked
// exactly as before.

// keyPart is one key's sub-history.
type keyPart struct {
	key string
	h   *history.History
}

// splitByKey returns h's sub-histories, one per key, sorted by key. With a single key it
// returns h itself, uncopied. Each sub-history shares h's run, faults and lost records.
func splitByKey(h *history.History) []keyPart {
	if len(h.Ops) == 0 || !hasKeys(h) {
		return []keyPart{{h: h}}
	}
	// Two passes, so each sub-history's ops are allocated once.
	idx := map[string]int{}
	var counts []int
	for _, o := range h.Ops {
		i, ok := idx[o.Key]
		if !ok {
			i = len(counts)
			idx[o.Key] = i
			counts = append(counts, 0)
		}
		counts[i]++
	}
	parts := make([]keyPart, len(counts))
	for k, i := range idx {
		parts[i] = keyPart{key: k, h: &history.History{Format: h.Format, Run: h.Run, Faults: h.Faults, Lost: h.Lost, Ops: make([]history.Op, 0, counts[i])}}
	}
	for _, o := range h.Ops {
		p := &parts[idx[o.Key]]
		p.h.Ops = append(p.h.Ops, o)
	}
	slices.SortFunc(parts, func(a, b keyPart) int { return cmp.Compare(a.key, b.key) })
	return parts
}

// hasKeys reports whether h's ops name more than one key.
func hasKeys(h *history.History) bool {
	for _, o := range h.Ops {
		if o.Key != h.Ops[0].Key {
			return true
		}
	}
	return false
}

// Keys returns the distinct keys of h's ops, sorted; a single-key history gives one key
// (usually "", the default).
func Keys(h *history.History) []string {
	seen := map[string]bool{}
	var out []string
	for _, o := range h.Ops {
		if !seen[o.Key] {
			seen[o.Key] = true
			out = append(out, o.Key)
		}
	}
	slices.Sort(out)
	return out
}

// operationsParts is operations over h's key parts: each key's ops, one after another,
// which the model's Partition splits apart again.
func operationsParts(p checker, parts []keyPart, vals *values) []porcupine.Operation {
	if len(parts) == 1 {
		return operationsSingle(p, parts[0].h, vals)
	}
	var out []porcupine.Operation
	for _, part := range parts {
		out = append(out, operationsSingle(p, part.h, vals)...)
	}
	return out
}

// directByKey runs the direct analysis per key, in parallel, and merges the results.
func directByKey(h *history.History, sel []Property) *DirectResult {
	return directParts(h, splitByKey(h), sel)
}

// directParts is directByKey on h's parts (splitByKey).
func directParts(h *history.History, parts []keyPart, sel []Property) *DirectResult {
	plugs := keyedPlugins(h, sel)
	if len(parts) == 1 {
		d := directSingle(parts[0].h, plugs)
		for p, f := range d.Findings {
			f.Key = parts[0].key
			d.Findings[p] = f
		}
		t := timingOf(h, parts)
		t.fill(&d.Evidence)
		return d
	}
	results := make([]*DirectResult, len(parts))
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, p := range parts {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			results[i] = directSingle(p.h, plugs)
		})
	}
	wg.Wait()

	d := &DirectResult{Findings: map[Property]Finding{}, StaleWrites: []StaleWrite{}, LostUpdates: []LostUpdate{}}
	for i, r := range results {
		for p, f := range r.Findings {
			if f.Violated && !d.Findings[p].Violated {
				f.Reason = fmt.Sprintf("Key %q: %s", parts[i].key, f.Reason)
				f.Key = parts[i].key
				d.Findings[p] = f
			}
		}
		d.StaleWrites = append(d.StaleWrites, r.StaleWrites...)
		d.LostUpdates = append(d.LostUpdates, r.LostUpdates...)
		ev, sum := r.Evidence, &d.Evidence
		sum.StaleAttempted += ev.StaleAttempted
		sum.StaleRejected += ev.StaleRejected
		sum.StaleAccepted += ev.StaleAccepted
		sum.Writes += ev.Writes
		sum.WritesAccepted += ev.WritesAccepted
		sum.WritesRefused += ev.WritesRefused
		sum.WritesUnknown += ev.WritesUnknown
		sum.WritesFailed += ev.WritesFailed
		sum.Grants += ev.Grants
		sum.AcquireFailed += ev.AcquireFailed
		// Each key's lock has its own validity gap: the longest over keys, and the total
		// summed over keys.
		sum.ValidityGapNanos = max(sum.ValidityGapNanos, ev.ValidityGapNanos)
		sum.ValidityGapTotalNanos += ev.ValidityGapTotalNanos
	}
	for _, p := range plugs {
		if _, ok := d.Findings[p.name()]; !ok {
			d.Findings[p.name()] = Finding{}
		}
	}
	d.Evidence.FirstAcquireError = firstAcquireError(h)
	// Availability is the system's: the longest stretch with no accepted write on any key.
	d.Evidence.LongestNoAcceptedWriteNanos = longestNoAcceptedWrite(h)
	// Lock timing: supersessions on each key's lock, latencies and rate over them all.
	t := timingOf(h, parts)
	t.fill(&d.Evidence)
	slices.SortFunc(d.StaleWrites, func(a, b StaleWrite) int { return cmp.Or(cmp.Compare(a.At, b.At), cmp.Compare(a.Write, b.Write)) })
	calls := make(map[int]int64, len(h.Ops))
	for _, o := range h.Ops {
		calls[o.ID] = o.Call
	}
	slices.SortStableFunc(d.LostUpdates, func(a, b LostUpdate) int {
		return cmp.Or(cmp.Compare(calls[a.Write], calls[b.Write]), cmp.Compare(a.Write, b.Write))
	})
	return d
}
