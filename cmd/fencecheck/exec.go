package main

// TEMPORARY wiring (issue 15) of the exec backend's options into run and evaluate, until
// the registry of backend descriptors (issue 13) carries backend options.

import (
	"flag"
	"fmt"
	"time"

	"github.com/fencecheck/fencecheck/scenarios"
)

type execFlags struct {
	cmd, service, endpoints *string
	timeout                 *time.Duration
}

func addExecFlags(fs *flag.FlagSet) execFlags {
	return execFlags{
		cmd:       fs.String("client-cmd", "", "backend exec: your lock client, run by /bin/sh -c once per client (protocol: docs/exec-protocol.md)"),
		service:   fs.String("lock-service", "", "backend exec: the lock service fencecheck starts for your client (a backend name; default naive)"),
		endpoints: fs.String("lock-endpoints", "", "backend exec: comma-separated host:port of your own lock service instead (client-side faults only)"),
		timeout:   fs.Duration("client-timeout", 0, "backend exec: how long your client may take to answer a request, pauses not counted (default 30s or 30x TTL, whichever is longer)"),
	}
}

// apply copies the exec flags given into spec; --client-cmd alone implies --backend exec.
func (x execFlags) apply(fs *flag.FlagSet, spec *scenarios.Spec) error {
	given := false
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "client-cmd":
			spec.Exec.ClientCmd, given = *x.cmd, true
		case "lock-service":
			spec.Exec.LockService, given = *x.service, true
		case "lock-endpoints":
			spec.Exec.LockEndpoints, given = splitList(*x.endpoints), true
		case "client-timeout":
			spec.Exec.ClientTimeout, given = *x.timeout, true
		}
	})
	if given && spec.Backend == "" {
		spec.Backend = "exec"
	}
	if given && spec.Backend != "exec" {
		return fmt.Errorf("--client-cmd, --lock-service, --lock-endpoints and --client-timeout are for --backend exec (got %q)", spec.Backend)
	}
	return nil
}
