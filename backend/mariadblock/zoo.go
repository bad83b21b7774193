package mariadblock

import (
	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/harness/nemesis/faults"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/spec"
)

// Zoo is the MariaDB lock's entry in the bug zoo: fencecheck's own finding about the
// connection id as a token.
func Zoo() []catalogue.Bug {
	return []catalogue.Bug{
		{
			ID:  "mariadb-connid-restart",
			Ref: "fencecheck: mariadb-lock tokens", URL: "backends/mariadb-lock.md#the-tokens",
			Pain:     "GET_LOCK's holder as IS_USED_LOCK reports it, the connection id, looks like a token that rises with every session, but a server restart starts the ids again near 1: tokens go back and are reused",
			Software: "MariaDB 10.11 (GET_LOCK, IS_USED_LOCK)", Source: "Debian mariadb-server",
			Affected:  "every version: connection ids are per server start",
			Property:  models.Tokens,
			Spec:      spec.Spec{Backend: Name + "-connid", Resource: "fenced", Faults: []string{faults.Crash}},
			Control:   spec.Spec{Backend: Name, Resource: "fenced", Faults: []string{faults.Crash}},
			ControlIs: "the token is an InnoDB counter incremented right after the grant (durable across the restart)",
			Shows:     catalogue.TokenBackAcrossFault(faults.Crash),
		},
	}
}
