package models

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/anishathalye/porcupine"

	"fencecheck/harness/history"
)

// realisticHistory is a generated run like the harness's (see realisticConfig), with
// about ops operations.
func realisticHistory(ops int) *history.History {
	r := rand.New(rand.NewPCG(uint64(ops), 42))
	return simulate(realisticConfig(ops), r)
}

// BenchmarkCheck times porcupine and the direct analysis per property on realistic
// histories of 1k and 10k ops.
func BenchmarkCheck(b *testing.B) {
	for _, p := range Properties {
		b.Run(string(p), func(b *testing.B) {
			for _, size := range []int{1000, 10000} {
				h := realisticHistory(size)
				b.Run(fmt.Sprintf("%dk", size/1000), func(b *testing.B) {
					b.Run("porcupine", func(b *testing.B) {
						vals := newValues(h)
						model := newModel(context.Background(), p, h, vals)
						ops := operations(p, h, vals)
						var res porcupine.CheckResult
						for b.Loop() {
							res = porcupine.CheckOperationsTimeout(model, ops, DefaultTimeout)
						}
						b.ReportMetric(float64(len(ops)), "ops")
						if res == porcupine.Unknown {
							b.Fatalf("porcupine timed out")
						}
						b.Logf("%s %d ops: porcupine %s, direct violated=%v", p, len(h.Ops), res, Direct(h).Violated(p))
					})
					b.Run("direct", func(b *testing.B) {
						for b.Loop() {
							directOne(p, h)
						}
					})
				})
			}
		})
	}
}

// directOne runs the direct analysis of one property.
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
