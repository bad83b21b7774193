package builtin

import (
	"fmt"
	"path"
	"slices"
	"strings"

	execlock "github.com/fencecheck/fencecheck/backend/execlock"
	"github.com/fencecheck/fencecheck/harness/nemesis/faults"
	"github.com/fencecheck/fencecheck/harness/proc"
	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/spec"
)

// Blocks returns the generated blocks of hand-written pages: by file (from the
// repository's root), then by block name (internal/mdblock's markers).
func Blocks() map[string]map[string]string {
	reg := Registry()
	return map[string]map[string]string{
		"README.md":      {"prerequisites": prerequisites(reg)},
		"docs/faults.md": {"faults": faultTable(reg)},
	}
}

// faultTable lists every fault: its kind, its meaning and the built-in backends it
// applies to as fencecheck starts them (an external service takes client faults only).
func faultTable(reg *registry.Registry) string {
	var b strings.Builder
	b.WriteString("| fault | acts on | what it does | applies to (backends fencecheck starts) |\n|---|---|---|---|\n")
	// Each backend as a matrix cell would run it (campaign.CellSpec, which this package
	// cannot import: campaign's tests import builtin): service faults on the backend's
	// own cluster size for them.
	applies := map[string][]string{}
	for _, name := range reg.BackendNames() {
		be, _ := reg.Backend(name.Name)
		for _, f := range reg.Faults() {
			s := spec.Spec{Backend: be.Name, Resource: "fenced", Faults: []string{f.Name()}}
			if reg.ActsOnService(f.Name()) && be.NodeFaultMembers > 0 {
				s.Members = be.NodeFaultMembers
			}
			if _, err := spec.Resolve(reg, s); err == nil {
				applies[f.Name()] = append(applies[f.Name()], "`"+be.Name+"`")
			}
		}
	}
	for _, f := range reg.Faults() {
		kind := "the holder"
		if _, ok := f.(registry.ServiceFault); ok {
			kind = "the service"
		}
		to := strings.Join(applies[f.Name()], ", ")
		if len(applies[f.Name()]) == len(reg.BackendNames()) {
			to = "every backend"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", f.Name(), kind, cell(f.Meaning()), orNone(to))
	}
	return b.String()
}

// exampleClients are the exec examples a prerequisites row is written for, in order.
var exampleClients = []struct{ file, what string }{
	{"curator_lock.sh", "Apache Curator `InterProcessMutex` (Java)"},
	{"kazoo_lock.py", "kazoo `Lock` (Python, ZooKeeper)"},
	{"redis_lock.py", "redis-py `Lock` (Python)"},
	{"naive_http.py", "a plain HTTP client of the naive server (Python)"},
	{"naive_http.sh", "a plain HTTP client of the naive server (sh + curl)"},
}

// prerequisites is the table of what each lock service, resource and example client
// needs on the machine, from what the packages declare, and the one line that
// installs all of it.
func prerequisites(reg *registry.Registry) string {
	var b strings.Builder
	var all []proc.Need
	b.WriteString("| to run | needs |\n|---|---|\n")
	for _, p := range Packages(reg) {
		if len(p.Backends) == 0 {
			continue
		}
		var names []string
		var base, skew []proc.Need
		for _, d := range p.Backends {
			names = append(names, "`"+d.Name+"`")
			s := registry.Settings{Members: max(d.Members, 1)}
			base = append(base, d.NeedsOf(s)...)
			s.Faults = []string{faults.Skew}
			skew = append(skew, d.NeedsOf(s)...)
		}
		all = append(all, skew...)
		what := "nothing: embedded in fencecheck"
		if n := needNames(base); len(n) > 0 {
			what = strings.Join(n, ", ")
		}
		var extra []string
		for _, n := range needNames(skew) {
			if !slices.Contains(needNames(base), n) {
				extra = append(extra, n)
			}
		}
		if len(extra) > 0 {
			what += "; for clock skew on the server, " + strings.Join(extra, ", ")
		}
		fmt.Fprintf(&b, "| %s ([page](docs/backends/%s.md)) | %s |\n", strings.Join(names, ", "), p.Backends[0].Name, what)
	}
	var pg []string
	for _, p := range Packages(reg) {
		for _, r := range p.Resources {
			if slices.ContainsFunc(r.Options, func(o registry.Option) bool { return o.Secret && strings.Contains(o.Name, "dsn") }) {
				pg = append(pg, "`"+r.Name+"`")
			}
			all = append(all, r.NeedsOf(registry.Settings{})...)
		}
	}
	if len(pg) > 0 {
		fmt.Fprintf(&b, "| resources %s | a database server of yours, given by its flag (`--postgres-dsn` or `$FENCECHECK_POSTGRES_DSN`; Debian `postgresql` for a local one) |\n", strings.Join(pg, ", "))
	}
	for _, e := range exampleClients {
		needs := execlock.ExampleNeeds(e.file)
		all = append(all, needs...)
		fmt.Fprintf(&b, "| exec example [`%s`](%s): %s | %s |\n", e.file, path.Join("backend/execlock/examples", e.file), e.what, strings.Join(needNames(needs), ", "))
	}
	var pkgs, builds []string
	for _, n := range all {
		switch {
		case n.Build != "" && !slices.Contains(builds, n.Build):
			builds = append(builds, n.Build)
		case n.Package != "" && !slices.Contains(pkgs, n.Package):
			pkgs = append(pkgs, n.Package)
		}
	}
	slices.Sort(pkgs)
	fmt.Fprintf(&b, "\nEverything at once (Debian or Ubuntu, as root), then the one program no package provides:\n\n```sh\napt-get install -y %s\n", strings.Join(pkgs, " "))
	// The build needs Go and the module proxy; it keeps its result in ~/.cache/fencecheck.
	for _, c := range builds {
		b.WriteString(c + "\n")
	}
	b.WriteString("```\n")
	return b.String()
}
