// Command genhistory writes a generated history (see package histgen) for measuring
// `fencecheck check`:
//
//	go run ./models/internal/histgen/genhistory -ops 1000000 -o /tmp/1m.json
//	go run ./models/internal/histgen/genhistory -ops 1000000 -stale-at 0.99 -o /tmp/1m-stale.json
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/models/internal/histgen"
)

func main() {
	var c histgen.Config
	flag.IntVar(&c.Ops, "ops", 100000, "about how many ops")
	flag.IntVar(&c.Clients, "clients", 5, "lock clients")
	flag.IntVar(&c.Observers, "observers", 0, "clients that only read, without the lock (0: 1, or 2 with -realistic; -1: none)")
	flag.IntVar(&c.Keys, "keys", 1, "independent locks and registers")
	flag.Uint64Var(&c.Seed, "seed", 1, "seed")
	flag.StringVar(&c.Fence, "fence", history.FenceStrict, "strict or monotonic")
	flag.Float64Var(&c.Unknown, "unknown", 0.01, "probability a write's outcome is unknown")
	flag.Float64Var(&c.Pause, "pause", 0.01, "probability a critical section pauses past the lease")
	flag.Float64Var(&c.StaleAt, "stale-at", 0, "if > 0, accept one stale write after this fraction of the ops")
	flag.BoolVar(&c.Realistic, "realistic", false, "the field mix of a real run: waiting acquires, error texts with quotes, unknown acquires, long values, pause faults with details, free-form run fields (5 clients, 2 observers)")
	out := flag.String("o", "", "output file (default standard output)")
	flag.Parse()
	if c.Ops <= 0 || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "genhistory: -ops must be positive and no arguments are taken")
		os.Exit(2)
	}
	f := os.Stdout
	if *out != "" {
		var err error
		if f, err = os.Create(*out); err != nil {
			fmt.Fprintln(os.Stderr, "genhistory:", err)
			os.Exit(2)
		}
	}
	err := histgen.Write(f, c)
	if err == nil {
		err = f.Close()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "genhistory:", err)
		os.Exit(3)
	}
}
