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
	// External names an existing server (harness.External).
	External string
	// Needs is what a private server needs (its program, and more in some settings).
	Needs func(registry.Settings) []proc.Need
	// LogName is the private server's log file in the run's evidence folder.
	LogName string
}

// Shape is what Start returns for settings: on an existing server the plain wrapper
// Existing (ExistingTokenless without a token), else own, the private server's value
// type (a process fencecheck can signal).
func (d Entries) Shape(s registry.Settings, own harness.Backend, noToken bool) registry.Shape {
	sh := registry.Shape{Backend: own, Locker: (*Locker)(nil), Lease: (*Lease)(nil)}
	switch {
	case s.Option(d.Option) != "" && noToken:
		sh.Backend = ExistingTokenless{}
	case s.Option(d.Option) != "":
		sh.Backend = Existing{}
	}
	return sh
}

// Wrap returns b, started on an existing server, as its plain wrapper (noToken: the
// reason it has no fencing token, or "").
func (d Entries) Wrap(b harness.Backend, noToken string) harness.Backend {
	e := Existing{B: b, Words: d.External}
	if noToken != "" {
		return ExistingTokenless{Existing: e, Reason: noToken}
	}
	return e
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

// Existing is a database lock backend on a server fencecheck did not start: the plain
// Backend methods only, so that it is neither ProcessNodes, Crasher nor FastClocked and
// no node or clock fault reaches it. Words say how the user named the server.
type Existing struct {
	B     harness.Backend
	Words string
}

// ExistingTokenless is Existing for a backend without fencing tokens.
type ExistingTokenless struct {
	Existing
	Reason string
}

var (
	_ harness.External  = Existing{}
	_ harness.External  = ExistingTokenless{}
	_ harness.Tokenless = ExistingTokenless{}
)

func (e Existing) Name() string        { return e.B.Name() }
func (e Existing) Endpoints() []string { return e.B.Endpoints() }
func (e Existing) NewLocker(ctx context.Context, id int, addrs []string) (harness.Locker, error) {
	return e.B.NewLocker(ctx, id, addrs)
}
func (e Existing) Close() error { return e.B.Close() }

// External implements harness.External.
func (e Existing) External() string { return e.Words }

// NoFencingToken implements harness.Tokenless.
func (e ExistingTokenless) NoFencingToken() string { return e.Reason }
