package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Every command's help has the same parts: what it does, its usage line, its prose,
// examples, its own flags, the backend and resource options (one flag per registry
// option, on the commands that run backends) and its exit codes. docs/cli.md is the
// same text for every command (docs.go).

// exitCodes says what each exit code of a command means.
type exitCodes map[int]string

const exitAnnotation = "fencecheck-exit-"

// setExitCodes records a command's exit codes in its annotations.
func setExitCodes(c *cobra.Command, codes exitCodes) {
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	for code, what := range codes {
		c.Annotations[exitAnnotation+strconv.Itoa(code)] = what
	}
}

// exitCodesOf returns a command's exit codes in order (the root's when it sets none).
func exitCodesOf(c *cobra.Command) [][2]string {
	var out [][2]string
	for code := exitSafe; code <= exitInconclusive; code++ {
		if what, ok := c.Annotations[exitAnnotation+strconv.Itoa(code)]; ok {
			out = append(out, [2]string{strconv.Itoa(code), what})
		}
	}
	if len(out) == 0 && c.HasParent() {
		return exitCodesOf(c.Parent())
	}
	return out
}

// optionGroup marks the flags that are registry options.
const optionGroup = "fencecheck-option"

// flagGroups splits a command's visible flags into its own and the registry options.
func flagGroups(c *cobra.Command) (own, options *pflag.FlagSet) {
	own = pflag.NewFlagSet(c.Name(), pflag.ContinueOnError)
	options = pflag.NewFlagSet(c.Name(), pflag.ContinueOnError)
	c.NonInheritedFlags().VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Name == "help" { // every command has -h; the help says so once
			return
		}
		if _, ok := f.Annotations[optionGroup]; ok {
			options.AddFlag(f)
		} else {
			own.AddFlag(f)
		}
	})
	own.SortFlags, options.SortFlags = false, false
	return own, options
}

// subcommands lists a command's visible subcommands.
func subcommands(c *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	for _, s := range c.Commands() {
		if s.IsAvailableCommand() || s.Name() == "help" {
			out = append(out, s)
		}
	}
	return out
}

// help writes a command's help.
func (a *app) help(w io.Writer, c *cobra.Command) {
	fmt.Fprintf(w, "%s: %s\n\n", c.CommandPath(), c.Short)
	fmt.Fprintf(w, "Usage:\n  %s\n", useLine(c))
	if c.Long != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(c.Long))
	}
	if subs := subcommands(c); len(subs) > 0 {
		fmt.Fprintln(w, "\nCommands:")
		width := 0
		for _, s := range subs {
			width = max(width, len(s.Name()))
		}
		for _, s := range subs {
			fmt.Fprintf(w, "  %-*s  %s\n", width, s.Name(), s.Short)
		}
	}
	if c.Example != "" {
		fmt.Fprintf(w, "\nExamples:\n%s\n", strings.TrimRight(c.Example, "\n"))
	}
	own, options := flagGroups(c)
	if own.HasFlags() {
		fmt.Fprintf(w, "\nFlags:\n%s", own.FlagUsages())
	}
	if options.HasFlags() {
		fmt.Fprintf(w, "\nBackend and resource options (each for the backends or resources it names):\n%s", options.FlagUsages())
	}
	if codes := exitCodesOf(c); len(codes) > 0 {
		fmt.Fprintln(w, "\nExit codes:")
		for _, e := range codes {
			fmt.Fprintf(w, "  %s  %s\n", e[0], e[1])
		}
	}
	if len(subcommands(c)) > 0 {
		fmt.Fprintf(w, "\nRun '%s <command> -h' for a command's flags.\n", c.CommandPath())
	}
}

// usage writes a command's help where an error was: the same text.
func (a *app) usage(w io.Writer, c *cobra.Command) { a.help(w, c) }

// useLine is a command's usage line: its path and arguments, and [flags] when it has
// flags of its own.
func useLine(c *cobra.Command) string {
	if !c.HasParent() || c.HasAvailableSubCommands() && !c.Runnable() {
		return c.CommandPath() + " <command> [flags]"
	}
	line := c.CommandPath()
	if _, args, ok := strings.Cut(c.Use, " "); ok {
		line += " " + args
	}
	own, options := flagGroups(c)
	if (own.HasFlags() || options.HasFlags()) && !strings.Contains(line, "[flags]") {
		line += " [flags]"
	}
	return line
}

// commandTree lists c and its documented descendants, depth first (completion's one
// subcommand per shell is left to its own help).
func commandTree(c *cobra.Command) []*cobra.Command {
	out := []*cobra.Command{c}
	if c.Name() == "completion" {
		return out
	}
	for _, s := range c.Commands() {
		if s.IsAvailableCommand() && s.Name() != "help" {
			out = append(out, commandTree(s)...)
		}
	}
	return out
}
