// Command fencecheck runs lock backends against fenced resources under faults and checks
// the recorded histories for stale writes.
//
//	fencecheck run [flags] [SCENARIO]   run one scenario (by name, or built from flags)
//	fencecheck check [flags] FILE...    re-check saved histories offline
//	fencecheck list                     every backend, resource, fault and scenario
//	fencecheck matrix [flags]           run backend × resource × fault cells; index page
//	fencecheck evaluate --backend NAME  a backend's scorecard: is it safe with fencing?
//	fencecheck report DIR_OR_HISTORY... (re)build HTML reports offline
//	fencecheck serve [DIR]              browse a results store on 127.0.0.1
//
// Exit codes: 0 the protected data is safe, 1 a stale write got through or an update was
// lost (see --fail-on), 2 bad input or usage, 3 internal failure.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
)

// Exit codes.
const (
	exitSafe     = 0
	exitViolated = 1
	exitUsage    = 2
	exitInternal = 3
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usage = `usage: fencecheck <command> [flags]

commands:
  run [flags] [SCENARIO]   run one scenario by name, or one built from flags
  check [flags] FILE...    re-check saved history files offline
  list                     print every backend, resource, fault and scenario name
  matrix [flags]           run backend × resource × fault cells against their expected
                           verdicts and write an index page (exit 1: some cell differs)
  evaluate --backend NAME  run every applicable fault against unfenced, fenced and native
                           resources; write a scorecard (exit 0: safe with fencing)
  report DIR_OR_HISTORY... (re)build report.html, matrix and scorecard pages offline
  serve [DIR]              serve a results store on 127.0.0.1 for browsing
  soak [flags]             run scenarios N times each: detection and false-alarm rates

Run 'fencecheck <command> -h' for the flags of a command.
`

// Main runs the CLI and returns its exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "run":
		return cmdRun(ctx, args[1:], stdout, stderr)
	case "check":
		return cmdCheck(ctx, args[1:], stdout, stderr)
	case "list":
		return cmdList(args[1:], stdout, stderr)
	case "matrix":
		return cmdMatrix(ctx, args[1:], stdout, stderr)
	case "evaluate":
		return cmdEvaluate(ctx, args[1:], stdout, stderr)
	case "report":
		return cmdReport(ctx, args[1:], stdout, stderr)
	case "serve":
		return cmdServe(ctx, args[1:], stdout, stderr)
	case "soak":
		return cmdSoak(ctx, args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return exitSafe
	default:
		fmt.Fprintf(stderr, "fencecheck: unknown command %q\n%s", args[0], usage)
		return exitUsage
	}
}

// parseFlags parses a command's flags. done says the command must return code at once:
// exit 0 after -h, exit 2 after a bad flag (the flag package has already said what).
func parseFlags(fs *flag.FlagSet, args []string) (code int, done bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitSafe, true
		}
		return exitUsage, true
	}
	return 0, false
}
