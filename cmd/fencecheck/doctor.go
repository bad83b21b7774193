package main

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fencecheck/fencecheck/harness/proc"
	"github.com/fencecheck/fencecheck/harness/registry"
)

// availability is whether one backend or resource can run on this machine, from its
// descriptor's Unavailable.
type availability struct {
	Kind string `json:"kind"` // "backend" or "resource"
	Name string `json:"name"`
	// OK: it can run here as configured.
	OK bool `json:"ok"`
	// Why it cannot, as the descriptor says.
	Why string `json:"why,omitempty"`
	// Fix is the command that makes it available (an apt-get install line, a build
	// script); Packages the Debian packages that line installs.
	Fix      string   `json:"fix,omitempty"`
	Packages []string `json:"packages,omitempty"`
	// Setup: nothing to install, it needs a server or setting of the user's (a DSN).
	Setup bool `json:"setup,omitempty"`
}

// buildScript finds a build command in a reason that names one (a descriptor whose
// requirement is not a proc.Need).
var buildScript = regexp.MustCompile(`\b([\w./-]+/build\.sh)\b`)

// fixFor is the command that provides what is missing: the install line of the missing
// needs, else a build script the reason names.
func fixFor(needs []proc.Need, why string) (fix string, pkgs []string) {
	for _, n := range needs {
		if _, err := n.Find(); err != nil && n.Build == "" && n.Package != "" && !slices.Contains(pkgs, n.Package) {
			pkgs = append(pkgs, n.Package)
		}
	}
	if fix = proc.InstallLine(needs...); fix != "" {
		return fix, pkgs
	}
	if m := buildScript.FindStringSubmatch(why); m != nil {
		return m[1], nil
	}
	return "", nil
}

// available says, for every backend and resource of the registry, whether it can run
// here with the given options.
func (a *app) available(opts map[string]string) []availability {
	var out []availability
	settings := func(declared []registry.Option, s registry.Settings) registry.Settings {
		own := map[string]string{}
		for k, v := range opts {
			if registry.HasOption(declared, k) {
				own[k] = v
			}
		}
		s.Options = own
		return s
	}
	add := func(kind, name, why string, needs []proc.Need) {
		e := availability{Kind: kind, Name: name, OK: why == ""}
		if !e.OK {
			e.Why = why
			e.Fix, e.Packages = fixFor(needs, why)
			e.Setup = e.Fix == ""
		}
		out = append(out, e)
	}
	for _, b := range a.reg.Backends() {
		s := settings(b.Options, registry.Settings{TTL: b.TTL, Members: max(b.Members, 1), Clients: 3})
		add("backend", b.Name, b.Unavailability(s), b.NeedsOf(s))
	}
	for _, r := range a.reg.Resources() {
		s := settings(r.Options, registry.Settings{Clients: 3})
		add("resource", r.Name, r.Unavailability(s), r.NeedsOf(s))
	}
	return out
}

// doctorFlags are `fencecheck doctor`'s flags.
type doctorFlags struct {
	json    bool
	options func() map[string]string
}

// doctorJSON is `doctor --json`.
type doctorJSON struct {
	Outcome string         `json:"outcome"` // "ready" or "missing"
	Exit    int            `json:"exit"`
	Entries []availability `json:"entries"`
	// Install is the one apt-get line that installs every missing Debian package.
	Install string `json:"install,omitempty"`
}

func (a *app) doctorCmd() *cobra.Command {
	f := &doctorFlags{}
	c := &cobra.Command{
		Use:   "doctor",
		Short: "say which backends and resources can run on this machine, and how to install the rest",
		Long: `Asks every backend and resource whether it can run on this machine (its server program,
jars or build are there), and for each one that cannot, prints the apt-get install line
(Debian packages) or the build command that provides it. A resource that needs a server of
yours (the postgres resources: --postgres-dsn or $FENCECHECK_POSTGRES_DSN) is listed as
needing setup; it does not make doctor fail. Give a backend's options (an existing server's
address) to check them as a run would.`,
		Example: `  fencecheck doctor
  fencecheck doctor --postgres-dsn postgres://app:PASSWORD@127.0.0.1:5432/app --json`,
		Args: noArgs("doctor checks every backend and resource"),
		RunE: func(*cobra.Command, []string) error { return a.doctor(f) },
	}
	jsonFlag(c.Flags(), &f.json, "the list")
	f.options = a.optionFlags(c.Flags())
	setExitCodes(c, exitCodes{
		exitSafe:     "every backend and resource can run here (some may need a server of yours: setup)",
		exitViolated: "something cannot run here: each is listed with the line that installs it",
		exitUsage:    "bad usage",
	})
	return c
}

func (a *app) doctor(f *doctorFlags) error {
	entries := a.available(f.options())
	var pkgs, builds []string
	missing := 0
	for _, e := range entries {
		if e.OK || e.Setup {
			continue
		}
		missing++
		for _, p := range e.Packages {
			if !slices.Contains(pkgs, p) {
				pkgs = append(pkgs, p)
			}
		}
		if len(e.Packages) == 0 && e.Fix != "" && !slices.Contains(builds, e.Fix) {
			builds = append(builds, e.Fix)
		}
	}
	code := exitSafe
	if missing > 0 {
		code = exitViolated
	}
	install := ""
	if len(pkgs) > 0 {
		install = "apt-get install " + strings.Join(pkgs, " ")
	}
	if f.json {
		doc := doctorJSON{Outcome: "ready", Exit: code, Entries: entries, Install: install}
		if missing > 0 {
			doc.Outcome = "missing"
		}
		if err := a.printJSON(doc); err != nil {
			return &exitError{code: exitInternal, msg: err.Error()}
		}
		return withCode(code)
	}
	width := 0
	for _, e := range entries {
		width = max(width, len(e.Name))
	}
	kind := ""
	for _, e := range entries {
		if e.Kind != kind {
			kind = e.Kind
			fmt.Fprintf(a.stdout, "%ss:\n", kind)
		}
		switch {
		case e.OK:
			fmt.Fprintf(a.stdout, "  %-*s  ok\n", width, e.Name)
		case e.Setup:
			fmt.Fprintf(a.stdout, "  %-*s  needs setup: %s\n", width, e.Name, e.Why)
		case strings.Contains(e.Why, e.Fix):
			fmt.Fprintf(a.stdout, "  %-*s  MISSING: %s\n", width, e.Name, e.Why)
		default:
			fmt.Fprintf(a.stdout, "  %-*s  MISSING: %s; fix: %s\n", width, e.Name, e.Why, e.Fix)
		}
	}
	if missing == 0 {
		fmt.Fprintln(a.stdout, "result: every backend and resource can run here (exit 0)")
		return nil
	}
	fmt.Fprintf(a.stdout, "result: %d backend%s or resource%s cannot run here (exit 1); to install them:\n", missing, plural(missing), plural(missing))
	if install != "" {
		fmt.Fprintf(a.stdout, "  %s\n", install)
	}
	for _, b := range builds {
		fmt.Fprintf(a.stdout, "  %s\n", b)
	}
	return withCode(code)
}
