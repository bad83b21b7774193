// Package execlock is the exec backend: every harness client's lock client is a process
// of the user's (any language, any library) that fencecheck starts in its own process
// group and drives over a JSON-lines protocol on its stdin and stdout
// (docs/exec-protocol.md). The lock service is either a backend fencecheck started (its
// Endpoints are the service, so node faults still apply) or an existing service given
// by address (client-side faults only). Reads and fenced writes stay in the harness, so
// every resource works unchanged; a pause stops the client process with SIGSTOP.
package execlock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/registry"
)

// Defaults.
const (
	// DefaultReplyTimeout is how long a client may take to answer a request, not
	// counting time it spent stopped by a pause. An acquire waits for the lock, so it is
	// generous.
	DefaultReplyTimeout = 30 * time.Second
	// DefaultStopGrace is how long a client has to exit after its stdin closes, and
	// again after SIGTERM, before it is killed.
	DefaultStopGrace = 2 * time.Second
)

// Config configures the exec backend.
type Config struct {
	// Command is the user's lock client, run by /bin/sh -c once per harness client.
	Command string
	// Dir is the command's working directory (default: fencecheck's).
	Dir string
	// Inner is a started lock service: its Endpoints are the service the clients reach
	// (through their proxies). The backend owns it: Close closes it.
	Inner harness.Backend
	// Endpoints is an existing lock service (host:port, ...) used when Inner is nil:
	// nothing is started for it, and only client-side faults apply.
	Endpoints []string
	// TTL is the lease TTL the run asks for (FENCECHECK_TTL_MS).
	TTL time.Duration
	// LogWriter receives every client's stderr, each line prefixed with the client
	// (nil: discarded).
	LogWriter io.Writer
	// ReplyTimeout bounds the wait for each answer (default DefaultReplyTimeout).
	ReplyTimeout time.Duration
	// StopGrace (default DefaultStopGrace): see DefaultStopGrace.
	StopGrace time.Duration
	// Env is more environment for the command (NAME=value), after fencecheck's own.
	Env []string
	// TokenResource names the run's resource when it fences on tokens: a client that
	// grants with "no_token" then ends the run (a *NoTokenError).
	TokenResource string
	// Logger, when LogWriter is nil, gets every line of the clients' stderr (nil: the
	// lines are discarded).
	Logger *slog.Logger

	// Program, when set, is a lock-client program of fencecheck's own, run directly with
	// Args instead of Command under /bin/sh (the kube-lease backends' client). Its
	// failures are fencecheck's own (ClientError.Builtin), not the user's input.
	Program string
	Args    []string
	// Label names a client in messages (default "exec client": "exec client 2 (pid 7)").
	Label string
	// Expiry says that the clients report how long each grant is valid by their clock
	// (valid_until_ms in a grant and the renewed event, docs/exec-protocol.md): the
	// leases then implement harness.Expiring.
	Expiry bool
	// Cancel says that the clients take the cancel request: an Acquire whose ctx ends
	// asks the client to give up and waits up to CancelWait for its answer, so that a
	// definite refusal stays definite.
	Cancel     bool
	CancelWait time.Duration
}

// DefaultCancelWait bounds the wait for a cancelled acquire's answer.
const DefaultCancelWait = 5 * time.Second

// Validate checks the configuration.
func (c Config) Validate() error {
	switch {
	case strings.TrimSpace(c.Command) == "" && c.Program == "":
		return errors.New("exec: a client command is required (--client-cmd)")
	case c.Command != "" && c.Program != "":
		return errors.New("exec: give either a client command or a program, not both")
	case c.Inner == nil && len(c.Endpoints) == 0:
		return errors.New("exec: a lock service is required: a started backend or the endpoints of an existing one (--lock-endpoints)")
	case c.Inner != nil && len(c.Endpoints) > 0:
		return errors.New("exec: give either a lock service to start or the endpoints of an existing one, not both")
	case c.TTL <= 0:
		return fmt.Errorf("exec: TTL must be positive, got %v", c.TTL)
	case c.ReplyTimeout < 0 || c.StopGrace < 0 || c.CancelWait < 0:
		return errors.New("exec: timeouts must not be negative")
	}
	for _, e := range c.Endpoints {
		if _, _, err := net.SplitHostPort(e); err != nil {
			return fmt.Errorf("exec: lock endpoint %q is not host:port: %w", e, err)
		}
	}
	return nil
}

// Backend is the exec backend (harness.Backend, harness.Failing, and
// harness.TokenlessReporter: a client may grant with "no_token").
type Backend struct {
	cfg       Config
	endpoints []string
	// logw is the clients' stderr into cfg.Logger (nil without one); Close ends it.
	logw *slogLines

	mu      sync.Mutex
	lockers []*Locker
	// killedClients are the clients Close had to SIGKILL ("1 (pid 42)").
	killedClients []string
	closed        bool

	failOnce sync.Once
	failed   chan struct{}
	err      error // set before failed closes

	// kind is what the run's first grant said, which every later grant must say too:
	// kindNone until then.
	kind grantKind
	// noToken is the first client's reason its lock has no fencing token.
	noToken string
	// libraries are the distinct "library" reports of the run's clients, in the order
	// they first came.
	libraries []string
	// seen counts the tokenless grants in the order fencecheck read them: their Token.
	seen atomic.Int64
}

type grantKind int

const (
	kindNone grantKind = iota
	kindToken
	kindNoToken
)

// grantKind checks a grant of client's against the run's first: all carry tokens, or
// none. The first grant without a token in a run whose resource fences on tokens is a
// *NoTokenError.
func (b *Backend) grantKind(client, pid int, noToken string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	k := kindToken
	if noToken != "" {
		k = kindNoToken
	}
	switch {
	case b.kind == kindNone:
		b.kind = k
		if k == kindNoToken {
			b.noToken = noToken
			if b.cfg.TokenResource != "" {
				return &NoTokenError{Client: client, PID: pid, Reason: noToken, Resource: b.cfg.TokenResource}
			}
		}
	case b.kind != k && k == kindToken:
		return fmt.Errorf(`it reported a token after a grant with "no_token" (%s): a lock hands out tokens on every grant or on none`, b.noToken)
	case b.kind != k:
		return errors.New(`it sent "no_token" after grants with tokens: a lock hands out tokens on every grant or on none`)
	}
	return nil
}

// ReportedNoToken implements harness.TokenlessReporter: the reason the run's clients gave
// for granting without a token, or "" (no grant yet, or grants with tokens).
func (b *Backend) ReportedNoToken() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.noToken
}

// reportLibrary notes a client's "library" report.
func (b *Backend) reportLibrary(lib string) {
	lib = strings.TrimSpace(lib)
	b.mu.Lock()
	defer b.mu.Unlock()
	if !slices.Contains(b.libraries, lib) && len(b.libraries) < 8 {
		b.libraries = append(b.libraries, lib)
	}
}

// ClientLibrary implements harness.ClientLibraryReporter: what the run's clients said
// of their lock library ("library"), distinct reports joined with ", "; "" when none said.
func (b *Backend) ClientLibrary() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.libraries, ", ")
}

// NoTokenError is a client that said its lock has no fencing token in a run whose
// resource fences on tokens: registry.ErrNoToken, the user's input (exit 2), as a
// tokenless backend's fenced run is refused before it starts.
type NoTokenError struct {
	Client, PID      int
	Reason, Resource string
}

func (e *NoTokenError) Error() string {
	return fmt.Sprintf("%v (backend exec: client %d (pid %d) granted with %q: %s; resource %s fences on tokens)", registry.ErrNoToken, e.Client, e.PID, "no_token", e.Reason, e.Resource)
}

// Is makes errors.Is(err, registry.ErrNoToken) and registry.ErrInput work.
func (e *NoTokenError) Is(target error) bool {
	return target == registry.ErrNoToken || target == registry.ErrInput
}

// Start checks the configuration and the lock service (an existing service must accept
// a TCP connection on every endpoint within 2 s) and returns the backend. Client
// processes start in NewLocker. On error Inner is closed.
func Start(ctx context.Context, cfg Config) (_ *Backend, err error) {
	defer func() {
		if err != nil && cfg.Inner != nil {
			_ = cfg.Inner.Close()
		}
	}()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.ReplyTimeout == 0 {
		cfg.ReplyTimeout = DefaultReplyTimeout
	}
	if cfg.StopGrace == 0 {
		cfg.StopGrace = DefaultStopGrace
	}
	if cfg.CancelWait == 0 {
		cfg.CancelWait = DefaultCancelWait
	}
	if cfg.Label == "" {
		cfg.Label = "exec client"
	}
	b := &Backend{cfg: cfg, failed: make(chan struct{})}
	if cfg.LogWriter == nil && cfg.Logger != nil {
		b.logw = newSlogLines(cfg.Logger, cfg.Label+" stderr")
		b.cfg.LogWriter = b.logw
		defer func() {
			if err != nil {
				_ = b.logw.Close()
			}
		}()
	}
	if cfg.Inner != nil {
		b.endpoints = cfg.Inner.Endpoints()
		return b, nil
	}
	for _, e := range cfg.Endpoints {
		d := net.Dialer{Timeout: 2 * time.Second}
		c, err := d.DialContext(ctx, "tcp", e)
		if err != nil {
			return nil, fmt.Errorf("exec: lock endpoint %s does not answer: %w", e, err)
		}
		_ = c.Close()
	}
	b.endpoints = append([]string(nil), cfg.Endpoints...)
	return b, nil
}

// Name implements harness.Backend.
func (b *Backend) Name() string { return "exec" }

// Endpoints are the lock service's addresses.
func (b *Backend) Endpoints() []string { return append([]string(nil), b.endpoints...) }

// Unwrap returns the started lock service (nil for an existing one): node faults act on it.
func (b *Backend) Unwrap() harness.Backend { return b.cfg.Inner }

// Failed is closed when a client broke the protocol or died (harness.Failing).
func (b *Backend) Failed() <-chan struct{} { return b.failed }

// Err is the first client failure, a *ClientError (nil before Failed is closed).
func (b *Backend) Err() error {
	select {
	case <-b.failed:
		return b.err
	default:
		return nil
	}
}

func (b *Backend) fail(err error) {
	b.failOnce.Do(func() {
		b.err = err
		close(b.failed)
	})
}

func (b *Backend) killed(client string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.killedClients = append(b.killedClients, client)
}

// NewLocker starts client id's process, dialling only addrs (its proxies, one per
// endpoint, in order).
func (b *Backend) NewLocker(ctx context.Context, id int, addrs []string) (harness.Locker, error) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, errors.New("exec: backend closed")
	}
	b.mu.Unlock()
	if len(addrs) != len(b.endpoints) {
		return nil, fmt.Errorf("exec: client %d got %d addresses for %d endpoints", id, len(addrs), len(b.endpoints))
	}
	l, err := startLocker(ctx, b, id, addrs)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		_ = l.Close()
		return nil, errors.New("exec: backend closed")
	}
	b.lockers = append(b.lockers, l)
	return l, nil
}

// Close ends every client process, then the lock service it started. Its error lists
// clients that had to be killed (they ignored their closed stdin and SIGTERM). Safe to
// call twice.
func (b *Backend) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	lockers := b.lockers
	b.mu.Unlock()
	var wg sync.WaitGroup
	for _, l := range lockers {
		wg.Go(func() { _ = l.Close() })
	}
	wg.Wait()
	var errs []error
	if b.cfg.Inner != nil {
		if err := b.cfg.Inner.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	b.mu.Lock()
	if k := b.killedClients; len(k) > 0 {
		slices.Sort(k)
		noun := b.cfg.Label
		if len(k) > 1 {
			noun += "s"
		}
		errs = append(errs, fmt.Errorf("%s %s did not exit when stdin closed, nor within %v of SIGTERM: killed with SIGKILL", noun, strings.Join(k, ", "), b.cfg.StopGrace))
	}
	b.mu.Unlock()
	if b.logw != nil {
		_ = b.logw.Close()
	}
	return errors.Join(errs...)
}

// ErrProtocol marks a client that broke the protocol or whose command cannot run (a
// usage error: exit 2); ErrCrashed a client process that died during the run (exit 3).
var (
	ErrProtocol = errors.New("exec client broke the protocol")
	ErrCrashed  = errors.New("exec client died")
)

// ClientError is what went wrong with one client, in one line.
type ClientError struct {
	// Label names the kind of client ("" for "exec client").
	Label  string
	Client int
	PID    int
	// Line is what the client sent (or, for a crash or a timeout, the last line it
	// sent; "" if none).
	Line    string
	Problem string
	Crash   bool
	// Builtin: the client is a program of fencecheck's own (Config.Program), so a
	// protocol error is fencecheck's failure, not the user's input.
	Builtin bool
}

func (e *ClientError) Error() string {
	var b strings.Builder
	label := e.Label
	if label == "" {
		label = "exec client"
	}
	fmt.Fprintf(&b, "%s %d (pid %d): ", label, e.Client, e.PID)
	if e.Crash {
		b.WriteString(e.Problem)
		if e.Line != "" {
			fmt.Fprintf(&b, "; the last line it sent: %s", quote(e.Line))
		}
		return b.String()
	}
	if e.Line != "" {
		fmt.Fprintf(&b, "it sent %s: ", quote(e.Line))
	}
	b.WriteString(e.Problem)
	return b.String()
}

// Is makes errors.Is(err, ErrProtocol) and errors.Is(err, ErrCrashed) work; a protocol
// error of a user's client is also the user's input (registry.ErrInput: exit 2).
func (e *ClientError) Is(target error) bool {
	switch target {
	case ErrProtocol:
		return !e.Crash
	case registry.ErrInput:
		return !e.Crash && !e.Builtin
	case ErrCrashed:
		return e.Crash
	}
	return false
}

// quote shows a client's line on one line, cut if long.
func quote(s string) string {
	const maxLen = 200
	if len(s) > maxLen {
		s = s[:maxLen] + "..."
	}
	return fmt.Sprintf("%q", s)
}
