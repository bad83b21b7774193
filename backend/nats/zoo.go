package nats

import "github.com/fencecheck/fencecheck/catalogue"

// Untried is what NATS users reported of KV locks that the zoo does not reproduce yet,
// and why.
func Untried() []catalogue.Untried {
	return []catalogue.Untried{
		{
			Ref: "nats-io/nats-server#3375", URL: "https://github.com/nats-io/nats-server/issues/3375",
			Pain: "a KV Update with the latest revision sometimes succeeded when another update had already moved the key on",
			Why:  "not tried yet: the report (August 2022) raced dozens of lockers on one key; whether Debian's nats-server 2.9.10, released after it, still has the bug is untested, and the nats backend's three clients do not make that race",
		},
	}
}
