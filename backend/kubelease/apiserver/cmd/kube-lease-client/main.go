// Command kube-lease-client is the lock client of fencecheck's kube-lease backends:
// k8s.io/client-go's leaderelection with a LeaseLock, one process per harness client,
// driven by fencecheck over the exec protocol (docs/exec-protocol.md) on stdin and
// stdout. It lives in this module, not in fencecheck's, so that fencecheck itself links
// no k8s.io package; build.sh builds it next to kube-apiserver.
//
// Subcommands:
//
//	serve     the exec-protocol client (FENCECHECK_CLIENT, FENCECHECK_LOCK_ADDRS)
//	create    create the Lease with no holder and 0 transitions
//	delete    delete the Lease
//	list      print the names of the Leases in the namespace, one a line
//	endpoint  print the host:port of the kubeconfig's server
//	version   print the server's version (GET /version): "kube-apiserver v1.37.2"
//
// Every subcommand takes -protocol, the version of this interface fencecheck speaks; a
// build that speaks another refuses to run, naming build.sh. Errors are one line on
// stderr, exit status 1 (2 for a bad command line).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// protocol is the version of this program's command line and of its exec-protocol
// extensions; fencecheck's kubelease.ClientProtocol must be the same.
const protocol = "1"

func main() {
	err := run(context.Background(), os.Args[1:], os.Stdin, os.Stdout)
	var u usageError
	switch {
	case errors.As(err, &u):
		fmt.Fprintln(os.Stderr, "kube-lease-client: "+err.Error())
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, err.Error())
		os.Exit(1)
	}
}

type usageError struct{ error }

// common are the flags every subcommand takes.
type common struct {
	protocol   string
	kubeconfig string
	namespace  string
	lease      string
	timeout    time.Duration
}

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.protocol, "protocol", "", "the interface version fencecheck speaks (required)")
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "the cluster's kubeconfig (its current context; required)")
	fs.StringVar(&c.namespace, "namespace", "default", "the Lease's namespace")
	fs.StringVar(&c.lease, "lease", "", "the Lease's name")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Second, "bound on create, delete, list")
}

func (c *common) check(needLease bool) error {
	switch {
	case c.protocol != protocol:
		return usageError{fmt.Errorf("this build speaks protocol %s, fencecheck asks for %q: rebuild it with backend/kubelease/apiserver/build.sh", protocol, c.protocol)}
	case c.kubeconfig == "":
		return usageError{errors.New("-kubeconfig is required")}
	case needLease && c.lease == "":
		return usageError{errors.New("-lease is required")}
	}
	return nil
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) == 0 {
		return usageError{errors.New("want a subcommand: serve, create, delete, list, endpoint or version")}
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet(sub, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var c common
	c.register(fs)
	var s serveFlags
	if sub == "serve" {
		s.register(fs)
	}
	if err := fs.Parse(args); err != nil {
		return usageError{fmt.Errorf("%s: %w", sub, err)}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("%s: unexpected arguments %s", sub, strings.Join(fs.Args(), " "))}
	}
	switch sub {
	case "serve":
		if err := c.check(true); err != nil {
			return err
		}
		return serve(ctx, c, s, stdin, stdout)
	case "create", "delete":
		if err := c.check(true); err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(ctx, c.timeout)
		defer cancel()
		if sub == "create" {
			return createLease(ctx, c)
		}
		return deleteLease(ctx, c)
	case "list":
		if err := c.check(false); err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(ctx, c.timeout)
		defer cancel()
		return listLeases(ctx, c, stdout)
	case "endpoint":
		if err := c.check(false); err != nil {
			return err
		}
		return printEndpoint(c, stdout)
	case "version":
		if err := c.check(false); err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(ctx, c.timeout)
		defer cancel()
		return printVersion(ctx, c, stdout)
	}
	return usageError{fmt.Errorf("unknown subcommand %q (serve, create, delete, list, endpoint, version)", sub)}
}
