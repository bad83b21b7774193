package kubelease

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/harness/proc"
)

// clientCmd runs kube-lease-client's subcommands against one cluster: the Lease's
// set-up and clean-up, which fencecheck does over the same client-go the lock clients
// use (so a kubeconfig means what kubectl takes it to mean), straight to the server.
type clientCmd struct {
	program    string
	kubeconfig string
	namespace  string
	lease      string
}

// args are the flags every subcommand takes.
func (c clientCmd) args(sub string, more ...string) []string {
	a := []string{sub, "-protocol", ClientProtocol, "-kubeconfig", c.kubeconfig, "-namespace", c.namespace}
	if c.lease != "" {
		a = append(a, "-lease", c.lease)
	}
	return append(a, more...)
}

// run runs one subcommand to its end (or ctx's) and returns its standard output; its
// error is the program's own one line.
func (c clientCmd) run(ctx context.Context, sub string) (string, error) {
	var out bytes.Buffer
	p, err := proc.Start(ctx, proc.Config{
		Name: ClientName + " " + sub, Path: c.program, Args: c.args(sub), Stdout: &out,
	})
	if err != nil {
		return "", fmt.Errorf("kube-lease: %w", err)
	}
	defer func() { _ = p.Close() }()
	select {
	case <-p.Done():
	case <-ctx.Done():
		return "", fmt.Errorf("kube-lease: %s %s: %w", ClientName, sub, ctx.Err())
	}
	if _, werr := p.Exited(); werr != nil {
		return "", errors.New(lastLine(p.Output(), fmt.Sprintf("kube-lease: %s %s: %v", ClientName, sub, werr)))
	}
	return out.String(), nil
}

// lastLine is the last non-empty line of s (the program's error comes last, after any
// log lines), or def.
func lastLine(s, def string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if l := strings.TrimSpace(lines[len(lines)-1]); l != "" {
		return l
	}
	return def
}

func (c clientCmd) createLease(ctx context.Context) error {
	_, err := c.run(ctx, "create")
	return err
}

func (c clientCmd) deleteLease() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := c.run(ctx, "delete")
	return err
}

// endpoint is the host:port of the kubeconfig's server.
func (c clientCmd) endpoint(ctx context.Context) (string, error) {
	out, err := c.run(ctx, "endpoint")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(out), nil
}

func (c clientCmd) leaseNames(ctx context.Context) ([]string, error) {
	out, err := c.run(ctx, "list")
	if err != nil {
		return nil, err
	}
	return strings.Fields(out), nil
}

// serveArgs are the lock client's command line: client-go's timing and the token.
func (c clientCmd) serveArgs(t Timing, tok TokenKind) []string {
	token := "transitions"
	if tok == TokenResourceVersion {
		token = "resourceversion"
	}
	return c.args("serve",
		"-lease-duration", t.LeaseDuration.String(), "-renew-deadline", t.RenewDeadline.String(),
		"-retry-period", t.RetryPeriod.String(), "-jitter-factor", fmt.Sprint(JitterFactor), "-token", token)
}
