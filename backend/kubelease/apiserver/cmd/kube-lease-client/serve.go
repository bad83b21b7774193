package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	coordclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/klog/v2"
)

// serveFlags are serve's own flags: client-go's timing and the token's source.
type serveFlags struct {
	leaseDuration, renewDeadline, retryPeriod time.Duration
	jitter                                    float64
	token                                     string
}

func (s *serveFlags) register(fs *flag.FlagSet) {
	fs.DurationVar(&s.leaseDuration, "lease-duration", 0, "client-go's LeaseDuration (whole seconds)")
	fs.DurationVar(&s.renewDeadline, "renew-deadline", 0, "client-go's RenewDeadline")
	fs.DurationVar(&s.retryPeriod, "retry-period", 0, "client-go's RetryPeriod")
	fs.Float64Var(&s.jitter, "jitter-factor", 0, "the JitterFactor fencecheck records; refused unless it is client-go's")
	fs.StringVar(&s.token, "token", "transitions", "the token: transitions (spec.leaseTransitions) or resourceversion")
}

// request is one line fencecheck sends. "cancel" (an extension fencecheck sends only to
// this program) asks to give up the acquire Of, which is then answered at once.
type request struct {
	ID int64  `json:"id"`
	Op string `json:"op"`
	Of int64  `json:"of"`
}

// server is one harness client: at most one election (a LeaderElector) at a time.
type server struct {
	flags    serveFlags
	client   int
	leases   coordclient.LeasesGetter
	ns, name string
	log      klog.Logger

	outMu sync.Mutex
	out   io.Writer

	grants int
	cur    *election // the election of the last grant, until it is released
}

func serve(ctx context.Context, c common, f serveFlags, stdin io.Reader, stdout io.Writer) error {
	if f.jitter != leaderelection.JitterFactor {
		return usageError{fmt.Errorf("-jitter-factor %g is not client-go's JitterFactor %g: fencecheck would record the wrong one", f.jitter, leaderelection.JitterFactor)}
	}
	if f.token != "transitions" && f.token != "resourceversion" {
		return usageError{fmt.Errorf("-token %q: want transitions or resourceversion", f.token)}
	}
	id, err := strconv.Atoi(os.Getenv("FENCECHECK_CLIENT"))
	if err != nil {
		return usageError{fmt.Errorf("FENCECHECK_CLIENT %q is not a client number", os.Getenv("FENCECHECK_CLIENT"))}
	}
	addrs := strings.Split(os.Getenv("FENCECHECK_LOCK_ADDRS"), ",")
	if len(addrs) != 1 || addrs[0] == "" {
		return usageError{fmt.Errorf("FENCECHECK_LOCK_ADDRS %q: want the one address of this client's proxy to the apiserver", os.Getenv("FENCECHECK_LOCK_ADDRS"))}
	}
	cl, err := loadCluster(c.kubeconfig)
	if err != nil {
		return err
	}
	cc, hc, err := cl.client(addrs[0], f.renewDeadline)
	if err != nil {
		return err
	}
	defer hc.CloseIdleConnections()
	s := &server{flags: f, client: id, leases: cc, ns: c.namespace, name: c.lease, out: stdout,
		log: klog.Background().WithValues("client", id)}
	return s.run(ctx, stdin)
}

// run serves stdin until it closes, one request after the other; a cancel may come
// while an acquire waits.
func (s *server) run(ctx context.Context, stdin io.Reader) error {
	lines := make(chan request)
	readErr := make(chan error, 1)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdin)
		sc.Buffer(make([]byte, 0, 4096), 1<<20)
		for sc.Scan() {
			var r request
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				readErr <- fmt.Errorf("kube-lease-client: fencecheck sent %q: %w", sc.Text(), err)
				return
			}
			lines <- r
		}
		readErr <- sc.Err()
	}()
	defer s.stopCurrent()
	var backlog []request
	for {
		var r request
		if len(backlog) > 0 {
			r, backlog = backlog[0], backlog[1:]
		} else {
			var ok bool
			if r, ok = <-lines; !ok {
				return <-readErr // stdin closed: fencecheck is done
			}
		}
		switch r.Op {
		case "acquire":
			more, open := s.acquire(ctx, r, lines)
			backlog = append(backlog, more...)
			if !open {
				return <-readErr
			}
		case "release":
			s.release(r)
		case "cancel":
			// For an acquire already answered: nothing to give up.
		default:
			s.answer(map[string]any{"id": r.ID, "ok": false, "definite": true, "error": fmt.Sprintf("unknown op %q", r.Op)})
		}
	}
}

// write sends one line; it is the only writer of stdout.
func (s *server) write(v map[string]any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // maps of strings, numbers and booleans
	}
	s.outMu.Lock()
	defer s.outMu.Unlock()
	_, _ = s.out.Write(append(b, '\n'))
}

func (s *server) answer(v map[string]any) { s.write(v) }

func (s *server) refuse(id int64, definite bool, msg string) {
	s.answer(map[string]any{"id": id, "ok": false, "definite": definite, "error": msg})
}

func (s *server) stopCurrent() {
	if s.cur != nil {
		s.cur.stop()
		s.cur = nil
	}
}

// acquire starts a LeaderElector with an identity of its own (client-N-grant-M: every
// grant is a change of holder, so client-go counts a transition even when the same
// client takes the lock twice in a row) and answers when it leads, or when fencecheck
// cancels. It returns the lines that came meanwhile (to be served next) and whether
// stdin is still open.
func (s *server) acquire(ctx context.Context, r request, lines <-chan request) ([]request, bool) {
	s.stopCurrent()
	s.grants++
	e, err := s.start(ctx, fmt.Sprintf("client-%d-grant-%d", s.client, s.grants))
	if err != nil {
		s.refuse(r.ID, true, err.Error())
		return nil, true
	}
	var backlog []request
	for {
		select {
		case <-e.started:
			s.grant(r.ID, e)
			return backlog, true
		case l, ok := <-lines:
			if !ok {
				e.stop()
				return backlog, false
			}
			if l.Op != "cancel" || l.Of != r.ID {
				backlog = append(backlog, l)
				continue
			}
			e.stop()
			if _, won := e.lock.grant(); won || e.lock.attempted() {
				s.refuse(r.ID, false, "kube-lease: acquire cancelled after a takeover write had been sent (ReleaseOnCancel handed back what it may have won)")
			} else {
				s.refuse(r.ID, true, "kube-lease: acquire cancelled: the lock was held by another")
			}
			return backlog, true
		}
	}
}

// grant answers a won election with its token and validity, and makes it current.
func (s *server) grant(id int64, e *election) {
	g, ok := e.lock.grant()
	if !ok {
		// OnStartedLeading comes only after a confirmed write naming us.
		e.stop()
		s.refuse(id, false, "kube-lease: client-go started leading without a confirmed write")
		return
	}
	tok := int64(g.transitions)
	if s.flags.token == "resourceversion" {
		v, err := strconv.ParseInt(g.resourceVersion, 10, 64)
		if err != nil {
			e.stop()
			s.refuse(id, false, fmt.Sprintf("kube-lease: resourceVersion %q is not a number (it is opaque by the API's contract): %v", g.resourceVersion, err))
			return
		}
		tok = v
	}
	s.cur = e
	e.announce(func() map[string]any {
		a := map[string]any{"id": id, "ok": true, "token": tok, "valid_until_ms": e.validUntil(), "library": clientGoVersion()}
		if g.durationSeconds > 0 {
			// The TTL the server granted: the Lease's leaseDurationSeconds as stored.
			a["ttl_ms"] = int64(g.durationSeconds) * 1000
		}
		return a
	})
}

// release cancels the election, whose ReleaseOnCancel writes the Lease with no holder.
func (s *server) release(r request) {
	e := s.cur
	s.cur = nil
	switch {
	case e == nil:
		s.refuse(r.ID, true, "kube-lease: no lease held (released already)")
		return
	case e.isLost():
		e.stop()
		s.refuse(r.ID, true, "kube-lease: client-go had stopped leading before the release (no renewal succeeded within RenewDeadline)")
		return
	}
	e.stop()
	if !e.lock.releasedOK() {
		s.refuse(r.ID, false, "kube-lease: release: client-go's write of an empty holder was not confirmed")
		return
	}
	s.answer(map[string]any{"id": r.ID, "ok": true})
}

// election is one running LeaderElector.
type election struct {
	s             *server
	lock          *recordingLock
	cancel        context.CancelFunc
	started, done chan struct{}
	startOnce     sync.Once

	mu        sync.Mutex
	announced bool // the grant was answered: events about it may follow
	lost      bool // OnStoppedLeading, not asked for
	stopping  bool // stop was called: OnStoppedLeading is ours
}

func (s *server) start(ctx context.Context, identity string) (*election, error) {
	e := &election{s: s, started: make(chan struct{}), done: make(chan struct{})}
	e.lock = newRecordingLock(s.leases, s.ns, s.name, identity, e.renewed)
	f := s.flags
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          e.lock,
		LeaseDuration: f.leaseDuration, RenewDeadline: f.renewDeadline, RetryPeriod: f.retryPeriod,
		ReleaseOnCancel: true,
		Name:            identity,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) { e.startOnce.Do(func() { close(e.started) }) },
			OnStoppedLeading: e.stoppedLeading,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("kube-lease: %w", err)
	}
	runCtx, cancel := context.WithCancel(klog.NewContext(ctx, s.log.WithValues("identity", identity)))
	e.cancel = cancel
	go func() {
		defer close(e.done)
		elector.Run(runCtx)
	}()
	return e, nil
}

// announce writes the grant's answer (made under the lock, so that no event about the
// grant comes before it) and then the lost event if it was lost meanwhile.
func (e *election) announce(answer func() map[string]any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.s.write(answer())
	e.announced = true
	if e.lost {
		e.s.write(map[string]any{"event": "lost"})
	}
}

func (e *election) stoppedLeading() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopping || e.lost {
		return
	}
	e.lost = true
	if e.announced {
		e.s.write(map[string]any{"event": "lost"})
	}
}

// renewed is told of each confirmed renewal: the grant is valid for LeaseDuration from
// that write's start, by this process's clock.
func (e *election) renewed() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.announced && !e.lost && !e.stopping {
		e.s.write(map[string]any{"event": "renewed", "valid_until_ms": e.validUntil()})
	}
}

// validUntil is the start of the last confirmed write naming this grant plus
// LeaseDuration, in Unix milliseconds rounded down. A candidate waits LeaseDuration from
// when it saw that write, which is later.
func (e *election) validUntil() int64 {
	return e.lock.lastWrite().Add(e.s.flags.leaseDuration).UnixMilli()
}

func (e *election) isLost() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.lost
}

// stop cancels the elector and waits for it to end (its release attempt is bounded by
// RenewDeadline).
func (e *election) stop() {
	e.mu.Lock()
	e.stopping = true
	e.mu.Unlock()
	e.cancel()
	<-e.done
}
