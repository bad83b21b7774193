package redis

import (
	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/harness/nemesis/faults"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/spec"
)

// Zoo is the Redis lock's entry in the bug zoo: fencecheck's own finding about an INCR
// token on a server without persistence.
func Zoo() []catalogue.Bug {
	return []catalogue.Bug{
		{
			ID:  "redis-counter-restart",
			Ref: "fencecheck: redis tokens", URL: "backends/redis.md#the-tokens",
			Pain:     "an INCR counter as the fencing token, on a Redis without persistence: a crash and restart forgets the counter, the next grants reuse tokens already handed out",
			Software: "redis-server 7.0.15 (--save '', --appendonly no)", Source: "Debian redis-server",
			Affected:  "every Redis run without the AOF (and, under a slow disk, with appendfsync everysec: docs/backends/redis.md)",
			Property:  models.Tokens,
			Spec:      spec.Spec{Backend: NameVolatile, Resource: "fenced", Faults: []string{faults.Crash}},
			Control:   spec.Spec{Backend: Name, Resource: "fenced", Faults: []string{faults.Crash}},
			ControlIs: "the AOF with appendfsync always: the counter survives the SIGKILL",
			Shows:     catalogue.TokenBackAcrossFault(faults.Crash),
		},
	}
}

// Untried is what the zoo does not reproduce of Redis's durability, and why.
func Untried() []catalogue.Untried {
	return []catalogue.Untried{
		{
			Ref: "fencecheck: redis tokens (appendfsync everysec)", URL: "backends/redis.md#the-tokens",
			Pain: "with the AOF at appendfsync everysec (Redis's default for it), a SIGKILL lost acknowledged INCRs and the next grant reused a token (seen once, on a loaded machine)",
			Why:  "not reproducible on purpose: Redis loses only the writes it postponed while a background fsync was slow, and no fault here makes the disk slow on cue; the entry redis-counter-restart shows the same reuse without persistence",
		},
	}
}
