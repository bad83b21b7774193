package scenarios

// TEMPORARY wiring (issue 15) of the exec backend into the scenarios, until the registry
// of backend descriptors (issue 13) replaces it: the spec's exec options, their
// validation, and building the backend around its lock service.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/harness"
	execlock "github.com/fencecheck/fencecheck/harness/lease/exec"
)

// ExecSpec configures the exec backend.
type ExecSpec struct {
	// ClientCmd is the user's lock client, run by /bin/sh -c once per client.
	ClientCmd string
	// LockService is the backend fencecheck starts as the lock service (default naive),
	// or empty with LockEndpoints: an existing service (client-side faults only).
	LockService   string
	LockEndpoints []string
	// ClientTimeout bounds each answer (default execlock.DefaultReplyTimeout or 30 TTLs,
	// whichever is longer).
	ClientTimeout time.Duration
}

func (x ExecSpec) isZero() bool {
	return x.ClientCmd == "" && x.LockService == "" && len(x.LockEndpoints) == 0 && x.ClientTimeout == 0
}

// lockService is the backend that holds the locks: the exec backend's lock service.
func (s Spec) lockService() string {
	if s.Backend != "exec" {
		return s.Backend
	}
	if s.Exec.LockService == "" && len(s.Exec.LockEndpoints) == 0 {
		return "naive"
	}
	return s.Exec.LockService
}

// execWithDefaults validates an exec spec: its own options, then the spec of its lock
// service (TTL, members, faults), whose defaults it takes.
func (s Spec) execWithDefaults() (Spec, error) {
	x := s.Exec
	switch {
	case strings.TrimSpace(x.ClientCmd) == "":
		return s, fmt.Errorf("backend exec needs --client-cmd 'COMMAND' (your lock client; see docs/exec-protocol.md)")
	case x.LockService != "" && len(x.LockEndpoints) > 0:
		return s, fmt.Errorf("give either --lock-service (one fencecheck starts) or --lock-endpoints (yours), not both")
	case x.ClientTimeout < 0:
		return s, fmt.Errorf("--client-timeout must not be negative, got %v", x.ClientTimeout)
	case s.Policy == "careful":
		return s, fmt.Errorf("the careful policy needs a lease that knows its end by the client's clock; an exec client does not report one")
	case s.Resource == "etcd-txn":
		return s, fmt.Errorf("resource etcd-txn needs the etcd backend's own client, not an exec client")
	case len(s.EtcdEndpoints) > 0:
		return s, fmt.Errorf("--etcd-endpoints is for the etcd backend; with exec, give --lock-endpoints")
	}
	external := len(x.LockEndpoints) > 0
	var skipped []string
	inner := s
	inner.Exec = ExecSpec{}
	inner.Backend = s.lockService()
	if external {
		// Only the settings are validated against a stand-in: the service is not ours.
		inner.Backend = "naive"
		for _, f := range s.Faults {
			if isNodeFault(f) {
				return s, fmt.Errorf("fault %q needs a lock service fencecheck started itself (--lock-service); an existing one (--lock-endpoints) only takes client-side faults (pause, pause-before-read, delay, partition)", f)
			}
		}
		var kinds []string
		for _, f := range s.RandomFaults {
			if isNodeFault(f) {
				skipped = append(skipped, fmt.Sprintf("fault %q needs a lock service fencecheck started itself", f))
				continue
			}
			kinds = append(kinds, f)
		}
		if len(s.RandomFaults) > 0 && len(kinds) == 0 {
			return s, fmt.Errorf("no fault of --faults applies to an existing lock service: %s", strings.Join(skipped, "; "))
		}
		inner.RandomFaults = kinds
	}
	switch inner.Backend {
	case "exec":
		return s, fmt.Errorf("--lock-service exec: the lock service must be a backend that holds locks itself")
	}
	if !known(BackendNames(), inner.Backend) {
		return s, fmt.Errorf("unknown lock service %q (known: %s)", inner.Backend, names(BackendNames()))
	}
	// client-crash acts on the exec client, not on the lock service: validate the rest.
	inner.Faults = slices.DeleteFunc(slices.Clone(inner.Faults), func(f string) bool { return f == "client-crash" })
	inner.RandomFaults = slices.DeleteFunc(slices.Clone(inner.RandomFaults), func(f string) bool { return f == "client-crash" })
	n, err := inner.withDefaults()
	if err != nil {
		return s, fmt.Errorf("lock service %s: %w", inner.Backend, err)
	}
	n.Faults = s.Faults
	if slices.Contains(s.RandomFaults, "client-crash") {
		n.RandomFaults = append(n.RandomFaults, "client-crash")
	}
	n.Backend = "exec"
	n.Exec = x
	n.Skipped = append(skipped, n.Skipped...)
	if !external {
		n.Exec.LockService = inner.Backend
	}
	return n, nil
}

// startExec starts the lock service (unless it is an existing one) and the exec backend
// around it; the clients' stderr goes to the run's log.
func (e *env) startExec(ctx context.Context, s Spec) (harness.Backend, error) {
	var inner harness.Backend
	if len(s.Exec.LockEndpoints) == 0 {
		is := s
		is.Backend, is.Exec = s.lockService(), ExecSpec{}
		var err error
		if inner, err = e.startBackend(ctx, is); err != nil {
			return nil, err
		}
	}
	timeout := s.Exec.ClientTimeout
	if timeout == 0 {
		// An acquire waits for the lock: the examples give up after 20 TTLs.
		timeout = max(execlock.DefaultReplyTimeout, 30*s.TTL)
	}
	logw := newSlogLines(e.log)
	e.closers = append(e.closers, logw.Close)
	b, err := execlock.Start(ctx, execlock.Config{
		Command: s.Exec.ClientCmd, Inner: inner, Endpoints: s.Exec.LockEndpoints,
		TTL: s.TTL, LogWriter: logw, ReplyTimeout: timeout,
	})
	if err != nil {
		// A bad command or an unreachable service is the user's input.
		return nil, fmt.Errorf("%w: %w", ErrSpec, err)
	}
	return b, nil
}

// lockServiceOf is the backend node faults act on: the exec backend's lock service.
func lockServiceOf(b harness.Backend) harness.Backend {
	if u, ok := b.(interface{ Unwrap() harness.Backend }); ok && u.Unwrap() != nil {
		return u.Unwrap()
	}
	return b
}

// slogLines logs every line written to it (a client's stderr) at info level.
type slogLines struct {
	pw   *io.PipeWriter
	done chan struct{}
	once sync.Once
}

func newSlogLines(log *slog.Logger) *slogLines {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	pr, pw := io.Pipe()
	l := &slogLines{pw: pw, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 0, 4096), 1<<20)
		for sc.Scan() {
			log.Info("exec client stderr", "line", sc.Text())
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	return l
}

func (l *slogLines) Write(b []byte) (int, error) { return l.pw.Write(b) }

func (l *slogLines) Close() error {
	l.once.Do(func() { _ = l.pw.Close() })
	<-l.done
	return nil
}
