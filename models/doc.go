// Package models turns a recorded history into verdicts.
//
// Each property is a plug-in (property.go) in one list: the four core ones below are
// checked on every history, the optional ones (effects, …) when the history calls for
// them (docs/checker.md, "Properties"). The direct analysis, a complete
// O(n log n) decision procedure (docs/checker.md), gives each verdict and explains what
// went wrong (which write was stale, which update was lost). Porcupine, against a
// sequential model per property, certifies every violation on a small witness
// sub-history (Result.Certified) and gives a second opinion on the whole history within
// a budget (Result.Porcupine); Report.Trouble says when the two disagree.
//
//   - register: the resource is an atomic register that accepts a write iff its token
//     passes the fence; reads return the current (value, token).
//   - updates: every read-modify-write critical section is atomic: an accepted write read
//     the value of the write accepted just before it.
//   - tokens: grants carry strictly increasing tokens in real-time order.
//   - mutex: at most one client believes it holds the lock at any time.
//
// The package imports only the history package, porcupine and the standard library: it
// never needs a lock service, so a saved history can be re-checked anywhere.
//
// Semantics shared by the models and the direct analysis:
//   - an op with status fail never took effect and is left out;
//   - an op with status unknown may or may not have taken effect: it is open forever
//     (it returns at "infinity"), so the checker may place it anywhere after its call,
//     including after everything else, which is how "never applied" is expressed;
//   - a client's ops after one of its unknown ops go to a fresh porcupine client id (a
//     "stream"), so that every porcupine row stays sequential;
//   - in the updates model, an unknown write whose value an ok read returned did take
//     effect: it counts as ok, returning when that read returned (the register model
//     needs no such patch, since it contains the read);
//   - a hold of the lock runs from a client's ok acquire to its next release, whatever
//     that release's outcome (the client stops believing it holds the lock when it calls
//     release), or to the end of the history; an unknown release ends at its call.
package models

// The properties table of docs/checker.md and the schemas' property enums.
//
//go:generate go run ./internal/propdocs/gen -root ..
