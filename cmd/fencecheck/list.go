package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/fencecheck/fencecheck/harness/builtin"
	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/spec"
)

func cmdList(args []string, stdout, stderr io.Writer) int {
	reg := builtin.Registry()
	if len(args) > 0 {
		fmt.Fprintf(stderr, "fencecheck list: takes no arguments, got %q\n", args)
		return exitUsage
	}
	section := func(title string, list []registry.Named) {
		fmt.Fprintf(stdout, "%s:\n", title)
		for _, n := range list {
			fmt.Fprintf(stdout, "  %-34s %s\n", n.Name, n.Meaning)
		}
	}
	section("backends (--backend)", reg.BackendNames())
	section("resources (--resource)", reg.ResourceNames())
	section("faults (--fault)", reg.FaultNames())
	section("client policies (--policy)", spec.Policies())
	fmt.Fprintln(stdout, "properties (--fail-on):")
	fmt.Fprintln(stdout, "  register                           the resource acts as one atomic register that accepts a write iff its token passes the fence")
	fmt.Fprintln(stdout, "  updates                            every accepted write read the value accepted just before it (no lost update)")
	fmt.Fprintln(stdout, "  tokens                             grants carry strictly increasing tokens in real-time order")
	fmt.Fprintln(stdout, "  mutex                              at most one client believes it holds the lock at any time")
	fmt.Fprintln(stdout, "scenarios (fencecheck run NAME):")
	for _, s := range builtin.Catalogue() {
		var exp []string
		for _, p := range []string{"register", "updates", "tokens", "mutex"} {
			for k, v := range s.Expect.Verdicts {
				if string(k) == p {
					exp = append(exp, p+"="+string(v))
				}
			}
		}
		fmt.Fprintf(stdout, "  %-34s %s\n  %-34s expect %s\n", s.Name, s.About, "", strings.Join(exp, " "))
	}
	return exitSafe
}
