package sqldb

import (
	"time"

	"github.com/fencecheck/fencecheck/catalogue"
)

// LockedAtCheck is what a check-then-write that locks the row at its check (SELECT ...
// FOR UPDATE, BEGIN IMMEDIATE) shows under a pause, measured on every run: the next
// holder's write waits for the paused one, so no write is ever stale (the fence is never
// tested: register inconclusive) and nothing is written for the whole pause. But the
// next holder read the row before its write blocked, and the worker's read is outside
// the write's transaction: when the paused write lands, the next holder overwrites it
// with a value computed from the older read, and an update is lost.
func LockedAtCheck() catalogue.Expect {
	return catalogue.Expect{Verdicts: catalogue.Verdicts(catalogue.Inconclusive, catalogue.Violated, catalogue.Held, catalogue.Violated), NoStaleAccepted: true}
}

// LockedTTL is those scenarios' TTL. The next holder's write waits for the whole pause
// while its lease is renewed every TTL/3: with 500 ms leases a loaded machine let a
// renewal slip past the TTL (1 of 12 runs under heavy load), the waiting writer became
// stale and the fence was tested. A 1 s TTL (a 20 s pause, 20 × TTL) needs a twice
// longer stall (0 of 12).
const LockedTTL = time.Second
