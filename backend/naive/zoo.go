package naive

import (
	"math"

	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/spec"
)

// Zoo is the naive lock server's entry in the bug zoo: a token counter too narrow for
// the grants it hands out, fencecheck's own demonstration of a hazard every 32-bit
// token has.
func Zoo() []catalogue.Bug {
	// The counter starts near its limit, so the run passes it within a few grants.
	grants := math.MaxUint32 - NarrowStart + 4
	return []catalogue.Bug{
		{
			ID:  "token-32bit-wrap",
			Ref: "fencecheck: naive-32bit", URL: "backends/naive.md",
			Pain:     "a fencing token kept in 32 bits wraps after 2^32 grants: every later token is older than the one the resource stored, so the fence refuses every write from then on",
			Software: "fencecheck's naive lock server with a 32-bit counter (started near its limit)", Source: "embedded in fencecheck",
			Affected:  "any lock whose token is a 32-bit integer (an int column, a uint32 field)",
			Property:  models.Tokens,
			Spec:      spec.Spec{Backend: "naive-32bit", Resource: "fenced", MinGrants: grants},
			Control:   spec.Spec{Backend: "naive", Resource: "fenced", MinGrants: grants},
			ControlIs: "the same lock server with a 64-bit counter",
			Shows:     catalogue.TokenBackWithoutFault,
		},
	}
}
