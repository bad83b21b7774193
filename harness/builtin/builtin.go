// Package builtin builds the registry of everything that ships with fencecheck. A new
// backend, resource or fault is one package plus one line here.
package builtin

import (
	"fmt"

	"github.com/fencecheck/fencecheck/harness/faults"
	etcdlock "github.com/fencecheck/fencecheck/harness/lease/etcd"
	execlock "github.com/fencecheck/fencecheck/harness/lease/exec"
	"github.com/fencecheck/fencecheck/harness/lease/kubelease"
	"github.com/fencecheck/fencecheck/harness/lease/mariadblock"
	"github.com/fencecheck/fencecheck/harness/lease/naive"
	natslock "github.com/fencecheck/fencecheck/harness/lease/nats"
	"github.com/fencecheck/fencecheck/harness/lease/pgadvisory"
	raftlock "github.com/fencecheck/fencecheck/harness/lease/raft"
	redislock "github.com/fencecheck/fencecheck/harness/lease/redis"
	"github.com/fencecheck/fencecheck/harness/lease/redlock"
	"github.com/fencecheck/fencecheck/harness/lease/zookeeper"
	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/harness/resource/etcdtxn"
	"github.com/fencecheck/fencecheck/harness/resource/postgres"
	"github.com/fencecheck/fencecheck/harness/resource/register"
	"github.com/fencecheck/fencecheck/harness/resource/sqlite"
)

// Registry returns a new registry of the built-in backends, resources and faults. Add
// your own descriptors to it to run them alongside.
func Registry() *registry.Registry {
	r := registry.New()
	must(r.AddBackend(naive.Descriptors()...))
	must(r.AddBackend(etcdlock.Descriptor()))
	must(r.AddBackend(raftlock.Descriptor()))
	must(r.AddBackend(zookeeper.Descriptors()...))
	must(r.AddBackend(append(redislock.Descriptors(), redlock.Descriptor(), natslock.Descriptor())...)) // redis, redis-volatile, redis-notoken, redlock, nats
	must(r.AddBackend(execlock.Descriptor(r)))
	must(r.AddBackend(pgadvisory.Descriptors()...))
	must(r.AddBackend(mariadblock.Descriptors()...))
	must(r.AddBackend(kubelease.Descriptors()...))

	must(r.AddResource(register.Descriptors()...))
	must(r.AddResource(etcdtxn.Descriptor()))
	must(r.AddResource(sqlite.Descriptors()...))
	must(r.AddResource(postgres.Descriptors()...))

	must(r.AddFault(faults.All()...))
	return r
}

// must stops on a registration error: the built-in descriptors are fixed, so one is a
// bug that every test catches.
func must(err error) {
	if err != nil {
		panic(fmt.Sprintf("builtin registry: %v", err))
	}
}
