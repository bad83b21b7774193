// Command fencecheck runs lock backends against fenced resources under faults and checks
// the recorded histories for stale writes. `fencecheck -h` lists its commands and
// docs/cli.md (generated from this package: go generate) describes every flag.
//
// Exit codes, the same rule for every command: 0 safe (or everything as expected), 1
// unsafe (a stale write got through, an update was lost, a run differs from its
// expectation), 2 the run could not be made as asked (bad input or usage, an unusable
// path, a missing program or service, an unreachable endpoint, an interrupt: Ctrl-C,
// SIGTERM or SIGHUP), 3 fencecheck's own failure (the checkers disagree, the checker
// timed out, a bug).
package main

//go:generate go run . gen-docs ../../docs/cli.md
//go:generate go run . gen-which-lock ../..

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fencecheck/fencecheck/backend/clienthost"
	"github.com/fencecheck/fencecheck/builtin"
	"github.com/fencecheck/fencecheck/campaign"
	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/harness/proc"
	"github.com/fencecheck/fencecheck/harness/redact"
	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/internal/term"
	"github.com/fencecheck/fencecheck/judge"
	"github.com/fencecheck/fencecheck/spec"
	"github.com/fencecheck/fencecheck/trial"
)

// Exit codes.
const (
	exitSafe     = 0
	exitViolated = 1
	exitUsage    = 2
	exitInternal = 3
	// exitInconclusive: it ran, but the history lacks the evidence a verdict needs.
	exitInconclusive = 4
)

// inconclusiveText is what exit 4 means, in every command's help that gives it.
const inconclusiveText = "inconclusive: it ran, but proves nothing (no grant, the fault never struck, no stale write attempted); the line says which"

func main() {
	// Started as a lock client host by a run of this binary: serve it and exit.
	clienthost.ServeIfHost(builtin.HostLockers)
	ctx, stop := interruptible(context.Background())
	code := Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// stopSignals end a command the way Ctrl-C does: CI runners, Docker and Kubernetes stop a
// job with SIGTERM, and a closed terminal sends SIGHUP.
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// interruptible returns a context that ends at the first of stopSignals, with an
// interrupt naming it as its cause (context.Cause); later ones are ignored while the
// command stops its servers and writes what it has. stop restores the default
// handling.
func interruptible(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, stopSignals...)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			cancel(interrupt{s})
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel(nil)
	}
}

// interrupt is the cause of a context ended by a signal; it is a context.Canceled.
type interrupt struct{ sig os.Signal }

func (i interrupt) Error() string {
	switch i.sig {
	case os.Interrupt:
		return "interrupted by SIGINT"
	case syscall.SIGTERM:
		return "interrupted by SIGTERM"
	case syscall.SIGHUP:
		return "interrupted by SIGHUP"
	}
	return "interrupted by " + i.sig.String()
}

func (interrupt) Is(target error) bool { return target == context.Canceled }

// app is one invocation of the CLI: the registry it resolves names in, and its outputs,
// which mask every secret it was given (see secrets).
type app struct {
	reg    *registry.Registry
	cat    catalogue.Catalogue
	bugs   catalogue.Zoo
	stdout io.Writer
	stderr io.Writer
	// rawErr is stderr unmasked, only to ask whether it is a terminal.
	rawErr io.Writer
	// bar is stderr masked but not escaped, for the progress bar's own control
	// sequences; stdout and stderr escape every control character (term.Writer), so
	// that nothing from a file reaches the terminal raw.
	bar io.Writer
	red *redact.Redactor
	// host runs built-in lock clients as client hosts of this binary (nil when it
	// cannot find itself: they run in-process).
	host trial.LockerHost
	// printed: the command's one JSON document is on stdout (no error document after it).
	printed bool
}

func newApp(args []string, stdout, stderr io.Writer) *app {
	reg := builtin.Registry()
	red := secrets(reg, args)
	zoo, _ := builtin.Zoo()
	return &app{reg: reg, cat: builtin.Catalogue(), bugs: zoo, stdout: red.Writer(term.Writer(stdout)), stderr: red.Writer(term.Writer(stderr)),
		rawErr: stderr, bar: red.Writer(stderr), red: red, host: selfHost()}
}

// selfHost is this binary as a client host (it calls clienthost.ServeIfHost first).
func selfHost() trial.LockerHost {
	exe, err := os.Executable()
	if err != nil {
		return nil // a nil interface, not a nil *Host: the runs stay in-process
	}
	return &clienthost.Host{Exe: exe}
}

// Main runs the CLI and returns its exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	a := newApp(args, stdout, stderr)
	root := a.root()
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	return a.exit(cmd, args, err)
}

// root builds the command tree.
func (a *app) root() *cobra.Command {
	root := &cobra.Command{
		Use:   "fencecheck",
		Short: "check that a lock and a fenced resource keep data safe under faults",
		Long: `fencecheck runs real lock services (etcd, ZooKeeper, Redis, NATS, PostgreSQL and MariaDB
session locks, Kubernetes Leases, your own client through exec, ...) against a protected
resource, injects pauses, partitions, clock skew and crashes through a real TCP fault proxy,
records what every client did, and checks the history for stale writes and lost updates.`,
		Example: `  fencecheck run naive-unfenced-pause      a stale write gets through (exit 1)
  fencecheck run naive-fenced-pause        the fence rejects it (exit 0)
  fencecheck evaluate --backend etcd       may we adopt this lock, and how?
  fencecheck doctor                        what can run on this machine`,
		Version:           version(),
		SilenceErrors:     true,
		SilenceUsage:      true,
		Args:              a.rootArgs,
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, _ []string) error {
			a.usage(a.stderr, cmd)
			return &exitError{code: exitUsage}
		},
		PersistentPreRun: func(cmd *cobra.Command, _ []string) { a.warnDeprecated(cmd) },
	}
	root.Flags().Bool("version", false, "print fencecheck's version (module version, VCS revision, Go version) and exit")
	root.SetVersionTemplate("{{.Version}}\n")
	// cobra writes completion scripts and completions to Out, and nothing else (help and
	// errors are this CLI's own).
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetHelpFunc(func(c *cobra.Command, _ []string) { a.help(a.stdout, c) })
	root.SetUsageFunc(func(c *cobra.Command) error { a.usage(a.stderr, c); return nil })
	root.SetFlagErrorFunc(a.flagError)
	root.CompletionOptions.HiddenDefaultCmd = false
	setExitCodes(root, exitCodes{
		exitSafe:         "the protected data is safe (or every run is as expected)",
		exitViolated:     "unsafe: a stale write got through, an update was lost, or a run differs from its expectation",
		exitUsage:        "the run could not be made as asked: bad input or usage, an unusable path, a missing program or service, an unreachable endpoint, an interrupt (Ctrl-C, SIGTERM, SIGHUP)",
		exitInternal:     "fencecheck's own failure: the checkers disagree, the checker timed out, a bug (please report the history)",
		exitInconclusive: inconclusiveText,
	})
	root.AddCommand(a.runCmd(), a.checkCmd(), a.listCmd(), a.doctorCmd(), a.matrixCmd(), a.evaluateCmd(), a.compareCmd(),
		a.soakCmd(), a.zooCmd(), a.exploreCmd(), a.mergeCmd(), a.reportCmd(), a.serveCmd(), a.genDocsCmd(), a.genWhichLockCmd())
	root.SetHelpCommand(a.helpCmd(root))
	// cobra's own completion command, in this CLI's words.
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			c.Use = "completion SHELL"
			c.Short = "print the shell completion script for bash, zsh, fish or powershell"
			// A shell it has no script for is a usage error, not its help with exit 0.
			c.Args = cobra.ArbitraryArgs
			c.RunE = func(_ *cobra.Command, args []string) error {
				const shells = "bash, zsh, fish or powershell" // the list is the suggestion
				if len(args) == 0 {
					return usageError("name a shell: %s", shells)
				}
				return usageError("unknown shell %s: %s", args[0], shells)
			}
			setExitCodes(c, exitCodes{exitSafe: "printed", exitUsage: "bad usage: no shell, or one it has no script for"})
		}
	}
	return root
}

// helpCmd is `fencecheck help [COMMAND]`, the same as -h; an unknown command is a usage
// error.
func (a *app) helpCmd(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "help [COMMAND]",
		Short: "print the help of a command (the same as -h)",
		ValidArgsFunction: func(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			c, _, err := root.Find(args)
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var out []cobra.Completion
			for _, s := range c.Commands() {
				if s.IsAvailableCommand() && strings.HasPrefix(s.Name(), toComplete) {
					out = append(out, s.Name())
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(_ *cobra.Command, args []string) error {
			c, rest, err := root.Find(args)
			if err != nil || len(rest) > 0 {
				var names []string
				for _, s := range root.Commands() {
					if s.IsAvailableCommand() {
						names = append(names, s.Name())
					}
				}
				return usageError("unknown help topic %q%s", strings.Join(args, " "), didYouMean(args[len(args)-1], names))
			}
			a.help(a.stdout, c)
			return nil
		},
	}
}

// rootArgs refuses an unknown command, suggesting the nearest one.
func (a *app) rootArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	return usageError("unknown command %q%s", args[0], didYouMean(args[0], names))
}

// withCode ends a command with code; its output has said why.
func withCode(code int) error {
	if code == exitSafe {
		return nil
	}
	return &exitError{code: code}
}

// failed is err as the command's failure: its exit code by codeOf, its message one line.
func failed(err error) error {
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	return &exitError{code: codeOf(err), msg: message(err)}
}

// failer returns the function a command ends a failure with: with --json, stdout
// also gets the error document (printError).
func (a *app) failer(asJSON bool) func(error) error {
	return func(err error) error {
		err = failed(err)
		var ee *exitError
		if asJSON && errors.As(err, &ee) {
			a.printError(ee)
		}
		return err
	}
}

// printError prints the error document (docs/error.schema.json) on one line, unless the
// command's document is on stdout or ee has no message (the output said why). After
// check's lines it is the last line.
func (a *app) printError(ee *exitError) {
	if a.printed || ee.msg == "" {
		return
	}
	a.printed = true
	b, _ := json.Marshal(errorJSON{Outcome: judge.OutcomeError, Exit: ee.code, Error: oneLine(ee.msg)})
	_, _ = a.stdout.Write(append(b, '\n'))
}

// jsonAsked says whether cmd was given --json, also when its flags could not be parsed
// (then the raw arguments up to "--" are read).
func jsonAsked(cmd *cobra.Command, args []string) bool {
	f := cmd.Flags().Lookup("json")
	if f == nil {
		return false
	}
	if f.Changed {
		return f.Value.String() == "true"
	}
	asked := false
	for _, arg := range args {
		if arg == "--" {
			break
		}
		if v, ok := strings.CutPrefix(arg, "--json"); ok && (v == "" || v[0] == '=') {
			b, err := strconv.ParseBool(strings.TrimPrefix(v, "="))
			asked = v == "" || err == nil && b
		}
	}
	return asked
}

// codeOf is the exit code of an error from a plan or a run: 2 when the run could not be
// made as asked (a bad spec, the user's input, a program that is not installed), else 3.
func codeOf(err error) int {
	switch {
	case err == nil:
		return exitSafe
	case errors.Is(err, spec.ErrSpec), errors.Is(err, registry.ErrInput), errors.Is(err, proc.ErrNotFound),
		errors.Is(err, campaign.ErrInterrupted), errors.Is(err, context.Canceled):
		return exitUsage
	}
	return exitInternal
}

// message is an error's text without the "invalid scenario: " its kind adds.
func message(err error) string {
	return strings.TrimPrefix(err.Error(), spec.ErrSpec.Error()+": ")
}

// exit prints what ended cmd and returns the exit code. A command given --json whose
// document is not on stdout prints the error document there: a flag or argument it
// could not parse, bad input, its own failure.
func (a *app) exit(cmd *cobra.Command, args []string, err error) int {
	if err == nil {
		return exitSafe
	}
	var ee *exitError
	if !errors.As(err, &ee) {
		// cobra's own errors (a required argument missing, an unknown help topic).
		ee = &exitError{code: exitUsage, msg: err.Error(), usage: true}
	}
	path := "fencecheck"
	if cmd != nil {
		path = cmd.CommandPath()
		if jsonAsked(cmd, args) {
			a.printError(ee)
		}
	}
	if ee.msg != "" {
		fmt.Fprintf(a.stderr, "%s: %s\n", path, oneLine(ee.msg))
	}
	if ee.usage {
		fmt.Fprintf(a.stderr, "see '%s -h'\n", path)
	}
	return ee.code
}

// oneLine joins the lines of a multi-line message with "; " (after a line that ends
// with a colon, with a space).
func oneLine(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		l = strings.Join(strings.Fields(l), " ")
		if l == "" {
			continue
		}
		if b.Len() > 0 {
			if strings.HasSuffix(b.String(), ":") {
				b.WriteString(" ")
			} else {
				b.WriteString("; ")
			}
		}
		b.WriteString(l)
	}
	return term.Text(b.String())
}

// flagError turns pflag's parse errors into one short line (exit 2).
func (a *app) flagError(cmd *cobra.Command, err error) error {
	var (
		notExist *pflag.NotExistError
		invalid  *pflag.InvalidValueError
		required *pflag.ValueRequiredError
	)
	switch {
	case errors.As(err, &notExist):
		name := notExist.GetSpecifiedName()
		if sh := notExist.GetSpecifiedShortnames(); sh != "" {
			return usageError("unknown flag -%s", name)
		}
		var names []string
		cmd.Flags().VisitAll(func(f *pflag.Flag) {
			if !f.Hidden {
				names = append(names, "--"+f.Name)
			}
		})
		return usageError("unknown flag --%s%s", name, didYouMean("--"+name, names))
	case errors.As(err, &invalid):
		f := invalid.GetFlag()
		return usageError("--%s %q: %s", f.Name, invalid.GetValue(), wantValue(f, errors.Unwrap(invalid)))
	case errors.As(err, &required):
		return usageError("--%s needs a value", required.GetFlag().Name)
	}
	return usageError("%s", err)
}

// wantValue says what a flag takes, for a value it could not parse.
func wantValue(f *pflag.Flag, cause error) string {
	switch f.Value.Type() {
	case "duration":
		return "want a duration such as 500ms, 2s or 1m"
	case "int", "int64":
		return "want a whole number"
	case "bool":
		return "want true or false"
	}
	if cause != nil {
		return cause.Error()
	}
	return "invalid value"
}
