package sqlsession

import (
	"context"
	"io"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/proc"
	"github.com/fencecheck/fencecheck/harness/registry"
)

// Entries is what the registry entries of one database lock backend share: the option
// that points them at an existing server instead of a private one fencecheck starts.
type Entries struct {
	// Option is the DSN option's name.
	Option string
	// External names an existing server in the caps (harness.External).
	External string
	// Needs is what a private server needs (its program, and more in some settings).
	Needs func(registry.Settings) []proc.Need
	// LogName is the private server's log file in the run's evidence folder.
	LogName string
}

// Caps: a private server is one process fencecheck can signal; an existing one gets
// client-side faults only.
func (d Entries) Caps(s registry.Settings, noToken string) registry.Caps {
	if s.Option(d.Option) != "" {
		return registry.Caps{External: d.External, Crasher: true, ClientExpiry: true, NoToken: noToken}
	}
	return registry.Caps{Crasher: true, ProcessNodes: true, SingleProcess: true, ClientExpiry: true, NoToken: noToken}
}

// NeedsOf is what a run needs: a private server's needs, nothing when the run uses an
// existing server.
func (d Entries) NeedsOf(s registry.Settings) []proc.Need {
	if s.Option(d.Option) != "" {
		return nil
	}
	return d.Needs(s)
}

// Start builds the backend's config for the run (dsn, or a private server's dir and
// log) and starts it. A config that does not validate, and a failure of the user's
// server, are bad input (registry.Input).
func Start[C interface{ Validate() error }, B harness.Backend](ctx context.Context, env registry.Env, d Entries,
	config func(dsn, dir string, log io.Writer) C, start func(context.Context, C) (B, error)) (B, error) {
	var zero B
	dsn, dir, log := env.Option(d.Option), "", io.Writer(nil)
	if dsn == "" {
		var err error
		if dir, err = env.TempDir(); err != nil {
			return zero, err
		}
		if log, _, err = env.LogFile(d.LogName); err != nil {
			return zero, err
		}
	}
	cfg := config(dsn, dir, log)
	if err := cfg.Validate(); err != nil {
		return zero, registry.Input(err)
	}
	b, err := start(ctx, cfg)
	if err != nil && dsn != "" {
		return zero, registry.Input(err) // the user's server
	}
	return b, err
}

// Backend is what an existing server's backend keeps of a database lock backend.
type Backend interface {
	harness.Backend
	harness.Crasher
	NoFencingToken() string
}

// External is a database lock backend on a server fencecheck did not start: the plain
// Backend methods only, so that it is neither ProcessNodes nor FastClocked and no node
// or clock fault reaches it. Words say how the user named the server.
type External struct {
	B     Backend
	Words string
}

var (
	_ harness.External        = External{}
	_ harness.ExpiringBackend = External{}
	_ harness.Tokenless       = External{}
	_ harness.Crasher         = External{}
)

func (e External) Name() string        { return e.B.Name() }
func (e External) Endpoints() []string { return e.B.Endpoints() }
func (e External) NewLocker(ctx context.Context, id int, addrs []string) (harness.Locker, error) {
	return e.B.NewLocker(ctx, id, addrs)
}
func (e External) Close() error           { return e.B.Close() }
func (e External) LeasesExpire()          {}
func (e External) NoFencingToken() string { return e.B.NoFencingToken() }

// Crash and Restart refuse: there is no node fencecheck could crash (the declared caps
// keep harness.Crasher, which the registry's ownService check refuses first).
func (e External) Crash(ctx context.Context, i int) error { return e.B.Crash(ctx, i) }
func (e External) Restart(ctx context.Context, i int, keepData bool) error {
	return e.B.Restart(ctx, i, keepData)
}

// External implements harness.External.
func (e External) External() string { return e.Words }
