package execlock

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/proc"
	"github.com/fencecheck/fencecheck/harness/registry"
)

// Name is the backend's name as users type it.
const Name = "exec"

// The backend's options (--client-cmd ... on the command line).
const (
	OptionClientCmd     = "client-cmd"
	OptionLockService   = "lock-service"
	OptionLockEndpoints = "lock-endpoints"
	OptionClientTimeout = "client-timeout"
)

// DefaultLockService is the backend fencecheck starts for the clients when neither
// --lock-service nor --lock-endpoints is given.
const DefaultLockService = "naive"

const externalWords = "an existing lock service (--" + OptionLockEndpoints + ")"

// Descriptor returns the registry entry of the exec backend. Its lock service is any
// other backend of reg, looked up by name when a run is checked or started (so the
// order of registration does not matter).
func Descriptor(reg *registry.Registry) registry.Backend {
	d := descriptor{reg: reg}
	return registry.Backend{
		Name:    Name,
		Meaning: "your own lock client in any language (--client-cmd), one process per client over a JSON-lines protocol, against a lock service fencecheck starts (--lock-service) or yours (--lock-endpoints); token = what your client reports",
		Token:   "the token your lock client reports",
		Options: []registry.Option{
			{Name: OptionClientCmd, Usage: "backend exec: your lock client, run by /bin/sh -c once per client (protocol: docs/exec-protocol.md)"},
			{Name: OptionLockService, Usage: "backend exec: the lock service fencecheck starts for your client (a backend name; default " + DefaultLockService + ")"},
			{Name: OptionLockEndpoints, External: true, Usage: "backend exec: comma-separated host:port of your own lock service instead (client-side faults only)"},
			{Name: OptionClientTimeout, Usage: "backend exec: how long your client may take to answer a request, pauses not counted (default 30s or 30x TTL, whichever is longer)"},
		},
		Facts: registry.Facts{
			// --members is its lock service's (which says which sizes it takes).
			MultiMember: true,
		},
		Lifecycle: registry.Lifecycle{
			Check: d.check,
			// Without a --ttl or --members, the lock service's defaults.
			DefaultsFrom: func(s registry.Settings) (registry.Backend, bool) {
				if len(s.List(OptionLockEndpoints)) > 0 {
					return registry.Backend{}, false
				}
				svc, err := d.service(s)
				return svc, err == nil
			},
			Needs:   d.needs,
			Version: d.version,
			Shape:   d.shape,
			Setup:   d.setup,
			Start:   d.start,
		},
		Listing: registry.Listing{
			// A service of its own: the user's client is what is compared.
			Recommended: true,
		},
	}
}

type descriptor struct{ reg *registry.Registry }

// service is the descriptor of the lock service fencecheck starts ("" with
// --lock-endpoints).
func (d descriptor) service(s registry.Settings) (registry.Backend, error) {
	name := s.Option(OptionLockService)
	if name == "" {
		name = DefaultLockService
	}
	if name == Name {
		return registry.Backend{}, errors.New("--lock-service exec: the lock service must be a backend that holds locks itself")
	}
	b, ok := d.reg.Backend(name)
	if !ok {
		var known []string
		for _, b := range d.reg.Backends() {
			if b.Name != Name {
				known = append(known, b.Name)
			}
		}
		return registry.Backend{}, fmt.Errorf("unknown lock service %q (known: %s)", name, strings.Join(known, ", "))
	}
	return b, nil
}

// needs are the shipped examples' the client command runs (ExampleNeeds) and the lock
// service's (nothing with --lock-endpoints).
func (d descriptor) needs(s registry.Settings) []proc.Need {
	out := ExampleNeeds(s.Option(OptionClientCmd))
	if len(s.List(OptionLockEndpoints)) > 0 {
		return out
	}
	svc, err := d.service(s)
	if err != nil {
		return out
	}
	return append(out, svc.NeedsOf(serviceSettings(s))...)
}

// version is the lock service's, when fencecheck starts it, with the client's command.
func (d descriptor) version(ctx context.Context, s registry.Settings) string {
	client := "client: " + s.Option(OptionClientCmd)
	if len(s.List(OptionLockEndpoints)) > 0 {
		return client
	}
	svc, err := d.service(s)
	if err != nil {
		return client
	}
	if v := svc.VersionOf(ctx, serviceSettings(s)); v != "" {
		return v + "; " + client
	}
	return client
}

// serviceSettings are the run's settings as the lock service sees them: none of its own
// options (those of another backend are refused before a run).
func serviceSettings(s registry.Settings) registry.Settings {
	return registry.Settings{TTL: s.TTL, Members: s.Members, Clients: s.Clients, Fence: s.Fence}
}

func (d descriptor) check(s registry.Settings) error {
	eps := s.List(OptionLockEndpoints)
	switch {
	case strings.TrimSpace(s.Option(OptionClientCmd)) == "":
		return errors.New("backend exec needs --client-cmd 'COMMAND' (your lock client; see docs/exec-protocol.md)")
	case s.Option(OptionLockService) != "" && len(eps) > 0:
		return errors.New("give either --lock-service (one fencecheck starts) or --lock-endpoints (yours), not both")
	}
	if _, err := replyTimeout(s); err != nil {
		return err
	}
	if len(eps) > 0 {
		for _, e := range eps {
			if _, _, err := net.SplitHostPort(e); err != nil {
				return fmt.Errorf("--lock-endpoints: %q is not host:port", e)
			}
		}
		if s.Members != 1 {
			return fmt.Errorf("--members is for a lock service fencecheck starts (--lock-service); with --lock-endpoints it must be 1, got %d", s.Members)
		}
		return nil
	}
	svc, err := d.service(s)
	if err != nil {
		return err
	}
	if err := svc.CheckSettings(serviceSettings(s)); err != nil {
		return fmt.Errorf("lock service %s: %w", svc.Name, err)
	}
	return nil
}

// replyTimeout is --client-timeout, or 0 for the default.
func replyTimeout(s registry.Settings) (time.Duration, error) {
	v := s.Option(OptionClientTimeout)
	if v == "" {
		return 0, nil
	}
	t, err := time.ParseDuration(v)
	if err != nil || t < 0 {
		return 0, fmt.Errorf("--client-timeout must be a duration of 0 or more (e.g. 45s), got %q", v)
	}
	return t, nil
}

// shape: the started backend wraps the lock service's started value, so its Shape
// holds the service's (node faults act on the service); the clients are exec's own:
// processes of their own (CrashableProcess) whose leases report no end of theirs.
func (d descriptor) shape(s registry.Settings) registry.Shape {
	var sh registry.Shape
	sh.Locker, sh.Lease = ClientShape(Config{})
	if len(s.List(OptionLockEndpoints)) > 0 {
		sh.Backend = external{&Backend{}}
		return sh
	}
	var inner harness.Backend
	if svc, err := d.service(s); err == nil { // else Check refuses the settings before anything runs
		inner = svc.ShapeOf(serviceSettings(s)).Backend
	}
	sh.Backend = &Backend{cfg: Config{Inner: inner}}
	return sh
}

func (d descriptor) setup(s registry.Settings) string {
	cmd := s.Option(OptionClientCmd)
	if eps := s.List(OptionLockEndpoints); len(eps) > 0 {
		return fmt.Sprintf("exec client %q against an existing lock service at %s", cmd, strings.Join(eps, ","))
	}
	name := s.Option(OptionLockService)
	if name == "" {
		name = DefaultLockService
	}
	return fmt.Sprintf("exec client %q against fencecheck's %s lock service", cmd, name)
}

func (d descriptor) start(ctx context.Context, env registry.Env) (_ harness.Backend, err error) {
	timeout, err := replyTimeout(env.Settings)
	if err != nil {
		return nil, registry.Input(err)
	}
	if timeout == 0 {
		// An acquire waits for the lock: the examples give up after 20 TTLs.
		timeout = max(DefaultReplyTimeout, 30*env.TTL)
	}
	cfg := Config{
		Command: env.Option(OptionClientCmd), TTL: env.TTL, ReplyTimeout: timeout,
		Endpoints: env.List(OptionLockEndpoints), TokenResource: env.TokenResource,
	}
	dir, err := env.TempDir()
	if err != nil {
		return nil, err
	}
	if err := writeExamples(dir); err != nil {
		return nil, err
	}
	if err := prepareExamples(ctx, dir, cfg.Command); err != nil {
		return nil, err
	}
	cfg.Env = []string{ExamplesEnv + "=" + dir}
	if len(cfg.Endpoints) == 0 {
		svc, err := d.service(env.Settings)
		if err != nil {
			return nil, registry.Input(err)
		}
		senv := env
		senv.Settings = serviceSettings(env.Settings)
		inner, err := svc.Start(ctx, senv)
		if err != nil {
			return nil, fmt.Errorf("lock service %s: %w", svc.Name, err)
		}
		cfg.Inner = inner
	}
	// The clients' stderr goes to the run's log.
	cfg.Logger = env.Logger
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	b, err := Start(ctx, cfg) // closes Inner if it fails
	if err != nil {
		// A bad command or an unreachable service is the user's input.
		return nil, registry.Input(err)
	}
	if cfg.Inner == nil {
		return external{b}, nil
	}
	return b, nil
}

// external is the exec backend on a lock service fencecheck did not start.
type external struct{ *Backend }

// External implements harness.External.
func (external) External() string { return externalWords }

// slogLines logs every line written to it (a client's stderr) at info level.
type slogLines struct {
	pw   *io.PipeWriter
	done chan struct{}
	once sync.Once
}

func newSlogLines(log *slog.Logger, msg string) *slogLines {
	pr, pw := io.Pipe()
	l := &slogLines{pw: pw, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 0, 4096), maxLine)
		for sc.Scan() {
			log.Info(msg, "line", sc.Text())
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	return l
}

func (l *slogLines) Write(b []byte) (int, error) { return l.pw.Write(b) }

// Close ends the log once every line written so far is logged. Safe to call twice.
func (l *slogLines) Close() error {
	l.once.Do(func() { _ = l.pw.Close() })
	<-l.done
	return nil
}
