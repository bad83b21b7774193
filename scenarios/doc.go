// Package scenarios is where `go test ./scenarios/...` runs the whole catalogue — every
// scenario the built-in backends and resources declare, against the verdicts each
// declares — and tests the stages a run goes through on real servers: spec (resolution
// in a registry), trial (one run), campaign (matrix, evaluate, soak). It holds no code
// of its own: the stages live in their packages, the scenarios with their backends.
package scenarios
