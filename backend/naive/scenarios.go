package naive

import (
	"math"

	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/harness/nemesis/faults"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/spec"
)

// Scenarios are the catalogue's scenarios of the naive backends (naive, naive-persisted, naive-wallclock, naive-32bit): each names a run and the verdicts
// it must give (the catalogue's test runs them; docs/expected-verdicts.md is generated
// from them).
func Scenarios() []catalogue.Scenario {
	unsafe := catalogue.Unsafe()
	safe := catalogue.Safe()
	return []catalogue.Scenario{
		{
			Spec:   spec.Spec{Name: "naive-unfenced-pause", Backend: "naive", Resource: "unfenced", Faults: []string{faults.Pause}},
			About:  "the holder pauses after its read for longer than the TTL; its late write overwrites the next holder's (Kleppmann's GC pause)",
			Expect: unsafe,
		},
		{
			Spec:   spec.Spec{Name: "naive-fenced-pause", Backend: "naive", Resource: "fenced", Faults: []string{faults.Pause}},
			About:  "the same pause against a fenced register: the late write carries an old token and is refused",
			Expect: safe,
		},
		{
			Spec:   spec.Spec{Name: "naive-fenced-monotonic-pause", Backend: "naive", Resource: "fenced", Fence: "monotonic", Faults: []string{faults.Pause}},
			About:  "the pause against a register that accepts token >= stored: the older token is still refused",
			Expect: safe,
		},
		{
			Spec:   spec.Spec{Name: "naive-toctou-pause", Backend: "naive", Resource: "toctou", Faults: []string{faults.Pause}},
			About:  "the holder checks the token, pauses between check and write, then writes unconditionally: the check was stale",
			Expect: unsafe,
		},
		{
			Spec:  spec.Spec{Name: "naive-unfenced-pause-before-read", Backend: "naive", Resource: "unfenced", Faults: []string{faults.PauseBeforeRead}},
			About: "the holder pauses before its read: its write goes back in token order (register broken) but it read the newest value, so no update is lost",
			Expect: catalogue.Expect{
				Verdicts:         catalogue.Verdicts(catalogue.Violated, catalogue.Held, catalogue.Held, catalogue.Violated),
				MinStaleAccepted: 1,
			},
		},
		{
			Spec:   spec.Spec{Name: "naive-fenced-delay", Backend: "naive", Resource: "fenced", Faults: []string{faults.Delay}},
			About:  "the holder's write is held in the network until its lease expired and another write was accepted; the fence refuses it on arrival",
			Expect: catalogue.Safe().Unchecked(models.Mutex),
		},
		{
			Spec:   spec.Spec{Name: "naive-unfenced-delay", Backend: "naive", Resource: "unfenced", Faults: []string{faults.Delay}},
			About:  "the delayed write lands after the next holder's write and overwrites it",
			Expect: catalogue.Unsafe().Unchecked(models.Mutex),
		},
		// Crashes, clocks and narrow counters: the lock service itself goes wrong.
		{
			Spec:  spec.Spec{Name: "naive-fenced-monotonic-crash", Backend: "naive", Resource: "fenced", Fence: "monotonic", Faults: []string{faults.Crash}},
			About: "the lock server crashes while the holder is paused and restarts with its in-memory counter back at 0; under a token >= stored fence a reused token overwrites an update",
			Expect: catalogue.Expect{
				Verdicts:         catalogue.Verdicts(catalogue.Held, catalogue.Violated, catalogue.Violated, catalogue.Violated),
				MinStaleRejected: 1,
			},
		},
		{
			Spec:  spec.Spec{Name: "naive-fenced-crash", Backend: "naive", Resource: "fenced", Faults: []string{faults.Crash}},
			About: "the same crash under a token > stored fence: reused tokens are refused, so the data is safe, but writes are refused until the counter catches up",
			Expect: catalogue.Expect{
				Verdicts:         catalogue.Verdicts(catalogue.Held, catalogue.Held, catalogue.Violated, catalogue.Violated),
				MinStaleRejected: 2, NoStaleAccepted: true,
			},
		},
		{
			Spec:   spec.Spec{Name: "naive-persisted-fenced-crash", Backend: "naive-persisted", Resource: "fenced", Faults: []string{faults.Crash}},
			About:  "the counter is persisted with fsync before each grant: after the crash tokens go on increasing and the paused holder's write is refused",
			Expect: catalogue.Safe().Unchecked(models.Mutex),
		},
		{
			Spec:   spec.Spec{Name: "naive-wallclock-fenced-clock-jump", Backend: "naive-wallclock", Resource: "fenced", Faults: []string{faults.ClockJump}},
			About:  "tokens are the server's wall clock; it steps back while the holder is paused, so the next holder gets an older token than the paused one, whose late write then overwrites it",
			Expect: catalogue.Expect{Verdicts: catalogue.Verdicts(catalogue.Held, catalogue.Violated, catalogue.Violated, catalogue.Any)},
		},
		{
			// Run until the counter has wrapped and a few writes came after, however slow
			// the machine: the grants from NarrowStart to MaxUint32, the wrapped one, two more.
			Spec:   spec.Spec{Name: "naive-32bit-fenced", Backend: "naive-32bit", Resource: "fenced", MinGrants: math.MaxUint32 - NarrowStart + 4},
			About:  "a 32-bit token counter wraps: every later token is older than the stored one, so the fence refuses every write from then on",
			Expect: catalogue.Expect{Verdicts: catalogue.Verdicts(catalogue.Held, catalogue.Held, catalogue.Violated, catalogue.Any), MinStaleRejected: 1, NoStaleAccepted: true},
		},
		{
			Spec:   spec.Spec{Name: "naive-unfenced-careful-pause", Backend: "naive", Resource: "unfenced", Policy: spec.PolicyCareful, Faults: []string{faults.Pause}},
			About:  "a careful client checks its lease by its own clock right before writing, then pauses between the check and the write",
			Expect: unsafe,
		},
		{
			Spec:   spec.Spec{Name: "naive-fenced-careful-pause", Backend: "naive", Resource: "fenced", Policy: spec.PolicyCareful, Faults: []string{faults.Pause}},
			About:  "the same careful client against a fenced register: the fence catches what the check missed",
			Expect: safe,
		},
		{
			Spec:   spec.Spec{Name: "naive-unfenced-careful-skew", Backend: "naive", Resource: "unfenced", Policy: spec.PolicyCareful, TTL: catalogue.SkewTTL, Faults: []string{faults.Skew}},
			About:  "the lock server's clock runs fast: it expires the lease while the careful client's own clock says there is time left",
			Expect: unsafe,
		},
	}
}
