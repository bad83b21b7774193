package scenarios

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/nemesis/nemesistest"
)

// Every fault of a random schedule says in its detail what happened, and the ops of the
// same history agree: the writes it says other clients had accepted during it (or that
// none were), the write it names with its time, where it struck the client and that a
// stopped client called nothing. It asserts agreement, never timing, so a loaded machine
// changes what the details say but not whether they are true.
func TestFaultDetailsAgreeWithHistory(t *testing.T) {
	var all []string
	for _, f := range FaultNames() {
		all = append(all, f.Name)
	}
	const seeds = 20
	for _, backend := range []string{"naive", "raft"} {
		t.Run(backend, func(t *testing.T) {
			var mu sync.Mutex
			total, none, some := 0, 0, 0
			kinds := map[string]int{}
			t.Cleanup(func() {
				if !t.Failed() {
					// Not vacuous: the runs struck clients, every clause was checked, and
					// both outcomes occurred (holds shorter than the TTL keep the others
					// out; longer ones let them take the lock over).
					require.GreaterOrEqual(t, total, 3*seeds, "clauses checked over %d seeds", seeds)
					require.Positive(t, none, "faults during which no other client's write was accepted")
					require.Positive(t, some, "faults during which other clients' writes were accepted")
					t.Logf("%s: %d clauses checked; %d faults without and %d with other clients' writes accepted; faults by kind %v", backend, total, none, some, kinds)
				}
			})
			for seed := int64(1); seed <= seeds; seed++ {
				t.Run(fmt.Sprint(seed), func(t *testing.T) {
					t.Parallel()
					spec := Spec{Backend: backend, Resource: "fenced", RandomFaults: all, Seed: seed,
						Duration: 1500 * time.Millisecond, TTL: 100 * time.Millisecond}
					o, err := Execute(context.Background(), spec, Options{})
					require.NoError(t, err)
					clauses, problems := nemesistest.Check(o.History)
					require.Empty(t, problems, "faults: %s", faultLines(o))
					mu.Lock()
					defer mu.Unlock()
					total += clauses
					for _, f := range o.History.Faults {
						kinds[f.Kind]++
						switch {
						case strings.Contains(f.Detail, "no other client's write was accepted during it"):
							none++
						case strings.Contains(f.Detail, "accepted during it"):
							some++
						}
					}
				})
			}
		})
	}
}

func faultLines(o *Outcome) string {
	var b strings.Builder
	for _, f := range o.History.Faults {
		fmt.Fprintf(&b, "\n  %s on %s: %s", f.Kind, f.Target, f.Detail)
	}
	return b.String()
}
