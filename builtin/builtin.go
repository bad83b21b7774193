// Package builtin collects everything that ships with fencecheck: each backend
// package's registry entries, scenarios and page, each resource package's, and the
// faults — one line per package in Packages. Registry builds the registry from it,
// Catalogue the catalogue, and go generate the pages under docs/ (pages.go).
package builtin

import (
	"fmt"

	"github.com/fencecheck/fencecheck/backend/clienthost"
	etcdlock "github.com/fencecheck/fencecheck/backend/etcd"
	execlock "github.com/fencecheck/fencecheck/backend/execlock"
	"github.com/fencecheck/fencecheck/backend/kubelease"
	"github.com/fencecheck/fencecheck/backend/leasetable"
	"github.com/fencecheck/fencecheck/backend/mariadblock"
	"github.com/fencecheck/fencecheck/backend/naive"
	natslock "github.com/fencecheck/fencecheck/backend/nats"
	"github.com/fencecheck/fencecheck/backend/pgadvisory"
	raftlock "github.com/fencecheck/fencecheck/backend/raftlock"
	redislock "github.com/fencecheck/fencecheck/backend/redis"
	"github.com/fencecheck/fencecheck/backend/redlock"
	"github.com/fencecheck/fencecheck/backend/zookeeper"
	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/harness/nemesis/faults"
	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/resource/etcdtxn"
	"github.com/fencecheck/fencecheck/resource/postgres"
	"github.com/fencecheck/fencecheck/resource/register"
	"github.com/fencecheck/fencecheck/resource/sqlite"
)

// Package is what one backend or resource package declares.
type Package struct {
	// Path is the package's folder in the repository.
	Path      string
	Backends  []registry.Backend
	Resources []registry.Resource
	Scenarios []catalogue.Scenario
	// Zoo is the package's entries of the bug zoo, Untried the candidates it tried and
	// could not reproduce (catalogue.Bug, docs/zoo.md).
	Zoo     []catalogue.Bug
	Untried []catalogue.Untried
	// Doc is a backend package's page (its doc.md), "" for a resource package.
	Doc string
}

// Packages lists every built-in package, in the order `list` prints their entries. The
// exec backend's lock service is any backend of reg.
func Packages(reg *registry.Registry) []Package {
	return []Package{
		{Path: "backend/naive", Backends: naive.Descriptors(), Scenarios: naive.Scenarios(), Zoo: naive.Zoo(), Doc: naive.Doc()},
		{Path: "backend/etcd", Backends: one(etcdlock.Descriptor()), Scenarios: etcdlock.Scenarios(), Zoo: etcdlock.Zoo(), Untried: etcdlock.Untried(), Doc: etcdlock.Doc()},
		{Path: "backend/raftlock", Backends: one(raftlock.Descriptor()), Scenarios: raftlock.Scenarios(), Doc: raftlock.Doc()},
		{Path: "backend/zookeeper", Backends: zookeeper.Descriptors(), Scenarios: zookeeper.Scenarios(), Doc: zookeeper.Doc()},
		{Path: "backend/redis", Backends: redislock.Descriptors(), Scenarios: redislock.Scenarios(), Zoo: redislock.Zoo(), Untried: redislock.Untried(), Doc: redislock.Doc()},
		{Path: "backend/redlock", Backends: one(redlock.Descriptor()), Scenarios: redlock.Scenarios(), Untried: redlock.Untried(), Doc: redlock.Doc()},
		{Path: "backend/nats", Backends: one(natslock.Descriptor()), Scenarios: natslock.Scenarios(), Untried: natslock.Untried(), Doc: natslock.Doc()},
		{Path: "backend/execlock", Backends: one(execlock.Descriptor(reg)), Scenarios: execlock.Scenarios(), Zoo: execlock.Zoo(), Untried: execlock.Untried(), Doc: execlock.Doc()},
		{Path: "backend/pgadvisory", Backends: pgadvisory.Descriptors(), Scenarios: pgadvisory.Scenarios(), Zoo: pgadvisory.Zoo(), Doc: pgadvisory.Doc()},
		{Path: "backend/mariadblock", Backends: mariadblock.Descriptors(), Scenarios: mariadblock.Scenarios(), Zoo: mariadblock.Zoo(), Doc: mariadblock.Doc()},
		{Path: "backend/kubelease", Backends: kubelease.Descriptors(), Scenarios: kubelease.Scenarios(), Zoo: kubelease.Zoo(), Untried: kubelease.Untried(), Doc: kubelease.Doc()},
		{Path: "backend/leasetable", Backends: leasetable.Descriptors(), Scenarios: leasetable.Scenarios(), Zoo: leasetable.Zoo(), Doc: leasetable.Doc()},

		{Path: "resource/register", Resources: register.Descriptors()},
		{Path: "resource/etcdtxn", Resources: one(etcdtxn.Descriptor())},
		{Path: "resource/sqlite", Resources: sqlite.Descriptors(), Scenarios: sqlite.Scenarios()},
		{Path: "resource/postgres", Resources: postgres.Descriptors(), Scenarios: postgres.Scenarios()},
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

// HostLockers returns the lock clients a client host (backend/clienthost) can run, by
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

// Zoo returns every entry of the bug zoo the built-in packages declare, in the order
// of Packages, and the candidates they tried and could not reproduce.
func Zoo() (catalogue.Zoo, []catalogue.Untried) {
	var out catalogue.Zoo
	var untried []catalogue.Untried
	for _, p := range Packages(registry.New()) {
		out = append(out, p.Zoo...)
		untried = append(untried, p.Untried...)
	}
	return out, untried
}

// must stops on a registration error: the built-in descriptors are fixed, so one is a
// bug that every test catches.
func must(err error) {
	if err != nil {
		panic(fmt.Sprintf("builtin registry: %v", err))
	}
}
