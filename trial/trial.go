// Package trial runs one resolved spec: it starts the backend and the resource from
// their descriptors, runs the workload with the spec's faults (harness/runner), writes
// the history before anything else, checks it (models) and writes the verdicts and
// pages (reports). Every server it starts is closed before it returns.
package trial

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/harness/nemesis/faults"
	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/harness/runner"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/reports"
	"github.com/fencecheck/fencecheck/spec"
)

// Options control how a run is executed.
type Options struct {
	// Dir is the run's own folder for its evidence (history.json first, then
	// verdict.json, the report and the porcupine visualizations; the services' logs).
	// Empty: nothing is written. It is one run's folder, not a results store: the
	// campaign runner and the fencecheck package make a fresh one in a store
	// (<store>/<label>/<timestamp>/) for every run.
	Dir string
	// Logger receives progress; nil discards it.
	Logger *slog.Logger
	// CheckTimeout bounds each property's linearizability check (0: models' default).
	CheckTimeout time.Duration
	// Select asks for the opt-in properties to check (models.Options.Select; run's
	// --fail-on names them).
	Select []models.Property
	// Host, when set, runs a built-in backend's lock clients as client host processes
	// in every run with a process pause (HostedFaults), so the pause stops the whole
	// client with SIGSTOP. Nil: every lock client runs inside fencecheck.
	Host LockerHost
}

// LockerHost runs a backend's lock clients as processes of their own (clienthost.Host,
// kept behind this interface so that a program of the Go API links no backend it does
// not register). Lockers returns the backend whose lockers are those processes, or a
// *harness.NotHostable saying why be's cannot be (the run then stays in-process).
type LockerHost interface {
	Lockers(ctx context.Context, be harness.Backend, ttl time.Duration, log *slog.Logger) (harness.Backend, error)
}

// processPause reports whether fault f stops the holder's whole process: a run with one
// hosts its lock clients (Options.Host).
func processPause(f string) bool { return f == faults.Pause || f == faults.PauseBeforeRead }

// clockFault reports whether fault f acts on the clocks the harness owns, its clock of
// each client among them, which a hosted client does not read: a run with one keeps its
// lock clients in-process, and says so.
func clockFault(f string) bool { return f == faults.Skew || f == faults.ClockJump }

// hostLockers decides whether s's lock clients run in client hosts and starts them:
// the lockers' backend (nil: in-process) and what the history records about it.
func hostLockers(ctx context.Context, opt Options, s spec.Spec, be harness.Backend, res harness.Resource, log *slog.Logger) (harness.Backend, string, error) {
	all := append(append([]string(nil), s.Faults...), s.RandomFaults...)
	if s.Schedule != nil {
		all = append(all, spec.ScheduleKinds(*s.Schedule)...)
	}
	pauses := false
	for _, f := range all {
		if processPause(f) {
			pauses = true
		}
	}
	if opt.Host == nil || !pauses {
		return nil, "", nil
	}
	for _, f := range all {
		if clockFault(f) {
			return nil, fmt.Sprintf("in-process: fault %s acts on the harness's clock of each client, which a client host does not read, so a pause stops only the worker goroutine", f), nil
		}
	}
	if lr, ok := res.(harness.LeaseReader); ok {
		return nil, "in-process: " + lr.ReadsLease() + ", which a client host's lease does not carry, so a pause stops only the worker goroutine", nil
	}
	if s.Keys > 1 {
		return nil, "in-process: a client host serves one lock (--keys 1), so a pause stops only the worker goroutine", nil
	}
	hb, err := opt.Host.Lockers(ctx, be, s.TTL, log)
	if err != nil {
		var refusal *harness.NotHostable
		if errors.As(err, &refusal) {
			return nil, "in-process: " + refusal.Error() + ", so a pause stops only the worker goroutine", nil
		}
		return nil, "", err
	}
	return hb, "client host: every lock client is a fencecheck process of its own, so a pause stops its whole process group", nil
}

// Outcome is an executed run.
type Outcome struct {
	Spec     spec.Spec
	History  *history.History
	Report   *models.Report
	Workload time.Duration
	Check    time.Duration
	// CloseErr says that stopping the run's servers or removing what it wrote in a store
	// it does not own (an external etcd's keys and leases) failed after the run.
	CloseErr error
}

// Run resolves s in reg, settles its TTL with the service, and executes it (Execute).
// Errors that are the spec's or the user's input wrap spec.ErrSpec.
func Run(ctx context.Context, reg *registry.Registry, s spec.Spec, opt Options) (*Outcome, error) {
	r, err := Resolve(ctx, reg, s, opt.Logger)
	if err != nil {
		return nil, err
	}
	return Execute(ctx, r, opt)
}

// Resolve resolves s in reg and settles the TTL an external service grants
// (spec.Resolved.SettleTTL), logging its note to log (nil: nowhere): what Run does
// before Execute.
func Resolve(ctx context.Context, reg *registry.Registry, s spec.Spec, log *slog.Logger) (*spec.Resolved, error) {
	r, err := spec.Resolve(reg, s)
	if err != nil {
		return nil, err
	}
	r, note, err := r.SettleTTL(ctx, s)
	if err != nil {
		return nil, err
	}
	if note != "" && log != nil {
		log.Info(note)
	}
	return r, nil
}

// Execute builds the backend and resource of a resolved spec, runs the workload, saves
// the history, checks it, and saves the verdicts.
func Execute(ctx context.Context, r *spec.Resolved, opt Options) (out *Outcome, err error) {
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	defer func() {
		// A run that ended because ctx did says so first, in its cause's words (the CLI's
		// names the signal), whatever part of the run noticed.
		if cause := context.Cause(ctx); err != nil && cause != nil && !errors.Is(err, cause) {
			err = fmt.Errorf("%w: %w", cause, err)
		}
	}()
	s := r.Spec
	runID, err := newRunID()
	if err != nil {
		return nil, err
	}
	if opt.Dir != "" {
		if err := os.MkdirAll(opt.Dir, 0o755); err != nil {
			return nil, err
		}
	}
	e, err := build(ctx, r, opt.Dir, runID, log)
	if err != nil {
		return nil, err
	}
	defer func() {
		// An external store keeps what a run wrote unless this succeeds: say so.
		if cerr := e.Close(); cerr != nil {
			log.Warn("closing the run's servers and removing its keys failed", "run_id", runID, "err", cerr)
			if out != nil {
				out.CloseErr = cerr
			}
		}
	}()
	res, be := e.resource, e.backend

	faults := r.ClientFaults(be)
	var maxHold time.Duration
	for _, f := range faults {
		maxHold = max(maxHold, f.MaxHold)
	}
	limit := maxHold + 10*time.Second
	if s.MinGrants > 0 {
		limit = max(limit, spec.MinGrantsCeiling)
	}
	run := history.Run{
		Scenario: s.Name, Backend: s.Backend, Resource: s.Resource, Fence: res.Fence(),
		Seed: s.Seed, TTLms: s.TTL.Milliseconds(), Faults: s.Faults,
		Extra: map[string]any{"run_id": runID, "clients": s.Clients, "duration_ms": s.Duration.Milliseconds(), "members": s.Members, "policy": s.Policy},
	}
	if s.Keys > 1 {
		run.Extra["keys"] = s.Keys
	}
	if s.MinGrants > 0 {
		run.Extra["min_grants"] = s.MinGrants
	}
	if s.MaxOps > 0 {
		run.Extra["max_ops"] = s.MaxOps
	}
	if s.Early {
		run.Extra["early"] = true
	}
	if t, ok := be.(harness.Tokenless); ok {
		run.NoToken = t.NoFencingToken()
	}
	if c, ok := registry.Service(be).(harness.Configured); ok {
		run.Extra["backend_settings"] = c.BackendSettings()
	}
	run.ServerVersion, run.SessionTimeouts = serverFacts(ctx, r, be, log)
	if sched, ok := r.Schedule(); ok {
		run.RandomFaults = s.RandomFaults
		if s.Schedule != nil {
			run.RandomFaults = spec.ScheduleKinds(sched)
			run.Extra["schedule_given"] = true
		}
		run.Extra["schedule"] = sched.Items
	}
	lockers, hosting, err := hostLockers(ctx, opt, s, be, res, log)
	if err != nil {
		return nil, err
	}
	if lockers != nil {
		defer func() { _ = lockers.Close() }()
	}
	if hosting != "" {
		run.Extra["lock_clients"] = hosting
	}
	if m, ok := be.(harness.ClientModuler); ok && lockers == nil {
		// An in-process client is the module this binary links (a hosted one says so
		// itself over the exec protocol).
		run.ClientLibrary = harness.ModuleVersion(m.ClientModule())
	}
	// A long run writes its history to disk as it goes (a segmented history).
	var spill history.Spill
	if opt.Dir != "" {
		spill.Head = filepath.Join(opt.Dir, "history.json")
	}
	start := time.Now()
	h, err := runner.Run(ctx, runner.Config{
		Run: run, Backend: be, Lockers: lockers, Resource: res, Clients: s.Clients,
		Duration: s.Duration, Tail: s.TTL, Limit: limit, MinGrants: s.MinGrants,
		MaxOps: s.MaxOps, Faults: faults,
		// A held write must outlive the longest hold, so it returns with its real status.
		OpTimeout:      maxHold + 2*s.TTL + time.Second,
		AcquireTimeout: 10 * s.TTL,
		Think:          s.TTL / 10,
		Careful:        s.Policy == spec.PolicyCareful,
		Heeding:        s.Policy == spec.PolicyHeeding,
		Margin:         s.TTL / 10,
		ClientNow:      e.clientNow,
		Logger:         log,
		Keys:           s.Keys,
		ValueTag:       valueTag(be, runID),
		Spill:          spill,
	})
	if h != nil {
		changed := false
		if h.Run.NoToken == "" {
			// A backend may learn only while it runs that it has no token (exec's clients).
			if t, ok := be.(harness.TokenlessReporter); ok {
				h.Run.NoToken = t.ReportedNoToken()
				changed = h.Run.NoToken != ""
			}
		}
		// The clients say their library as they run (exec's "library", a client host's
		// Go module).
		reporter := be
		if lockers != nil {
			reporter = lockers
		}
		if c, ok := reporter.(harness.ClientLibraryReporter); ok {
			if lib := c.ClientLibrary(); lib != "" && lib != h.Run.ClientLibrary {
				h.Run.ClientLibrary, changed = lib, true
			}
		}
		if changed && h.Ops == nil {
			if werr := history.SetSegmentsRun(spill.Head, h.Run); werr != nil && err == nil {
				err = werr
			}
		}
	}
	if err != nil {
		return nil, runError(ctx, err, h, opt.Dir, be)
	}
	out = &Outcome{Spec: s, History: h, Workload: time.Since(start)}
	if h.Ops == nil {
		if err := checkSpilled(ctx, out, spill.Head, opt, log); err != nil {
			return nil, err
		}
		if err := noGrant(out.Report, opt.Dir); err != nil {
			return nil, err
		}
		return out, nil
	}
	// Evidence first: the history is on disk before any check can fail or hang.
	if opt.Dir != "" {
		if err := history.WriteFile(filepath.Join(opt.Dir, "history.json"), h); err != nil {
			return nil, err
		}
	}
	start = time.Now()
	rep, err := models.Check(ctx, h, models.Options{Timeout: opt.CheckTimeout, Select: r.Spec.Selection(opt.Select)})
	if err != nil {
		return nil, fmt.Errorf("check: %w", err)
	}
	out.Report, out.Check = rep, time.Since(start)
	if opt.Dir != "" {
		if err := reports.WriteRun(ctx, opt.Dir, h, rep); err != nil {
			return out, err
		}
	}
	log.Info("scenario done", "name", s.Name, "workload", out.Workload, "check", out.Check)
	if err := noGrant(rep, opt.Dir); err != nil {
		return nil, err
	}
	return out, nil
}

// serverFacts asks the started service once, over its own protocol, for its version
// and the settings that end a lock's session; a server that will not say gets the
// descriptor's Version (the binary's --version) and a warning in the log, never a
// failed run.
func serverFacts(ctx context.Context, r *spec.Resolved, be harness.Backend, log *slog.Logger) (string, map[string]string) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	svc := registry.Service(be)
	version := ""
	if v, ok := svc.(harness.ServerVersioner); ok {
		var err error
		if version, err = v.ServerVersion(ctx); err != nil {
			log.Warn("the server did not say its version", "err", err)
		}
	}
	if version == "" {
		version = r.Backend.VersionOf(ctx, r.Settings)
	}
	var timeouts map[string]string
	if t, ok := svc.(harness.SessionTimeouter); ok {
		var err error
		if timeouts, err = t.SessionTimeouts(ctx); err != nil {
			log.Warn("the server did not say its session timeouts", "err", err)
		}
	}
	return version, timeouts
}

// ErrNoGrant marks a run in which acquires were made and every one failed: the clients
// never got the lock from the service (it refused them, or they could not talk to it),
// so the run tested nothing. It is a setup error (a spec error, exit 2), not a verdict.
var ErrNoGrant = errors.New("no lock was granted")

// noGrant is the setup error of a checked run without a grant, in one line: how many
// acquires failed and the first one's error (escaped: it is the client's text), which
// says what went wrong (a backend's connection error carries its hint, e.g. to add
// sslmode=disable), and where the evidence is.
func noGrant(rep *models.Report, dir string) error {
	ev := rep.Evidence
	if ev.Grants > 0 || ev.AcquireFailed == 0 {
		return nil
	}
	first := ""
	if ev.FirstAcquireError != "" {
		first = ", the first with " + strconv.Quote(ev.FirstAcquireError)
	}
	where := ""
	if dir != "" {
		where = fmt.Sprintf(" (the history: %s)", filepath.Join(dir, "history.json"))
	}
	return spec.Error{Err: fmt.Errorf("setup error: %w in the run: all %d acquire(s) failed%s%s", ErrNoGrant, ev.AcquireFailed, first, where)}
}

// runError keeps the history recorded before a run failed (a client that broke, an
// interrupt) and says where it is, in one line. A failure that is the user's (a client of
// theirs that broke the protocol, registry.Input, or died: harness.Failing) means the run
// could not be made as asked: a spec error, shown as it is.
func runError(ctx context.Context, err error, h *history.History, dir string, be harness.Backend) error {
	where := ""
	if h != nil && dir != "" {
		path := filepath.Join(dir, "history.json")
		if h.Ops == nil { // written to disk as it went (runner.Config.Spill)
			where = fmt.Sprintf(" (the history so far: %s)", path)
		} else if werr := history.WriteFile(path, h); werr == nil {
			where = fmt.Sprintf(" (the history so far, %d ops: %s)", len(h.Ops), path)
		}
	}
	if cause := context.Cause(ctx); cause != nil && errors.Is(err, ctx.Err()) {
		return fmt.Errorf("%w%s", cause, where)
	}
	if errors.Is(err, registry.ErrInput) {
		return spec.Error{Err: fmt.Errorf("%w%s", err, where)}
	}
	if f, ok := be.(harness.Failing); ok && f.Err() != nil && errors.Is(err, f.Err()) {
		return spec.Error{Err: fmt.Errorf("%w%s", err, where)}
	}
	return fmt.Errorf("run: %w%s", err, where)
}

// checkSpilled checks a history the run wrote to disk as it went, as a stream, and
// writes its verdict (the pages, which draw every op, are left out); out.History is
// then the history without its ops.
func checkSpilled(ctx context.Context, out *Outcome, head string, opt Options, log *slog.Logger) error {
	start := time.Now()
	res, err := models.CheckFile(ctx, head, models.Options{Timeout: opt.CheckTimeout, Select: out.Spec.Selection(opt.Select)})
	if err != nil {
		return fmt.Errorf("check: %w", err)
	}
	out.History, out.Report, out.Check = res.History, res.Report, time.Since(start)
	if err := reports.WriteVerdict(opt.Dir, res.Report); err != nil {
		return err
	}
	log.Info("scenario done", "name", out.Spec.Name, "workload", out.Workload, "check", out.Check, "ops", res.Report.Ops)
	return nil
}

// newRunID names one run: its keys in a store that outlives it (an external etcd) live
// under a prefix of its own, and its values carry it (valueTag).
func newRunID() (string, error) {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("run id: %w", err)
	}
	return "run-" + hex.EncodeToString(b), nil
}

// valueTag is what a run's written values carry: its run id (without "run-") when the
// backend's servers are not fencecheck's (harness.External), so that two runs' values
// in one store never look alike; nothing otherwise, as every store fencecheck starts
// starts empty.
func valueTag(be harness.Backend, runID string) string {
	if _, ok := be.(harness.External); !ok {
		return ""
	}
	return strings.TrimPrefix(runID, "run-")
}
