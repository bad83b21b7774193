// Package catalogue is the named scenarios — a spec, what it shows and the verdicts it
// must give — and the rules that match any run to them: Match finds the scenario a spec
// runs, Expect gives a run's expectation (the scenario's, or one derived from the rules
// of docs/expected-verdicts.md), Label names a run in the results store. A backend
// package declares its own scenarios (Scenarios() next to Descriptor()); builtin
// assembles the catalogue from them.
package catalogue

import (
	"time"

	"fmt"
	"slices"
	"strings"

	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/spec"
)

// Scenario is a named Spec with its expected outcome.
type Scenario struct {
	spec.Spec
	// About says in one line what the scenario shows.
	About  string
	Expect Expect
	// Check, if set, is what else the scenario's history must show (a fault's detail
	// naming the signal and the PID, the settings a backend recorded); the catalogue's
	// test calls it on every run.
	Check func(h *history.History) error
}

// Expect is what a scenario's verdicts and evidence must be.
type Expect struct {
	// Verdicts per property; a property left out may come out any way.
	Verdicts map[models.Property]models.Verdict `json:"verdicts,omitempty"`
	// MinStaleAccepted: at least this many stale writes got through.
	MinStaleAccepted int `json:"min_stale_accepted,omitempty"`
	// MinStaleRejected: at least this many stale writes were refused by the fence.
	MinStaleRejected int `json:"min_stale_rejected,omitempty"`
	// NoStaleAccepted: not one stale write may get through.
	NoStaleAccepted bool `json:"no_stale_accepted,omitempty"`
}

// Diff lists every way the report differs from the expectation; empty means it matches.
func (e Expect) Diff(r *models.Report) []string {
	var diffs []string
	for _, p := range models.AllProperties {
		want, ok := e.Verdicts[p]
		if !ok {
			continue
		}
		if got := r.Verdicts[p]; got != want {
			diffs = append(diffs, fmt.Sprintf("%s: got %s, want %s", p, got, want))
		}
	}
	ev := r.Evidence
	if ev.StaleAccepted < e.MinStaleAccepted {
		diffs = append(diffs, fmt.Sprintf("stale writes accepted: got %d, want at least %d", ev.StaleAccepted, e.MinStaleAccepted))
	}
	if ev.StaleRejected < e.MinStaleRejected {
		diffs = append(diffs, fmt.Sprintf("stale writes rejected: got %d, want at least %d", ev.StaleRejected, e.MinStaleRejected))
	}
	if e.NoStaleAccepted && ev.StaleAccepted > 0 {
		diffs = append(diffs, fmt.Sprintf("stale writes accepted: got %d, want 0", ev.StaleAccepted))
	}
	return diffs
}

// Verdict shorthands for the catalogue's data; Any leaves a property unchecked.
const (
	Violated                    = models.Violated
	Held                        = models.Held
	Inconclusive                = models.Inconclusive
	Any          models.Verdict = ""
)

// SkewTTL is the lease TTL of the scenarios where a careful client meets a fast clock
// (the service's, or the next taker's). That race is in real time by nature: the fast
// clock ends the lease after TTL/20, the pause lasts at most TTL/2, and in between the
// next holder's acquire and write must land while the careful client's own estimate
// still says valid. No event can stand in for that window, so it is set wide: 9 s at
// 20 s, where a loaded CI machine was seen to need 5.25 s for the raft takeover.
const SkewTTL = 20 * time.Second

// Verdicts is the four core properties' expected verdicts (Any: unchecked).
func Verdicts(register, updates, tokens, mutex models.Verdict) map[models.Property]models.Verdict {
	m := map[models.Property]models.Verdict{}
	for p, v := range map[models.Property]models.Verdict{
		models.Register: register, models.Updates: updates, models.Tokens: tokens, models.Mutex: mutex,
	} {
		if v != Any {
			m[p] = v
		}
	}
	return m
}

// Unsafe is what a lease lock shows without a fence when the holder outlives its lease
// (rule 1): a stale write gets through, register and updates violated, tokens held.
func Unsafe() Expect {
	return Expect{Verdicts: Verdicts(Violated, Violated, Held, Violated), MinStaleAccepted: 1}
}

// Safe is what it shows with a fence (rule 2): the stale write is refused, register and
// updates held, tokens held; mutex is still violated (two clients believed they held
// the lock).
func Safe() Expect {
	return Expect{Verdicts: Verdicts(Held, Held, Held, Violated), MinStaleRejected: 1, NoStaleAccepted: true}
}

// NoToken is what a backend without fencing tokens (harness.Tokenless) shows unfenced
// when the holder outlives its lease: the stale write gets through, and tokens are
// violated by declaration (history.Run.NoToken). A fenced run of it is refused.
func NoToken() Expect {
	return Expect{Verdicts: Verdicts(Violated, Violated, Violated, Violated), MinStaleAccepted: 1}
}

// Unchecked returns e with the properties ps left unchecked (a copy).
func (e Expect) Unchecked(ps ...models.Property) Expect {
	for _, p := range ps {
		e = e.With(p, Any)
	}
	return e
}

// With returns e with property p's verdict set, or unchecked with Any (a copy: e's map
// is not changed).
func (e Expect) With(p models.Property, v models.Verdict) Expect {
	m := map[models.Property]models.Verdict{}
	for q, w := range e.Verdicts {
		m[q] = w
	}
	if v == Any {
		delete(m, p)
	} else {
		m[p] = v
	}
	e.Verdicts = m
	return e
}

// Catalogue is a list of named scenarios, in a stable order.
type Catalogue []Scenario

// Lookup finds a scenario by name.
func (c Catalogue) Lookup(name string) (Scenario, bool) {
	i := slices.IndexFunc(c, func(s Scenario) bool { return s.Name == name })
	if i < 0 {
		return Scenario{}, false
	}
	return c[i], true
}

// Check reports scenarios that share a name, and specs that do not resolve in reg.
func (c Catalogue) Check(reg *registry.Registry) error {
	seen := map[string]bool{}
	for _, sc := range c {
		if sc.Name == "" || seen[sc.Name] {
			return fmt.Errorf("catalogue: scenario %q is unnamed or named twice", sc.Name)
		}
		seen[sc.Name] = true
		if _, err := spec.Resolve(reg, sc.Spec); err != nil {
			return fmt.Errorf("catalogue: scenario %s: %w", sc.Name, err)
		}
	}
	return nil
}

// Select resolves a comma-separated list of scenario names; "all" (or an empty list) is
// every scenario but the ones that cannot run here (a program missing, no server
// configured: spec.Unavailable), which it lists in skipped. An unknown name is an
// ErrSpec error.
func (c Catalogue) Select(reg *registry.Registry, list string) (_ []Scenario, skipped []string, _ error) {
	if list == "" || list == "all" {
		var out []Scenario
		for _, sc := range c {
			if spec.Unavailable(reg, sc.Spec) != "" {
				skipped = append(skipped, sc.Name)
				continue
			}
			out = append(out, sc)
		}
		return out, skipped, nil
	}
	var out []Scenario
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		sc, ok := c.Lookup(name)
		if !ok {
			return nil, nil, fmt.Errorf("%w: unknown scenario %q (see fencecheck list)", spec.ErrSpec, name)
		}
		out = append(out, sc)
	}
	if len(out) == 0 {
		return nil, nil, fmt.Errorf("%w: no scenario named", spec.ErrSpec)
	}
	return out, nil, nil
}
