package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/spec"
)

func (a *app) listCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "list",
		Short: "print every backend, resource, fault, policy, property and scenario name",
		Long: `Prints every name the other commands take, with one line of meaning: backends
(--backend), resources (--resource), faults (--fault), client policies (--policy),
properties (--fail-on) and the catalogue's scenarios with their expected verdicts. A backend
or resource that cannot run on this machine is marked, with what it needs ('fencecheck
doctor' says how to install it).`,
		Args: noArgs("list takes no arguments"),
		RunE: func(*cobra.Command, []string) error { return a.list() },
	}
	setExitCodes(c, exitCodes{exitSafe: "listed", exitUsage: "bad usage"})
	return c
}

func (a *app) list() error {
	why := map[string]string{}
	for _, e := range a.available(nil) {
		if !e.OK {
			why[e.Kind+"/"+e.Name] = e.Why
		}
	}
	w := a.stdout
	section := func(title, kind string, list []registry.Named) {
		fmt.Fprintf(w, "%s:\n", title)
		for _, n := range list {
			fmt.Fprintf(w, "  %-34s %s\n", n.Name, n.Meaning)
			if y := why[kind+"/"+n.Name]; y != "" {
				fmt.Fprintf(w, "  %-34s (cannot run here: %s)\n", "", y)
			}
		}
	}
	section("backends (--backend)", "backend", a.reg.BackendNames())
	section("resources (--resource)", "resource", a.reg.ResourceNames())
	section("faults (--fault)", "", a.reg.FaultNames())
	section("client policies (--policy)", "", spec.Policies())
	fmt.Fprintln(w, "properties (--fail-on):")
	fmt.Fprintln(w, "  register                           the resource acts as one atomic register that accepts a write iff its token passes the fence")
	fmt.Fprintln(w, "  updates                            every accepted write read the value accepted just before it (no lost update)")
	fmt.Fprintln(w, "  tokens                             grants carry strictly increasing tokens in real-time order")
	fmt.Fprintln(w, "  mutex                              at most one client believes it holds the lock at any time")
	fmt.Fprintln(w, "  effects                            every delivered side effect belongs to a write that took effect (histories with side effects)")
	fmt.Fprintln(w, "scenarios (fencecheck run NAME):")
	for _, s := range a.cat {
		var exp []string
		for _, p := range []string{"register", "updates", "tokens", "mutex"} {
			for k, v := range s.Expect.Verdicts {
				if string(k) == p {
					exp = append(exp, p+"="+string(v))
				}
			}
		}
		fmt.Fprintf(w, "  %-34s %s\n  %-34s expect %s\n", s.Name, s.About, "", strings.Join(exp, " "))
	}
	return nil
}
