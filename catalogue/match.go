package catalogue

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/harness/nemesis/faults"
	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/spec"
)

// key identifies what a spec runs, for matching it to the catalogue: backend, members,
// resource, fence, and the faults as a set (service faults given alone ride on a pause,
// so ["crash"] and ["crash", "pause"] are the same run). Clients, TTL, duration, min
// grants, seed and options (a DSN) are settings, not a different experiment — but a
// backend on servers fencecheck does not own matches nothing. Every other field (a client policy,
// a random schedule, ...) must be equal too, after defaults: rest returns them.
func key(reg *registry.Registry, s spec.Spec) (k string, rest spec.Spec, ok bool) {
	r, err := spec.Resolve(reg, s)
	if err != nil || r.External() {
		return "", spec.Spec{}, false
	}
	n := r.Spec
	faults := slices.Clone(n.Faults)
	if len(faults) > 0 && len(r.Strikes) == 0 && r.Carrier != nil {
		faults = append(faults, r.Carrier.Name())
	}
	slices.Sort(faults)
	faults = slices.Compact(faults)
	rest = n
	rest.Name, rest.Backend, rest.Resource, rest.Fence, rest.Faults, rest.Options = "", "", "", "", nil, nil
	rest.Clients, rest.TTL, rest.Duration, rest.Seed, rest.Members, rest.MinGrants = 0, 0, 0, 0, 0, 0
	return fmt.Sprintf("%s/%d/%s/%s/%s", n.Backend, n.Members, n.Resource, n.Fence, strings.Join(faults, "+")), rest, true
}

// Match finds the scenario that runs the same experiment as s, if any.
func (c Catalogue) Match(reg *registry.Registry, s spec.Spec) (Scenario, bool) {
	k, rest, ok := key(reg, s)
	if !ok {
		return Scenario{}, false
	}
	for _, sc := range c {
		if kk, rr, ok := key(reg, sc.Spec); ok && kk == k && reflect.DeepEqual(rr, rest) {
			return sc, true
		}
	}
	return Scenario{}, false
}

// Expect returns what s must show: the catalogue's expectation when s matches a
// scenario (fromCatalogue true), otherwise one derived from the rules of
// docs/expected-verdicts.md:
//   - an unfenced (or TOCTOU) resource under a client fault: a stale write gets through,
//     so register is violated; tokens hold;
//   - a fenced resource: register and updates hold, at least one stale write was
//     rejected and none accepted; tokens hold;
//   - except that a lock server whose counter is lost on a crash (TokensResetOnCrash)
//     restarts from zero (tokens violated), which a monotonic fence then lets through as
//     a lost update (updates violated); a strict fence still refuses it;
//   - a backend without fencing tokens (harness.Tokenless) has tokens violated by
//     declaration.
//
// Properties the rules leave open (mutex, mostly) are left unchecked.
func (c Catalogue) Expect(reg *registry.Registry, s spec.Spec) (e Expect, fromCatalogue bool) {
	if sc, ok := c.Match(reg, s); ok {
		return sc.Expect, true
	}
	r, err := spec.Resolve(reg, s)
	n := s
	if err == nil {
		n = r.Spec
	}
	be, _ := reg.Backend(n.Backend)
	res, _ := reg.Resource(n.Resource)
	v := map[models.Property]models.Verdict{models.Tokens: Held}
	if res.Unfenced {
		v[models.Register] = Violated
		e = Expect{Verdicts: v, MinStaleAccepted: 1}
	} else {
		v[models.Register] = Held
		v[models.Updates] = Held
		e = Expect{Verdicts: v, MinStaleRejected: 1, NoStaleAccepted: true}
	}
	if be.TokensResetOnCrash && slices.Contains(n.Faults, faults.Crash) {
		v[models.Tokens] = Violated
		if !res.Unfenced && n.Fence == history.FenceMonotonic {
			v[models.Updates] = Violated
			e.NoStaleAccepted = false
		}
		e.MinStaleRejected = 0
	}
	if err == nil && r.Target.Caps.NoToken != "" {
		v[models.Tokens] = Violated // by declaration: history.Run.NoToken
	}
	return e, false
}

// Label is the name a run of s is stored under: its scenario's name when it matches
// one, else one built from its settings, e.g. "etcd-3-fenced-leader-isolation". It is
// the one label builder: run, matrix, evaluate and soak all use it.
func (c Catalogue) Label(reg *registry.Registry, s spec.Spec) string {
	if s.Name != "" {
		return s.Name
	}
	if sc, ok := c.Match(reg, s); ok {
		return sc.Name
	}
	be := s.Backend
	if be == "" {
		be = spec.DefaultBackend(reg, s.Options)
	}
	desc, _ := reg.Backend(be)
	if s.Members > 1 {
		be = fmt.Sprintf("%s-%d", be, s.Members)
	}
	if desc.IsExternal(registry.Settings{Options: s.Options}) {
		be += "-external"
	}
	res := s.Resource
	if res == "" && len(reg.Resources()) > 0 {
		res = reg.Resources()[0].Name
	}
	parts := []string{be, res}
	if strings.HasPrefix(res, be+"-") {
		parts = []string{res} // etcd-txn, not etcd-etcd-txn
	}
	if s.Fence != "" {
		parts = append(parts, s.Fence)
	}
	switch {
	case len(s.Faults) > 0:
		parts = append(parts, strings.Join(s.Faults, "+"))
	case len(s.RandomFaults) > 0:
		parts = append(parts, "random", strings.Join(s.RandomFaults, "+"))
	case s.Schedule != nil:
		parts = append(parts, "schedule", strings.Join(spec.ScheduleKinds(*s.Schedule), "+"))
	default:
		parts = append(parts, "nofault")
	}
	return strings.Join(parts, "-")
}
