package histgen

import (
	"fmt"
	"math/rand/v2"

	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/harness/nemesis/faults"
)

// realism writes what Config.Realistic adds to a history: the strings and free-form
// fields a real run records, in the shapes the harness writes them (the run's extra
// fields, Go error texts with quoted URLs, tagged values, pause faults with a detail
// sentence).
type realism struct {
	r     *rand.Rand
	tag   string // the run id's hex part, which the harness appends to values on a shared store
	ports []int  // each client's proxy port, as it appears in its error texts
	c     Config
}

func newRealism(c Config, r *rand.Rand) *realism {
	m := &realism{r: r, c: c, tag: fmt.Sprintf("%012x", r.Uint64()>>16)}
	for range c.Clients + c.Observers {
		m.ports = append(m.ports, 32768+r.IntN(28000))
	}
	return m
}

// run adds the free-form run fields `fencecheck run` records.
func (m *realism) run(run history.Run) history.Run {
	run.Scenario, run.Backend, run.Faults = "generated-realistic", "naive", []string{faults.Pause}
	run.Extra = map[string]any{
		"run_id":      "run-" + m.tag,
		"clients":     m.c.Clients + m.c.Observers,
		"duration_ms": 43_200_000,
		"members":     1,
		"policy":      "trusting",
		"backend_settings": map[string]any{
			"lease":       "50ms",
			"acquire":     "long poll, 1 ms re-check",
			"description": `the naive lock server: "expiry on the server's monotonic clock", tokens from a counter`,
		},
	}
	if m.c.Keys > 1 {
		run.Extra["keys"] = m.c.Keys
	}
	return run
}

// value makes a written value as long as a tagged one with a payload.
func (m *realism) value(base string) string {
	const letters = "abcdefghijklmnopqrstuvwxyz234567"
	b := make([]byte, 20)
	for i := range b {
		b[i] = letters[m.r.IntN(len(letters))]
	}
	return base + "-" + m.tag + "-" + string(b)
}

// timeout is the error text of an op that never returned.
func (m *realism) timeout(kind history.Kind, client int) string {
	return fmt.Sprintf(`Post "http://127.0.0.1:%d/%s": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`, m.ports[client], kind)
}

// held is the error text of an acquire that gave up waiting.
func (m *realism) held(holder int) string {
	if holder < 0 {
		return "definitely no effect: lock held by another client: context deadline exceeded"
	}
	return fmt.Sprintf("definitely no effect: lock held by c%d: context deadline exceeded", holder)
}

// pause is the fault record of a paused critical section.
func (m *realism) pause(client int, start, end int64) history.Fault {
	return history.Fault{
		Kind: faults.Pause, Target: fmt.Sprintf("client-%d", client), Start: start, End: &end,
		Detail: fmt.Sprintf(`client %d stopped at "after-read", all its links stalled; healed after %s, past the %d ms lease; its process group kept running (no process of its own)`,
			client, history.Seconds(end-start), ttl/1_000_000),
	}
}
