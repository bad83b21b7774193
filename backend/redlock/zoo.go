package redlock

import "github.com/fencecheck/fencecheck/catalogue"

// Untried is what go-redsync's users reported that the zoo does not reproduce yet, and
// why.
func Untried() []catalogue.Untried {
	return []catalogue.Untried{
		{
			Ref: "go-redsync/redsync#72", URL: "https://github.com/go-redsync/redsync/issues/72",
			Pain: "Mutex.Valid() could say true after the lock's validity time had passed, when one node answered the lock slowly",
			Why:  "not tried: Valid is deprecated since the report (Until is its answer) and the backend's client never calls it; a run would need one node made slow during every grant",
		},
	}
}
