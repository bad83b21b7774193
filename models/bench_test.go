package models

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/anishathalye/porcupine"

	"github.com/fencecheck/fencecheck/harness/history"
)

// Checker benchmarks on generated histories like the harness's (see realisticConfig):
// clients looping acquire → read → write → release against a lease lock and a fenced
// register, with pauses past the lease (stale writes attempted), 1% unknown-outcome ops
// (kept open forever by the checker) and 1% failed ones. keys > 1 spreads the critical
// sections over independent locks and registers. docs/performance.md has the figures and
// the commands.

// benchShape is one generated history's shape.
type benchShape struct {
	ops, clients, keys int
}

func (s benchShape) String() string {
	size := fmt.Sprintf("%dk", s.ops/1000)
	return fmt.Sprintf("ops=%s/clients=%d/keys=%d", size, s.clients, s.keys)
}

// benchHistory generates the history of a shape; the same shape always gives the same
// history.
func benchHistory(s benchShape) *history.History {
	r := rand.New(rand.NewPCG(uint64(s.ops), uint64(42+s.clients*100+s.keys)))
	cfg := realisticConfig(s.ops)
	cfg.clients, cfg.keys = s.clients, s.keys
	return simulate(cfg, r)
}

// realisticHistory is a generated run like the harness's (see realisticConfig): 3
// clients, one key, about ops operations.
func realisticHistory(ops int) *history.History {
	r := rand.New(rand.NewPCG(uint64(ops), 42))
	return simulate(realisticConfig(ops), r)
}

// benchShapes: 1k and 10k ops with 3, 5 and 10 clients; 100k ops with 5 clients; each
// with 1 and 16 keys.
func benchShapes() []benchShape {
	var out []benchShape
	for _, ops := range []int{1000, 10000, 100000} {
		clients := []int{3, 5, 10}
		if ops == 100000 {
			clients = []int{5}
		}
		for _, c := range clients {
			for _, k := range []int{1, 16} {
				out = append(out, benchShape{ops, c, k})
			}
		}
	}
	return out
}

// BenchmarkCheck times models.Check: the direct analysis and all four porcupine checks,
// as `fencecheck check` runs them. The acceptance figure is
// ops=100k/clients=5/keys=1 (under 5 s), and keys=16 must beat it.
func BenchmarkCheck(b *testing.B) {
	for _, s := range benchShapes() {
		h := benchHistory(s)
		b.Run(s.String(), func(b *testing.B) {
			var rep *Report
			for b.Loop() {
				var err error
				rep, err = Check(context.Background(), h, Options{})
				if err != nil {
					b.Fatal(err)
				}
			}
			for _, r := range rep.Results {
				if r.Verdict == Unknown {
					b.Fatalf("%s timed out", r.Property)
				}
			}
			if !rep.Agree {
				b.Fatalf("porcupine and the direct analysis disagree: %v", rep.Verdicts)
			}
			b.ReportMetric(float64(len(h.Ops)), "hist-ops")
		})
	}
}

// BenchmarkProperty times porcupine and the direct analysis per property on the same
// histories.
func BenchmarkProperty(b *testing.B) {
	for _, s := range benchShapes() {
		h := benchHistory(s)
		vals := newValues(h)
		for _, p := range Properties {
			b.Run(s.String()+"/"+string(p), func(b *testing.B) {
				b.Run("porcupine", func(b *testing.B) {
					model := newModel(context.Background(), p, h, vals)
					ops := operations(p, h, vals)
					var res porcupine.CheckResult
					for b.Loop() {
						res = porcupine.CheckOperationsTimeout(model, ops, DefaultTimeout)
					}
					if res == porcupine.Unknown {
						b.Fatalf("porcupine timed out")
					}
					if got, want := res == porcupine.Illegal, Direct(h).Violated(p); got != want {
						b.Fatalf("porcupine says violated=%v, the direct analysis %v", got, want)
					}
					b.ReportMetric(float64(len(ops)), "model-ops")
				})
				b.Run("direct", func(b *testing.B) {
					parts := splitByKey(h)
					for b.Loop() {
						for _, part := range parts {
							directOne(p, part.h)
						}
					}
				})
			})
		}
	}
}

// directOne runs the direct analysis of one property on a single-key history.
func directOne(p Property, h *history.History) bool {
	switch p {
	case Register:
		return analyzeRegister(h).finding.Violated
	case Updates:
		return analyzeUpdates(h).finding.Violated
	case Tokens:
		return analyzeTokens(h).Violated
	default:
		return analyzeMutex(h).Violated
	}
}
