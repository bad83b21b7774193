// Command plainporcupine checks a history file with porcupine alone, on the whole
// history, one property after another — the baseline docs/performance.md compares
// `fencecheck check` with:
//
//	go run ./models/internal/plainporcupine -timeout 10s /tmp/ck/r100k.json
//
// It refuses a property whose memo table would need more than -max-bytes (porcupine's
// memory grows as n² in the ops of one key; see docs/performance.md), rather than take
// the machine down. Exit 0: every property linearizable; 1: some are not; 3: porcupine
// gave no answer on some (skipped, or out of time).
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/models"
)

func main() {
	timeout := flag.Duration("timeout", 10*time.Second, "give up on a property after this long (on a violated history porcupine may search, and grow, for ever)")
	maxBytes := flag.Int64("max-bytes", 4<<30, "skip a property whose memo table would need more (n²/8 bytes for n ops)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: plainporcupine [-timeout D] [-max-bytes N] HISTORY")
		os.Exit(2)
	}
	began := time.Now()
	h, err := history.ReadFile(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "plainporcupine:", err)
		os.Exit(2)
	}
	fmt.Printf("read %d ops in %v\n", len(h.Ops), time.Since(began).Round(time.Millisecond))
	code := 0
	for _, p := range models.Properties {
		ops := models.Operations(p, h)
		if n := int64(len(ops)); n*n/8 > *maxBytes {
			fmt.Printf("%-8s skipped: %d ops, porcupine would need about %d MiB\n", p, n, n*n/8>>20)
			code = 3
			continue
		}
		start := time.Now()
		res := porcupine.CheckOperationsTimeout(models.Model(p, h), ops, *timeout)
		fmt.Printf("%-8s %-8s %d ops in %v\n", p, res, len(ops), time.Since(start).Round(time.Millisecond))
		switch {
		case res == porcupine.Unknown:
			code = 3
		case res == porcupine.Illegal && code == 0:
			code = 1
		}
	}
	fmt.Printf("total %v\n", time.Since(began).Round(time.Millisecond))
	os.Exit(code)
}
