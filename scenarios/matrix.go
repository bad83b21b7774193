package scenarios

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/fencecheck/fencecheck/harness/builtin"
	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/models"
)

// This file serves `fencecheck matrix` and `fencecheck evaluate`: building cell specs,
// matching them to the catalogue, and deriving the expected verdicts of ad-hoc cells.
// Each exported function resolves names in the built-in registry; the campaign plans
// (campaign.go) take any registry.

// Normalize fills the spec's defaults and validates it without running anything. The
// error wraps ErrSpec.
func Normalize(s Spec) (Spec, error) { return normalize(nil, s) }

func normalize(reg *registry.Registry, s Spec) (Spec, error) {
	r, err := resolve(reg, s)
	if err != nil {
		return r.Spec, fmt.Errorf("%w: %w", ErrSpec, err)
	}
	return r.Spec, nil
}

// IsNodeFault reports whether a fault acts on the lock service (a node or the server)
// rather than on a client. Given alone, a node fault rides on a pause of the holder.
func IsNodeFault(f string) bool { return isServiceFault(builtin.Registry(), f) }

// CellSpec is the spec of one matrix cell: backend × resource × faults, with those of
// opts that the backend or the resource declares. Service faults run on the backend's
// NodeFaultMembers (etcd: 3), like the catalogue's. A cell that runs a catalogue
// scenario gets its name.
func CellSpec(backend, resource string, faults []string, opts map[string]string) Spec {
	return cellSpec(builtin.Registry(), backend, resource, faults, opts)
}

func cellSpec(reg *registry.Registry, backend, resource string, faults []string, opts map[string]string) Spec {
	s := Spec{Backend: backend, Resource: resource, Faults: slices.Clone(faults)}
	be, ok := reg.Backend(backend)
	res, _ := reg.Resource(resource)
	for k, v := range opts {
		if v != "" && (registry.HasOption(be.Options, k) || registry.HasOption(res.Options, k)) {
			if s.Options == nil {
				s.Options = map[string]string{}
			}
			s.Options[k] = v
		}
	}
	if def := be.Defaults(registry.Settings{Options: s.Options}); ok && def.NodeFaultMembers > 0 && !be.IsExternal(registry.Settings{Options: s.Options}) {
		for _, f := range faults {
			if isServiceFault(reg, f) {
				s.Members = def.NodeFaultMembers
			}
		}
	}
	if sc, ok := match(reg, s); ok {
		s.Name = sc.Name
	}
	return s
}

// key identifies what a spec runs, for matching it to the catalogue: backend, members,
// resource, fence, and the faults as a set (node faults given alone ride on a pause, so
// ["crash"] and ["crash", "pause"] are the same run). Clients, TTL, duration, seed and
// options (a DSN) are settings, not a different experiment — but a backend on servers
// fencecheck does not own matches nothing. Every other field (a client policy, a random
// schedule, ...) must be equal too, after defaults: rest returns them.
func key(reg *registry.Registry, s Spec) (k string, rest Spec, ok bool) {
	r, err := resolve(reg, s)
	if err != nil || r.backend.IsExternal(r.settings) {
		return "", Spec{}, false
	}
	n := r.Spec
	faults := slices.Clone(n.Faults)
	onlyNode := len(faults) > 0
	for _, f := range faults {
		if !isServiceFault(reg, f) {
			onlyNode = false
		}
	}
	if onlyNode {
		faults = append(faults, r.carrier().Name())
	}
	slices.Sort(faults)
	faults = slices.Compact(faults)
	rest = n
	rest.Name, rest.Backend, rest.Resource, rest.Fence, rest.Faults, rest.Options = "", "", "", "", nil, nil
	rest.Clients, rest.TTL, rest.Duration, rest.Seed, rest.Members = 0, 0, 0, 0, 0
	return fmt.Sprintf("%s/%d/%s/%s/%s", n.Backend, n.Members, n.Resource, n.Fence, strings.Join(faults, "+")), rest, true
}

// Match finds the catalogue scenario that runs the same experiment as s, if any.
func Match(s Spec) (Scenario, bool) { return match(builtin.Registry(), s) }

func match(reg *registry.Registry, s Spec) (Scenario, bool) {
	k, rest, ok := key(reg, s)
	if !ok {
		return Scenario{}, false
	}
	for _, sc := range Catalogue() {
		if kk, rr, ok := key(reg, sc.Spec); ok && kk == k && reflect.DeepEqual(rr, rest) {
			return sc, true
		}
	}
	return Scenario{}, false
}

// Unfenced reports whether a resource lets a stale write through by design: no fence,
// or a check-then-write fence (TOCTOU).
func Unfenced(resource string) bool {
	r, ok := builtin.Registry().Resource(resource)
	return ok && r.Unfenced
}

// ExpectFor returns what s must show: the catalogue's expectation when s matches a
// catalogue scenario (fromCatalogue true), otherwise one derived from the table of
// expected verdicts (docs/expected-verdicts.md):
//   - an unfenced (or TOCTOU) resource under a client fault: a stale write gets through,
//     so register is violated; tokens hold;
//   - a fenced resource: register and updates hold, at least one stale write was
//     rejected and none accepted; tokens hold;
//   - except that a lock server whose counter is lost on a crash (TokensResetOnCrash:
//     the naive one) restarts from zero (tokens violated), which a monotonic fence then
//     lets through as a lost update (updates violated); a strict fence still refuses it.
//
// Properties the table leaves open (mutex, mostly) are left unchecked.
func ExpectFor(s Spec) (e Expect, fromCatalogue bool) { return expectFor(builtin.Registry(), s) }

func expectFor(reg *registry.Registry, s Spec) (e Expect, fromCatalogue bool) {
	if sc, ok := match(reg, s); ok {
		return sc.Expect, true
	}
	r, err := resolve(reg, s)
	n := r.Spec
	if err != nil {
		n = s
	}
	be, _ := reg.Backend(n.Backend)
	res, _ := reg.Resource(n.Resource)
	v := map[models.Property]models.Verdict{models.Tokens: models.Held}
	if res.Unfenced {
		v[models.Register] = models.Violated
		e = Expect{Verdicts: v, MinStaleAccepted: 1}
	} else {
		v[models.Register] = models.Held
		v[models.Updates] = models.Held
		e = Expect{Verdicts: v, MinStaleRejected: 1, NoStaleAccepted: true}
	}
	if be.TokensResetOnCrash && slices.Contains(n.Faults, "crash") {
		v[models.Tokens] = models.Violated
		if !res.Unfenced && n.Fence == "monotonic" {
			v[models.Updates] = models.Violated
			e.NoStaleAccepted = false
		}
		e.MinStaleRejected = 0
	}
	if err == nil && be.PlanCaps(r.settings).NoToken != "" {
		v[models.Tokens] = models.Violated // by declaration: history.Run.NoToken
	}
	return e, false
}

// Label is the name a run of s is stored under: its catalogue name when it matches one,
// else one built from its settings, e.g. "etcd-3-fenced-leader-isolation". It is the
// one label builder: run, matrix, evaluate and soak all use it.
func Label(s Spec) string { return label(builtin.Registry(), s) }

func label(reg *registry.Registry, s Spec) string {
	if s.Name != "" {
		return s.Name
	}
	if sc, ok := match(reg, s); ok {
		return sc.Name
	}
	be := s.Backend
	if be == "" {
		be = defaultBackend(reg, s.Options)
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
	default:
		parts = append(parts, "nofault")
	}
	return strings.Join(parts, "-")
}

// NativeResources lists the resources native to a backend: stores that the lock service
// itself provides and that check the token in the same transaction as the write.
func NativeResources(backend string) []string {
	b, _ := builtin.Registry().Backend(backend)
	return slices.Clone(b.Native)
}

// TokenSource says in a few words where a backend's fencing tokens come from.
func TokenSource(backend string) string {
	if b, ok := builtin.Registry().Backend(backend); ok && b.Token != "" {
		return b.Token
	}
	return "the backend's token"
}

// ApplicableFaults lists, in FaultNames order, the targeted faults that can run against
// a backend (with its options, e.g. an external etcd cluster): each is tried on a fenced
// cell and kept when the spec is valid.
func ApplicableFaults(backend string, opts map[string]string) []string {
	return applicableFaults(builtin.Registry(), backend, "fenced", opts)
}

func applicableFaults(reg *registry.Registry, backend, resource string, opts map[string]string) []string {
	var out []string
	for _, f := range reg.Faults() {
		if _, err := normalize(reg, cellSpec(reg, backend, resource, []string{f.Name()}, opts)); err == nil {
			out = append(out, f.Name())
		}
	}
	return out
}

// Unavailable says why a spec cannot run here (its resource needs a server none is
// configured for, or its backend's program is not installed), or "".
func Unavailable(s Spec) string { return unavailable(builtin.Registry(), s) }

func unavailable(reg *registry.Registry, s Spec) string {
	r, err := resolve(reg, s)
	if err != nil {
		// A spec that cannot run as given still says what it would need here (a tokenless
		// backend's fenced spec, say): its backend's and resource's needs, by name.
		if reg == nil {
			reg = defaultRegistry()
		}
		set := registry.Settings{TTL: s.TTL, Members: max(s.Members, 1), Options: s.Options}
		if b, ok := reg.Backend(s.Backend); ok {
			if why := b.Unavailability(set); why != "" {
				return why
			}
		}
		if x, ok := reg.Resource(s.Resource); ok {
			return x.Unavailability(set)
		}
		return ""
	}
	if why := r.backend.Unavailability(r.settings); why != "" {
		return why
	}
	return r.resource.Unavailability(r.resSettings)
}

// cloneOptions copies an options map (nil stays nil).
func cloneOptions(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	return maps.Clone(m)
}
