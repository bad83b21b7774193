// Package clienthost runs a built-in backend's in-process lock client as a process of
// its own: the fencecheck binary (or a test binary) re-executed as a client host builds
// the backend's real Locker from its harness.HostConfig and serves it over the exec
// protocol (docs/exec-protocol.md) on stdin and stdout. The parent drives it with the
// exec backend's Locker, so a pause is a SIGSTOP of the whole client's process group —
// the lock library's goroutines, timers, keep-alives and loss watchers stop with it, as
// in a GC pause of a real process or a suspended VM.
package clienthost

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	execlock "github.com/fencecheck/fencecheck/backend/execlock"
	"github.com/fencecheck/fencecheck/harness"
)

// EnvVar carries the harness.HostConfig (JSON) to a host; a process started with it
// serves one lock client and exits.
const EnvVar = "FENCECHECK_CLIENT_HOST"

// Constructors make a host's LockerMaker from a HostConfig's Config, by its Kind.
type Constructors map[string]func(config []byte) (harness.LockerMaker, error)

// ServeIfHost returns at once unless this process was started as a client host
// (EnvVar is set); then it serves the lock client until its stdin closes and exits the
// process: 0 when it ended cleanly, 3 when it could not start its client. Call it first
// thing in main and in the TestMain of every test package whose runs may host clients.
func ServeIfHost(ctors func() Constructors) {
	spec, ok := os.LookupEnv(EnvVar)
	if !ok {
		return
	}
	if err := serve(context.Background(), spec, ctors(), os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "client host: %v\n", err)
		os.Exit(3)
	}
	os.Exit(0)
}

// serve builds the client from spec and the exec protocol's environment and serves it.
func serve(ctx context.Context, spec string, ctors Constructors, in io.Reader, out io.Writer) error {
	var hc harness.HostConfig
	if err := json.Unmarshal([]byte(spec), &hc); err != nil {
		return fmt.Errorf("%s: %w", EnvVar, err)
	}
	mk, ok := ctors[hc.Kind]
	if !ok {
		return fmt.Errorf("%s: no lock client of kind %q in this binary", EnvVar, hc.Kind)
	}
	id, err := strconv.Atoi(os.Getenv("FENCECHECK_CLIENT"))
	if err != nil {
		return fmt.Errorf("FENCECHECK_CLIENT: %w", err)
	}
	var addrs []string
	if a := os.Getenv("FENCECHECK_LOCK_ADDRS"); a != "" {
		addrs = strings.Split(a, ",")
	}
	maker, err := mk(hc.Config)
	if err != nil {
		return fmt.Errorf("%s client: %w", hc.Kind, err)
	}
	defer maker.Close()
	l, err := maker.NewLocker(ctx, id, addrs)
	if err != nil {
		return fmt.Errorf("%s client %d: %w", hc.Kind, id, err)
	}
	defer l.Close()
	s := &server{hc: hc, l: l, out: out}
	return s.run(ctx, in)
}

type request struct {
	ID int64  `json:"id"`
	Op string `json:"op"`
	Of int64  `json:"of"`
}

// server serves one Locker: requests one after the other, a cancel at once.
type server struct {
	hc  harness.HostConfig
	l   harness.Locker
	out io.Writer

	wmu sync.Mutex // one whole line at a time on out

	mu sync.Mutex
	// acquiring is the acquire being served and its cancel.
	acquiring int64
	cancelAcq context.CancelFunc
	// cur is the lease granted last and not yet released; stopWatch ends its watcher.
	cur       harness.Lease
	stopWatch func()
}

func (s *server) send(v map[string]any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_, _ = s.out.Write(append(b, '\n'))
}

func (s *server) run(ctx context.Context, in io.Reader) error {
	ctx, cancel := context.WithCancel(ctx)
	queue := make(chan request, 64)
	var wg sync.WaitGroup
	wg.Go(func() {
		for r := range queue {
			s.handle(ctx, r)
		}
	})
	defer func() {
		// A closed stdin ends the client: an acquire still waiting gives up at once.
		cancel()
		close(queue)
		wg.Wait()
		s.mu.Lock()
		stop := s.stopWatch
		s.mu.Unlock()
		if stop != nil {
			stop()
		}
	}()
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		var r request
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return fmt.Errorf("request %q: %w", sc.Text(), err)
		}
		if r.Op == "cancel" {
			s.mu.Lock()
			if s.acquiring == r.Of && s.cancelAcq != nil {
				s.cancelAcq()
			}
			s.mu.Unlock()
			continue
		}
		queue <- r
	}
	return sc.Err()
}

func (s *server) handle(ctx context.Context, r request) {
	switch r.Op {
	case "acquire":
		s.acquire(ctx, r)
	case "release":
		s.release(ctx, r)
	default:
		s.send(map[string]any{"id": r.ID, "ok": false, "error": fmt.Sprintf("unknown op %q", r.Op), "definite": true})
	}
}

func refusal(id int64, err error) map[string]any {
	return map[string]any{"id": id, "ok": false, "error": err.Error(), "definite": errors.Is(err, harness.ErrNoEffect)}
}

func (s *server) acquire(ctx context.Context, r request) {
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.mu.Lock()
	s.acquiring, s.cancelAcq = r.ID, cancel
	s.mu.Unlock()
	le, err := s.l.Acquire(actx)
	s.mu.Lock()
	s.acquiring, s.cancelAcq = 0, nil
	s.mu.Unlock()
	if err != nil {
		s.send(refusal(r.ID, err))
		return
	}
	a := map[string]any{"id": r.ID, "ok": true, "ttl_ms": le.TTL().Milliseconds()}
	if lib := harness.ModuleVersion(s.hc.Module); lib != "" {
		a["library"] = lib
	}
	if s.hc.NoToken != "" {
		a["no_token"] = s.hc.NoToken
	} else {
		a["token"] = le.Token()
	}
	exp, _ := le.(harness.Expiring)
	if s.hc.Expiring {
		if exp == nil {
			s.send(refusal(r.ID, fmt.Errorf("%s: its lease does not know its end (harness.Expiring)", s.hc.Kind)))
			_ = le.Release(ctx)
			return
		}
		a["valid_until_ms"] = exp.ValidUntil().UnixMilli()
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	s.mu.Lock()
	s.cur = le
	var once sync.Once
	s.stopWatch = func() {
		once.Do(func() { close(stop) })
		<-done
	}
	s.mu.Unlock()
	// The grant is on its way before any event about it.
	s.send(a)
	go s.watch(le, exp, stop, done)
}

// watch forwards what the library says about le: its loss (with its reason) and, for a
// lease that knows its end, every later end as a renewed event.
func (s *server) watch(le harness.Lease, exp harness.Expiring, stop, done chan struct{}) {
	defer close(done)
	var tick <-chan time.Time
	var last time.Time
	if exp != nil && s.hc.Expiring {
		t := time.NewTicker(max(le.TTL()/50, 2*time.Millisecond))
		defer t.Stop()
		tick, last = t.C, exp.ValidUntil()
	}
	for {
		select {
		case <-stop:
			return
		case <-le.Lost():
			ev := map[string]any{"event": "lost"}
			if lr, ok := le.(harness.LossReasoner); ok && lr.LossReason() != "" {
				ev["reason"] = lr.LossReason()
			}
			s.send(ev)
			return
		case <-tick:
			if v := exp.ValidUntil(); v.After(last) && v.UnixMilli() > last.UnixMilli() {
				last = v
				s.send(map[string]any{"event": "renewed", "valid_until_ms": v.UnixMilli()})
			}
		}
	}
}

func (s *server) release(ctx context.Context, r request) {
	s.mu.Lock()
	le, stop := s.cur, s.stopWatch
	s.cur, s.stopWatch = nil, nil
	s.mu.Unlock()
	if stop != nil {
		stop()
	}
	if le == nil {
		s.send(map[string]any{"id": r.ID, "ok": false, "error": "no lock held", "definite": true})
		return
	}
	rctx, cancel := context.WithTimeout(ctx, max(2*le.TTL(), 5*time.Second))
	defer cancel()
	if err := le.Release(rctx); err != nil {
		s.send(refusal(r.ID, err))
		return
	}
	s.send(map[string]any{"id": r.ID, "ok": true})
}

// Host starts client hosts of the fencecheck binary Exe.
type Host struct {
	// Exe is the binary to run (os.Executable of one that calls ServeIfHost first).
	Exe string
}

// Lockers returns an exec backend whose clients are hosts of be's lockers, or a
// *harness.NotHostable saying why be's lockers cannot be hosted (the run then keeps them
// in-process). It implements trial.LockerHost.
func (h *Host) Lockers(ctx context.Context, be harness.Backend, ttl time.Duration, log *slog.Logger) (harness.Backend, error) {
	hb, ok := be.(harness.Hostable)
	if !ok {
		return nil, &harness.NotHostable{Why: fmt.Sprintf("backend %s's lock client cannot run in a client host yet (no harness.Hostable)", be.Name())}
	}
	hc, err := hb.HostConfig()
	if err != nil {
		return nil, &harness.NotHostable{Why: err.Error()}
	}
	if m, ok := be.(harness.ClientModuler); ok && hc.Module == "" {
		hc.Module = m.ClientModule()
	}
	spec, err := json.Marshal(hc)
	if err != nil {
		return nil, err
	}
	return execlock.Start(ctx, execlock.Config{
		Program: h.Exe, Endpoints: be.Endpoints(), TTL: ttl,
		Env:    []string{EnvVar + "=" + string(spec)},
		Label:  be.Name() + " client host",
		Expiry: hc.Expiring, Cancel: true, Logger: log,
		// The host's first acquire waits for the lock like any other.
		ReplyTimeout: max(30*ttl, execlock.DefaultReplyTimeout),
	})
}
