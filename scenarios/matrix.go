package scenarios

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/fencecheck/fencecheck/models"
)

// This file serves `fencecheck matrix` and `fencecheck evaluate`: building cell specs,
// matching them to the catalogue, and deriving the expected verdicts of ad-hoc cells.

// Normalize fills the spec's defaults and validates it without running anything. The
// error wraps ErrSpec.
func Normalize(s Spec) (Spec, error) {
	n, err := s.withDefaults()
	if err != nil {
		return n, fmt.Errorf("%w: %w", ErrSpec, err)
	}
	return n, nil
}

// IsNodeFault reports whether a fault acts on the lock service (a node or the server)
// rather than on a client. Given alone, a node fault rides on a pause of the holder.
func IsNodeFault(f string) bool { return isNodeFault(f) }

// CellSpec is the spec of one matrix cell: backend × resource × faults. Node faults on
// etcd run on 3 members, like the catalogue's. A cell that runs a catalogue scenario
// gets its name.
func CellSpec(backend, resource string, faults []string, endpoints []string) Spec {
	s := Spec{Backend: backend, Resource: resource, Faults: slices.Clone(faults), EtcdEndpoints: endpoints}
	if backend == "etcd" && len(endpoints) == 0 {
		for _, f := range faults {
			if isNodeFault(f) {
				s.Members = 3
			}
		}
	}
	if sc, ok := Match(s); ok {
		s.Name = sc.Name
	}
	return s
}

// key identifies what a spec runs, for matching it to the catalogue: backend, members,
// resource, fence, and the faults as a set (node faults given alone ride on a pause, so
// ["crash"] and ["crash", "pause"] are the same run). Clients, TTL, duration and seed
// are settings, not a different experiment. Every other field (a client policy, a
// random schedule, ...) must be equal too, after defaults: rest returns them.
func key(s Spec) (k string, rest Spec, ok bool) {
	n, err := s.withDefaults()
	if err != nil || len(n.EtcdEndpoints) > 0 || len(n.RedisAddrs) > 0 || n.NatsURL != "" {
		return "", Spec{}, false
	}
	faults := slices.Clone(n.Faults)
	onlyNode := len(faults) > 0
	for _, f := range faults {
		if !isNodeFault(f) {
			onlyNode = false
		}
	}
	if onlyNode {
		faults = append(faults, "pause")
	}
	slices.Sort(faults)
	faults = slices.Compact(faults)
	rest = n
	rest.Name, rest.Backend, rest.Resource, rest.Fence, rest.Faults = "", "", "", "", nil
	rest.Clients, rest.TTL, rest.Duration, rest.Seed, rest.Members = 0, 0, 0, 0, 0
	return fmt.Sprintf("%s/%d/%s/%s/%s", n.Backend, n.Members, n.Resource, n.Fence, strings.Join(faults, "+")), rest, true
}

// Match finds the catalogue scenario that runs the same experiment as s, if any.
func Match(s Spec) (Scenario, bool) {
	k, rest, ok := key(s)
	if !ok {
		return Scenario{}, false
	}
	for _, sc := range Catalogue() {
		if kk, rr, ok := key(sc.Spec); ok && kk == k && reflect.DeepEqual(rr, rest) {
			return sc, true
		}
	}
	return Scenario{}, false
}

// Unfenced reports whether a resource lets a stale write through by design: no fence,
// or a check-then-write fence (TOCTOU).
func Unfenced(resource string) bool {
	return resource == "unfenced" || strings.HasSuffix(resource, "toctou")
}

// ExpectFor returns what s must show: the catalogue's expectation when s matches a
// catalogue scenario (fromCatalogue true), otherwise one derived from the design brief's
// table of expected verdicts:
//   - an unfenced (or TOCTOU) resource under a client fault: a stale write gets through,
//     so register is violated; tokens hold;
//   - a fenced resource: register and updates hold, at least one stale write was
//     rejected and none accepted; tokens hold;
//   - except that the naive lock server's in-memory counter restarts from zero after a
//     crash (tokens violated), which a monotonic fence then lets through as a lost
//     update (updates violated); a strict fence still refuses it.
//
// Properties the table leaves open (mutex, mostly) are left unchecked.
func ExpectFor(s Spec) (e Expect, fromCatalogue bool) {
	if sc, ok := Match(s); ok {
		return sc.Expect, true
	}
	n, err := s.withDefaults()
	if err != nil {
		n = s
	}
	v := map[models.Property]models.Verdict{models.Tokens: models.Held}
	if Unfenced(n.Resource) {
		v[models.Register] = models.Violated
		e = Expect{Verdicts: v, MinStaleAccepted: 1}
	} else {
		v[models.Register] = models.Held
		v[models.Updates] = models.Held
		e = Expect{Verdicts: v, MinStaleRejected: 1, NoStaleAccepted: true}
	}
	if TokenlessReason(n.Backend) != "" {
		v[models.Tokens] = models.Violated // declared: no fencing token (build_services.go)
	}
	// A counter that lives in memory starts over after a crash: the naive server's, and
	// redis-volatile's INCR (build_services.go).
	if (n.Backend == "naive" || n.Backend == "redis-volatile") && slices.Contains(n.Faults, "crash") {
		v[models.Tokens] = models.Violated
		if !Unfenced(n.Resource) && n.Fence == "monotonic" {
			v[models.Updates] = models.Violated
			e.NoStaleAccepted = false
		}
		e.MinStaleRejected = 0
	}
	return e, false
}

// Label is the name a run of s is stored under: its catalogue name when it matches one,
// else one built from its settings, e.g. "etcd-3-fenced-leader-isolation".
func Label(s Spec) string {
	if s.Name != "" {
		return s.Name
	}
	if sc, ok := Match(s); ok {
		return sc.Name
	}
	be := s.Backend
	if be == "" {
		be = "naive"
	}
	if s.Members > 1 {
		be = fmt.Sprintf("%s-%d", be, s.Members)
	}
	if len(s.EtcdEndpoints) > 0 || len(s.RedisAddrs) > 0 || s.NatsURL != "" {
		be += "-external"
	}
	res := s.Resource
	if res == "" {
		res = "fenced"
	}
	parts := []string{be, res}
	if strings.HasPrefix(res, be+"-") {
		parts = []string{res} // etcd-txn, not etcd-etcd-txn
	}
	if s.Fence != "" {
		parts = append(parts, s.Fence)
	}
	if len(s.Faults) > 0 {
		parts = append(parts, strings.Join(s.Faults, "+"))
	} else {
		parts = append(parts, "nofault")
	}
	return strings.Join(parts, "-")
}

// NativeResources lists the resources native to a backend: stores that the lock service
// itself provides and that check the token in the same transaction as the write.
func NativeResources(backend string) []string {
	if backend == "etcd" {
		return []string{"etcd-txn"}
	}
	return nil
}

// TokenSource says in a few words where a backend's fencing tokens come from.
func TokenSource(backend string) string {
	switch backend {
	case "etcd":
		return "the lock key's CreateRevision"
	case "raft":
		return "the Raft log index of the committed acquire entry"
	case "naive":
		return "the lock server's in-memory counter"
	case "naive-persisted":
		return "the lock server's counter persisted to disk"
	case "naive-wallclock":
		return "the lock server's wall clock"
	case "naive-32bit":
		return "the lock server's 32-bit counter"
	case "redis", "redis-volatile":
		return "the INCR counter taken with the grant"
	case "nats":
		return "the key's revision at grant (the stream sequence)"
	case "redis-notoken", "redlock":
		return "no token (the lock's random value)"
	}
	return "the backend's token"
}

// ApplicableFaults lists, in FaultNames order, the targeted faults that can run against
// a backend (with an external etcd cluster when endpoints are given): each is tried on
// an unfenced cell and kept when the spec is valid.
func ApplicableFaults(backend string, endpoints []string) []string {
	return ApplicableFaultsFor(CellSpec(backend, "unfenced", nil, endpoints))
}

// ApplicableFaultsFor is ApplicableFaults for a base cell's backend, resource and
// existing servers (etcd endpoints, redis addresses, nats URL): each fault alone, kept
// when the spec is valid. The cell should be
// unfenced: a backend with no fencing token (redlock) refuses fenced cells, and no
// fault's applicability depends on the register's fence.
func ApplicableFaultsFor(base Spec) []string {
	var out []string
	for _, f := range FaultNames() {
		// CellSpec per fault: etcd's node faults take 3 members.
		s := CellSpec(base.Backend, base.Resource, []string{f.Name}, base.EtcdEndpoints)
		s.RedisAddrs, s.NatsURL = base.RedisAddrs, base.NatsURL
		if _, err := Normalize(s); err == nil {
			out = append(out, f.Name)
		}
	}
	return out
}
