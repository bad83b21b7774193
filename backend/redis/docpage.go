package redis

import _ "embed" // the backend's page

//go:embed doc.md
var doc string

// Doc is the backend's page (doc.md in this folder: how fencecheck runs it, what its
// faults do, what was measured); go generate in builtin writes it to
// docs/backends/redis.md.
func Doc() string { return doc }
