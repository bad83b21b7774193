package nats

import "github.com/fencecheck/fencecheck/catalogue"

// Untried is what NATS users reported of KV locks that the zoo does not reproduce yet,
// and why.
func Untried() []catalogue.Untried {
	return []catalogue.Untried{
		{
			Ref: "nats-io/nats-server#3375", URL: "https://github.com/nats-io/nats-server/issues/3375",
			Pain: "a KV Update with the latest revision sometimes succeeded when another update had already moved the key on",
			Why:  "not tried yet: the report's conditions (a replicated KV bucket on a JetStream cluster) need a 3-node cluster, and the nats backend starts one nats-server (2.9.10, Debian)",
		},
	}
}
