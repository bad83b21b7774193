// Command fencecheck runs lock backends against fenced resources under faults and checks
// the recorded histories for stale writes.
//
//	fencecheck run [flags] [SCENARIO]   run one scenario (by name, or built from flags)
//	fencecheck check [flags] FILE...    re-check saved histories offline
//	fencecheck list                     every backend, resource, fault and scenario
//
// Exit codes: 0 the protected data is safe, 1 a stale write got through or an update was
// lost (see --fail-on), 2 bad input or usage, 3 internal failure.
package main

import (
	"context"
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
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return exitSafe
	default:
		fmt.Fprintf(stderr, "fencecheck: unknown command %q\n%s", args[0], usage)
		return exitUsage
	}
}
