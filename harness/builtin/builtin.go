// Package builtin collects everything that ships with fencecheck: each backend
// package's registry entries, scenarios and page, each resource package's, and the
// faults — one line per package in Packages. Registry builds the registry from it,
// Catalogue the catalogue, and go generate the pages under docs/ (pages.go).
package builtin

import (
	"fmt"

	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/harness/clienthost"
	"github.com/fencecheck/fencecheck/harness/faults"
	etcdlock "github.com/fencecheck/fencecheck/harness/lease/etcd"
	execlock "github.com/fencecheck/fencecheck/harness/lease/exec"
	"github.com/fencecheck/fencecheck/harness/lease/kubelease"
	"github.com/fencecheck/fencecheck/harness/lease/leasetable"
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

// Package is what one backend or resource package declares.
type Package struct {
	// Path is the package's folder in the repository.
	Path      string
	Backends  []registry.Backend
	Resources []registry.Resource
	Scenarios []catalogue.Scenario
	// Doc is a backend package's page (its doc.md), "" for a resource package.
	Doc string
}

// Packages lists every built-in package, in the order `list` prints their entries. The
// exec backend's lock service is any backend of reg.
func Packages(reg *registry.Registry) []Package {
	return []Package{
		{Path: "harness/lease/naive", Backends: naive.Descriptors(), Scenarios: naive.Scenarios(), Doc: naive.Doc()},
		{Path: "harness/lease/etcd", Backends: one(etcdlock.Descriptor()), Scenarios: etcdlock.Scenarios(), Doc: etcdlock.Doc()},
		{Path: "harness/lease/raft", Backends: one(raftlock.Descriptor()), Scenarios: raftlock.Scenarios(), Doc: raftlock.Doc()},
		{Path: "harness/lease/zookeeper", Backends: zookeeper.Descriptors(), Scenarios: zookeeper.Scenarios(), Doc: zookeeper.Doc()},
		{Path: "harness/lease/redis", Backends: redislock.Descriptors(), Scenarios: redislock.Scenarios(), Doc: redislock.Doc()},
		{Path: "harness/lease/redlock", Backends: one(redlock.Descriptor()), Scenarios: redlock.Scenarios(), Doc: redlock.Doc()},
		{Path: "harness/lease/nats", Backends: one(natslock.Descriptor()), Scenarios: natslock.Scenarios(), Doc: natslock.Doc()},
		{Path: "harness/lease/exec", Backends: one(execlock.Descriptor(reg)), Scenarios: execlock.Scenarios(), Doc: execlock.Doc()},
		{Path: "harness/lease/pgadvisory", Backends: pgadvisory.Descriptors(), Scenarios: pgadvisory.Scenarios(), Doc: pgadvisory.Doc()},
		{Path: "harness/lease/mariadblock", Backends: mariadblock.Descriptors(), Scenarios: mariadblock.Scenarios(), Doc: mariadblock.Doc()},
		{Path: "harness/lease/kubelease", Backends: kubelease.Descriptors(), Scenarios: kubelease.Scenarios(), Doc: kubelease.Doc()},
		{Path: "harness/lease/leasetable", Backends: leasetable.Descriptors(), Scenarios: leasetable.Scenarios(), Doc: leasetable.Doc()},

		{Path: "harness/resource/register", Resources: register.Descriptors()},
		{Path: "harness/resource/etcdtxn", Resources: one(etcdtxn.Descriptor())},
		{Path: "harness/resource/sqlite", Resources: sqlite.Descriptors(), Scenarios: sqlite.Scenarios()},
		{Path: "harness/resource/postgres", Resources: postgres.Descriptors(), Scenarios: postgres.Scenarios()},
	}
}

func one[T any](x T) []T { return []T{x} }

// Registry returns a new registry of the built-in backends, resources and faults. Add
// your own descriptors to it to run them alongside.
func Registry() *registry.Registry {
	r := registry.New()
	for _, p := range Packages(r) {
		must(r.AddBackend(p.Backends...))
		must(r.AddResource(p.Resources...))
	}
	must(r.AddFault(faults.All()...))
	return r
}

// HostLockers returns the lock clients a client host (harness/clienthost) can run, by
// the Kind of their backends' harness.HostConfig.
func HostLockers() clienthost.Constructors {
	return clienthost.Constructors{
		"naive":             naive.HostLockers,
		"redis":             redislock.HostLockers,
		"etcd":              etcdlock.HostLockers,
		"nats":              natslock.HostLockers,
		"redlock":           redlock.HostLockers,
		"zookeeper":         zookeeper.HostLockers,
		"postgres-advisory": pgadvisory.HostLockers,
		"mariadb-lock":      mariadblock.HostLockers,
		raftlock.Name:       raftlock.HostLockers,
		leasetable.Name:     leasetable.HostLockers,
	}
}

// Catalogue returns every named scenario the built-in packages declare, in the order of
// Packages.
func Catalogue() catalogue.Catalogue {
	var out catalogue.Catalogue
	for _, p := range Packages(registry.New()) {
		out = append(out, p.Scenarios...)
	}
	return out
}

// must stops on a registration error: the built-in descriptors are fixed, so one is a
// bug that every test catches.
func must(err error) {
	if err != nil {
		panic(fmt.Sprintf("builtin registry: %v", err))
	}
}
