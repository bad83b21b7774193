package execlock

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/backend/lease"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/proc"
)

// maxLine bounds one line from a client.
const maxLine = 1 << 20

// Locker is one harness client's lock client process (harness.Locker,
// harness.PausableProcess, harness.CrashableProcess).
type Locker struct {
	b         *Backend
	id        int
	addrs     []string
	closing   chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup

	mu sync.Mutex
	// cur is the running process; a client-crash replaces it with a fresh one.
	cur      *incarnation
	nextID   int64
	pending  map[int64]*request
	lease    *grant // the lease granted last and not yet released
	paused   bool
	pausedAt time.Time
	lastLine string
	dead     error // set when the process died or broke the protocol: no more requests
	// settled is closed once an acquire the harness gave up on has been answered (and,
	// if it was a grant, given back); nil when there is none.
	settled chan struct{}
}

// incarnation is one process of the client's command.
type incarnation struct {
	proc *proc.Process
	// stdin is where requests go; stdout where answers come from.
	stdin, stdout *os.File
	// ended is closed when fencecheck ends the process on purpose (a crash fault, Close):
	// its exit is then no failure, and lines it still sent are dropped.
	ended   chan struct{}
	endOnce sync.Once
}

func (inc *incarnation) end() { inc.endOnce.Do(func() { close(inc.ended) }) }

func (inc *incarnation) isEnded() bool {
	select {
	case <-inc.ended:
		return true
	default:
		return false
	}
}

type request struct {
	inc  *incarnation // the process it was sent to
	id   int64
	op   string
	line string
	sent time.Time
	// paused is how long the client was stopped by a pause while this was pending.
	paused time.Duration
	reply  chan answer // buffered: the reader never blocks
	timer  *time.Timer
}

type answer struct {
	ok      bool
	token   int64
	noToken string // the client's reason its lock has no fencing token
	// validUntil is when the grant ends by the client's clock (Config.Expiry).
	validUntil time.Time
	// ttl is the TTL the client says was granted ("ttl_ms"; 0: the TTL asked for).
	ttl      time.Duration
	lease    *grant // a grant's, made when it was read
	msg      string
	definite bool
	err      error // the client died or broke the protocol before answering
}

func startLocker(ctx context.Context, b *Backend, id int, addrs []string) (*Locker, error) {
	l := &Locker{b: b, id: id, addrs: addrs, closing: make(chan struct{}), pending: map[int64]*request{}}
	inc, err := l.spawn(ctx)
	if err != nil {
		return nil, err
	}
	l.cur = inc
	return l, nil
}

// spawn starts a process of the client's command and the goroutines that serve it.
func (l *Locker) spawn(ctx context.Context) (*incarnation, error) {
	b, id, addrs := l.b, l.id, l.addrs
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("exec: %s %d: %w", b.cfg.Label, id, err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		_ = inR.Close()
		_ = inW.Close()
		return nil, fmt.Errorf("exec: %s %d: %w", b.cfg.Label, id, err)
	}
	path, args := "/bin/sh", []string{"-c", b.cfg.Command}
	if b.cfg.Program != "" {
		path, args = b.cfg.Program, b.cfg.Args
	}
	var logw io.Writer = io.Discard
	if b.cfg.LogWriter != nil {
		logw = &linePrefixer{w: b.cfg.LogWriter, prefix: fmt.Sprintf("%s %d: ", b.cfg.Label, id)}
	}
	p, err := proc.Start(ctx, proc.Config{
		Name: fmt.Sprintf("%s %d", b.cfg.Label, id),
		Path: path, Args: args,
		Env: append([]string{
			"FENCECHECK_CLIENT=" + strconv.Itoa(id),
			"FENCECHECK_LOCK_ADDRS=" + strings.Join(addrs, ","),
			"FENCECHECK_TTL_MS=" + strconv.FormatInt(b.cfg.TTL.Milliseconds(), 10),
		}, b.cfg.Env...),
		Dir:   b.cfg.Dir,
		Log:   logw,
		Stdin: inR, Stdout: outW,
		StopGrace: b.cfg.StopGrace,
	})
	// The child has its own copies of its ends (or never started).
	_ = inR.Close()
	_ = outW.Close()
	if err != nil {
		_ = inW.Close()
		_ = outR.Close()
		return nil, fmt.Errorf("exec: %s %d: %w", b.cfg.Label, id, err)
	}
	inc := &incarnation{proc: p, stdin: inW, stdout: outR, ended: make(chan struct{})}
	l.wg.Add(2)
	go l.read(inc)
	go l.watch(inc)
	return inc, nil
}

// PID is the running client process's id (its process group's id).
func (l *Locker) PID() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cur.proc.PID()
}

// builtin reports whether the client is a program of fencecheck's own.
func (l *Locker) builtin() bool { return l.b.cfg.Program != "" }

// read turns every line the process prints into an answer or an event.
func (l *Locker) read(inc *incarnation) {
	defer l.wg.Done()
	sc := bufio.NewScanner(inc.stdout)
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		select {
		case <-inc.ended:
			return // a crashed process's last words
		default:
		}
		l.mu.Lock()
		l.lastLine = line
		l.mu.Unlock()
		if err := l.handle(inc, line); err != nil {
			l.die(err)
			return
		}
	}
	if errors.Is(sc.Err(), bufio.ErrTooLong) {
		l.die(&ClientError{Label: l.b.cfg.Label, Builtin: l.builtin(), Client: l.id, PID: inc.proc.PID(), Problem: fmt.Sprintf("it sent a line longer than %d bytes (one JSON object per line)", maxLine)})
	}
	// EOF: the process exited or closed its stdout; watch reports an exit.
}

// handle checks one line against the protocol and delivers it.
func (l *Locker) handle(inc *incarnation, line string) error {
	bad := func(format string, args ...any) error {
		return &ClientError{Label: l.b.cfg.Label, Builtin: l.builtin(), Client: l.id, PID: inc.proc.PID(), Line: line, Problem: fmt.Sprintf(format, args...)}
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(line), &m); err != nil || m == nil {
		return bad("not a JSON object (want one object per line, e.g. {\"id\":1,\"ok\":true,\"token\":42})")
	}
	if raw, ok := m["event"]; ok {
		var ev string
		if err := json.Unmarshal(raw, &ev); err != nil {
			return bad(`"event" must be a string`)
		}
		switch {
		case ev == "renewed" && l.b.cfg.Expiry:
			until, err := validUntil(m)
			if err != nil {
				return bad("%v", err)
			}
			l.mu.Lock()
			if l.lease != nil && l.cur == inc {
				l.lease.setValidUntil(until)
			}
			l.mu.Unlock()
			return nil
		case ev != "lost":
			return bad(`unknown event %q (the only event is "lost")`, ev)
		}
		why := "the client sent {\"event\":\"lost\"}"
		if raw, ok := m["reason"]; ok {
			var r string
			if err := json.Unmarshal(raw, &r); err != nil {
				return bad(`a lost event's "reason" must be a string`)
			}
			if r != "" {
				why = "the client: " + r
			}
		}
		l.mu.Lock()
		if l.lease != nil && l.cur == inc {
			l.lease.markLost(why)
		}
		l.mu.Unlock()
		return nil
	}
	rawID, ok := m["id"]
	if !ok {
		return bad(`neither an answer (no "id") nor an event (no "event")`)
	}
	id, err := strconv.ParseInt(string(rawID), 10, 64)
	if err != nil {
		return bad(`"id" must be a JSON integer, got %s`, rawID)
	}
	var okv bool
	rawOK, has := m["ok"]
	if !has || json.Unmarshal(rawOK, &okv) != nil {
		return bad(`an answer needs "ok": true or false`)
	}
	l.mu.Lock()
	req, known := l.pending[id]
	last := l.nextID
	stale := l.cur != inc || inc.isEnded()
	l.mu.Unlock()
	if stale {
		return nil // a crashed process's answer: its requests have failed already
	}
	if !known {
		return bad("answers id %d, which is not a request awaiting an answer (fencecheck has sent ids 1 to %d)", id, last)
	}
	a := answer{ok: okv}
	if raw, has := m["library"]; has {
		var lib string
		if json.Unmarshal(raw, &lib) != nil || strings.TrimSpace(lib) == "" {
			return bad(`"library" must be a non-empty string naming the lock library and its version (e.g. "kazoo 2.10.0"), got %s`, raw)
		}
		l.b.reportLibrary(lib)
	}
	if okv && req.op == "acquire" {
		rawTok, hasTok := m["token"]
		rawNo, hasNo := m["no_token"]
		switch {
		case hasTok && hasNo:
			return bad(`a grant has either "token" or "no_token", not both`)
		case hasNo:
			if json.Unmarshal(rawNo, &a.noToken) != nil || strings.TrimSpace(a.noToken) == "" {
				return bad(`"no_token" must be a string saying why the lock has no fencing token, got %s`, rawNo)
			}
		case !hasTok:
			return bad(`a granted acquire needs "token" (a JSON integer), or "no_token" (why your lock has none)`)
		default:
			if a.token, err = strconv.ParseInt(string(rawTok), 10, 64); err != nil {
				return bad(`"token" must be a JSON integer (a 64-bit signed integer written without quotes, fraction or exponent), got %s`, rawTok)
			}
			if a.token == 0 {
				return bad(`"token" must not be 0: a history reserves 0 for "no token" (start your tokens at 1, e.g. a sequence number + 1; a lock without tokens sends "no_token")`)
			}
		}
		if err := l.b.grantKind(l.id, inc.proc.PID(), a.noToken); err != nil {
			if nt := (*NoTokenError)(nil); errors.As(err, &nt) {
				return err
			}
			return bad("%v", err)
		}
		if a.noToken != "" {
			// The order fencecheck saw the grants in: the checker's, never a fence.
			a.token = l.b.seen.Add(1)
		}
		if l.b.cfg.Expiry {
			if a.validUntil, err = validUntil(m); err != nil {
				return bad("%v", err)
			}
		}
		if raw, has := m["ttl_ms"]; has {
			ms, err := strconv.ParseInt(string(raw), 10, 64)
			if err != nil || ms <= 0 {
				return bad(`"ttl_ms" must be a positive JSON integer (the granted TTL in milliseconds), got %s`, raw)
			}
			a.ttl = time.Duration(ms) * time.Millisecond
		}
	}
	if !okv {
		if raw, has := m["error"]; has && json.Unmarshal(raw, &a.msg) != nil {
			return bad(`"error" must be a string`)
		}
		if raw, has := m["definite"]; has && json.Unmarshal(raw, &a.definite) != nil {
			return bad(`"definite" must be true or false`)
		}
		if a.msg == "" {
			a.msg = "refused (the client gave no reason)"
		}
	}
	l.mu.Lock()
	if l.pending[id] != req { // failed meanwhile (a timeout): it has had its answer
		l.mu.Unlock()
		return nil
	}
	delete(l.pending, id)
	if a.ok && req.op == "acquire" {
		// The lease is the current one from now on, so that an event the client sends
		// right after the grant reaches it.
		loss := lease.NewLoss()
		ttl := l.b.cfg.TTL
		if a.ttl > 0 {
			ttl = a.ttl
		}
		a.lease = &grant{Grant: lease.NewGrant(a.token, ttl, loss.Done()), l: l, loss: loss, validUntil: a.validUntil}
		l.lease = a.lease
	}
	l.mu.Unlock()
	req.timer.Stop()
	req.reply <- a
	return nil
}

// validUntil reads "valid_until_ms", the end of a grant by the client's clock in Unix
// milliseconds.
func validUntil(m map[string]json.RawMessage) (time.Time, error) {
	raw, ok := m["valid_until_ms"]
	if !ok {
		return time.Time{}, errors.New(`a grant and a renewed event need "valid_until_ms" (Unix milliseconds, a JSON integer)`)
	}
	ms, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf(`"valid_until_ms" must be a JSON integer, got %s`, raw)
	}
	return time.UnixMilli(ms), nil
}

// watch reports the process's exit, unless fencecheck ended it.
func (l *Locker) watch(inc *incarnation) {
	defer l.wg.Done()
	select {
	case <-inc.proc.Done():
	case <-inc.ended:
		return
	}
	select {
	case <-inc.ended:
		return
	default:
	}
	_, werr := inc.proc.Exited()
	l.mu.Lock()
	last := l.lastLine
	l.mu.Unlock()
	ce := &ClientError{Label: l.b.cfg.Label, Builtin: l.builtin(), Client: l.id, PID: inc.proc.PID(), Line: last, Crash: true}
	var ee *exec.ExitError
	code := -1
	if errors.As(werr, &ee) {
		code = ee.ExitCode()
	}
	switch {
	case !l.builtin() && (code == 127 || code == 126): // the shell could not find or run the command: the user's input
		ce.Crash, ce.Line = false, ""
		ce.Problem = fmt.Sprintf("its command cannot run (sh: exit status %d): %s", code, inc.proc.Output())
	default:
		status := "exit status 0"
		if werr != nil {
			status = werr.Error()
		}
		ce.Problem = fmt.Sprintf("its process exited during the run (%s); its stderr ends: %s", status, inc.proc.Output())
	}
	l.die(ce)
}

// die marks the client unusable, fails the backend with err (the first failure wins),
// fails every pending request and loses the current lease.
func (l *Locker) die(err error) {
	l.mu.Lock()
	if l.dead == nil {
		l.dead = err
	}
	pend := l.pending
	l.pending = map[int64]*request{}
	if l.lease != nil {
		l.lease.markLost("the client broke the protocol or exited") // err ends the run and says which
	}
	l.mu.Unlock()
	for _, r := range pend {
		r.timer.Stop()
		r.reply <- answer{err: err}
	}
	l.b.fail(err)
}

// send writes one request and registers it as pending.
func (l *Locker) send(op string) (*request, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dead != nil {
		return nil, fmt.Errorf("%w: %w", harness.ErrNoEffect, l.dead)
	}
	select {
	case <-l.closing:
		return nil, fmt.Errorf("%w: %s %d is closed", harness.ErrNoEffect, l.b.cfg.Label, l.id)
	default:
	}
	l.nextID++
	r := &request{inc: l.cur, id: l.nextID, op: op, sent: time.Now(), reply: make(chan answer, 1)}
	r.line = fmt.Sprintf(`{"id":%d,"op":%q}`, r.id, op)
	// A client that stops reading its stdin cannot hold fencecheck up for ever.
	_ = l.cur.stdin.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := l.cur.stdin.WriteString(r.line + "\n"); err != nil {
		// Nothing (or not a whole line) reached the client.
		return nil, fmt.Errorf("%w: %s %d: writing %s: %w", harness.ErrNoEffect, l.b.cfg.Label, l.id, r.line, err)
	}
	l.pending[r.id] = r
	r.timer = time.AfterFunc(l.b.cfg.ReplyTimeout, func() { l.checkTimeout(r) })
	return r, nil
}

// checkTimeout fails the client if r has waited ReplyTimeout, not counting pauses.
func (l *Locker) checkTimeout(r *request) {
	l.mu.Lock()
	if _, ok := l.pending[r.id]; !ok {
		l.mu.Unlock()
		return
	}
	waited := time.Since(r.sent) - r.paused
	if l.paused {
		waited -= time.Since(later(l.pausedAt, r.sent))
	}
	timeout := l.b.cfg.ReplyTimeout
	if l.paused || waited < timeout {
		r.timer.Reset(max(timeout-waited, 10*time.Millisecond))
		l.mu.Unlock()
		return
	}
	last := l.lastLine
	pid := l.cur.proc.PID()
	l.mu.Unlock()
	if last == "" {
		last = "nothing"
	} else {
		last = quote(last)
	}
	l.die(&ClientError{Label: l.b.cfg.Label, Builtin: l.builtin(), Client: l.id, PID: pid, Problem: fmt.Sprintf("it did not answer %s within %v (the last line it sent: %s)", r.line, timeout, last)})
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// wait waits for r's answer or ctx.
func (l *Locker) wait(ctx context.Context, r *request) (answer, error) {
	select {
	case a := <-r.reply:
		if a.err != nil {
			return a, a.err // unknown: the client may have acted before it broke
		}
		return a, nil
	case <-ctx.Done():
		return answer{}, fmt.Errorf("%s %d: no answer to %s yet: %w", l.b.cfg.Label, l.id, r.line, ctx.Err())
	case <-l.closing:
		return answer{}, fmt.Errorf("%s %d closed before answering %s", l.b.cfg.Label, l.id, r.line)
	}
}

// refusal turns a refused answer into an error: definite ones had no effect.
func refusal(a answer) error {
	if a.definite {
		return fmt.Errorf("%w: %s", harness.ErrNoEffect, a.msg)
	}
	return errors.New(a.msg)
}

// AcquireBoundsItself implements harness.SelfBoundedAcquirer: a client that does not
// take the cancel request answers every acquire itself (docs/exec-protocol.md: a grant,
// or a refusal once its own wait is over), and ReplyTimeout, pauses not counted, ends
// one that does not. Abandoning its acquire at the worker's deadline would change
// nothing for the client, which goes on serving it, but would hide its grant: given back
// unrecorded (abandon), it could carry the very token a restarted server reused. Only
// the run's stop abandons it. A client that takes cancel is asked to give up instead.
func (l *Locker) AcquireBoundsItself() bool { return !l.b.cfg.Cancel }

// Acquire implements harness.Locker: {"op":"acquire"}, answered with a grant and its token.
func (l *Locker) Acquire(ctx context.Context) (harness.Lease, error) {
	l.mu.Lock()
	settled := l.settled
	l.mu.Unlock()
	if settled != nil {
		// An earlier acquire is still unanswered: the client serves one request at a
		// time, so wait for it (and its give-back) before asking again.
		select {
		case <-settled:
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %s %d is still answering an earlier acquire: %w", harness.ErrNoEffect, l.b.cfg.Label, l.id, ctx.Err())
		case <-l.closing:
			return nil, fmt.Errorf("%w: %s %d is closed", harness.ErrNoEffect, l.b.cfg.Label, l.id)
		}
	}
	r, err := l.send("acquire")
	if err != nil {
		return nil, err
	}
	a, err := l.wait(ctx, r)
	if err != nil {
		if ctx.Err() != nil {
			if l.b.cfg.Cancel {
				return nil, l.cancel(r, err)
			}
			l.abandon(r)
		}
		return nil, err
	}
	if !a.ok {
		return nil, refusal(a)
	}
	le := a.lease
	l.mu.Lock()
	if l.dead != nil || r.inc != l.cur {
		le.markLost("the client process that granted it is gone")
	}
	l.mu.Unlock()
	if l.b.cfg.Expiry {
		return expiringLease{le}, nil
	}
	return le, nil
}

// cancel asks the client to give up the acquire r whose ctx ended (Config.Cancel) and
// waits up to CancelWait for the answer: a refusal keeps the client's verdict (definite
// or not), and a grant that came first is given back. Without an answer in time, r is
// abandoned as for a client without cancel. cause is the ctx's error.
func (l *Locker) cancel(r *request, cause error) error {
	l.mu.Lock()
	ok := l.dead == nil && r.inc == l.cur
	if ok {
		_ = l.cur.stdin.SetWriteDeadline(time.Now().Add(5 * time.Second))
		_, err := fmt.Fprintf(l.cur.stdin, "{\"op\":\"cancel\",\"of\":%d}\n", r.id)
		ok = err == nil
	}
	l.mu.Unlock()
	if !ok {
		l.abandon(r)
		return cause
	}
	t := time.NewTimer(l.b.cfg.CancelWait)
	defer t.Stop()
	select {
	case a := <-r.reply:
		switch {
		case a.err != nil:
			return a.err
		case !a.ok:
			return fmt.Errorf("%w (%w)", refusal(a), cause)
		}
		// Granted before the cancel arrived: abandon gives it back.
		r.reply <- a
		l.abandon(r)
		return fmt.Errorf("%s %d: the acquire was granted (token %d) as it was cancelled, and is given back: %w", l.b.cfg.Label, l.id, a.token, cause)
	case <-t.C:
		l.abandon(r)
		return fmt.Errorf("%s %d: no answer within %v to the cancel of %s: %w", l.b.cfg.Label, l.id, l.b.cfg.CancelWait, r.line, cause)
	case <-l.closing:
		return cause
	}
}

// abandon waits, in the background, for the answer to an acquire the harness gave up
// on; a late grant is given back at once, so the lock is not held by nobody's worker.
func (l *Locker) abandon(r *request) {
	done := make(chan struct{})
	l.mu.Lock()
	l.settled = done
	l.mu.Unlock()
	l.wg.Go(func() {
		defer func() {
			l.mu.Lock()
			if l.settled == done {
				l.settled = nil
			}
			l.mu.Unlock()
			close(done)
		}()
		var a answer
		select {
		case a = <-r.reply:
		case <-l.closing:
			return
		}
		if a.err != nil || !a.ok {
			return
		}
		l.mu.Lock()
		if l.lease == a.lease {
			l.lease = nil // nobody's: given back at once
		}
		l.mu.Unlock()
		rel, err := l.send("release")
		if err != nil {
			return
		}
		select {
		case <-rel.reply:
		case <-l.closing:
		}
	})
}

// PauseProcess implements harness.PausableProcess: SIGSTOP to the client's group.
func (l *Locker) PauseProcess() (int, error) {
	l.mu.Lock()
	l.paused, l.pausedAt = true, time.Now()
	inc := l.cur
	l.mu.Unlock()
	return inc.proc.PID(), inc.proc.Pause()
}

// ResumeProcess implements harness.PausableProcess: SIGCONT to the group.
func (l *Locker) ResumeProcess() error {
	l.mu.Lock()
	if l.paused {
		for _, r := range l.pending {
			r.paused += time.Since(later(l.pausedAt, r.sent))
		}
		l.paused = false
	}
	inc := l.cur
	l.mu.Unlock()
	return inc.proc.Resume()
}

// CrashProcess implements harness.CrashableProcess: SIGKILL to the client's process
// group (a crash: the lease it held is lost with it, requests in flight have an unknown
// outcome), then a fresh process of the same command in its place, as a supervisor
// would restart it.
func (l *Locker) CrashProcess(ctx context.Context) (oldPID, newPID int, err error) {
	l.mu.Lock()
	old := l.cur
	old.end()
	pend := l.pending
	l.pending = map[int64]*request{}
	if l.lease != nil {
		l.lease.markLost("the client process was killed (SIGKILL)")
	}
	l.mu.Unlock()
	oldPID = old.proc.PID()
	_ = old.proc.Kill()
	_ = old.proc.Close()
	_ = old.stdin.Close()
	_ = old.stdout.Close()
	crashed := fmt.Errorf("%s %d: its process %d was killed with SIGKILL before it answered", l.b.cfg.Label, l.id, oldPID)
	for _, r := range pend {
		r.timer.Stop()
		r.reply <- answer{err: crashed}
	}
	select {
	case <-l.closing:
		return oldPID, 0, fmt.Errorf("%s %d is closed", l.b.cfg.Label, l.id)
	default:
	}
	inc, err := l.spawn(ctx)
	if err != nil {
		ce := &ClientError{Label: l.b.cfg.Label, Builtin: l.builtin(), Client: l.id, PID: oldPID, Crash: true, Problem: fmt.Sprintf("a fresh process could not start after the crash: %v", err)}
		l.die(ce)
		return oldPID, 0, ce
	}
	l.mu.Lock()
	l.cur = inc
	l.mu.Unlock()
	select {
	case <-l.closing: // Close ran meanwhile and did not see this one
		l.stop(inc)
	default:
	}
	return oldPID, inc.proc.PID(), nil
}

// Close ends the client process: its stdin closes (a well-behaved client exits), then
// SIGTERM, then SIGKILL after the grace period. Safe to call twice.
func (l *Locker) Close() error {
	l.closeOnce.Do(func() {
		l.mu.Lock()
		close(l.closing)
		inc := l.cur
		l.mu.Unlock()
		l.stop(inc)
		l.mu.Lock()
		for _, r := range l.pending {
			r.timer.Stop()
		}
		if l.lease != nil {
			l.lease.markLost("the client was closed") // it ended with the process
		}
		l.mu.Unlock()
		l.wg.Wait()
	})
	return nil
}

// stop ends one process: its stdin closes, then SIGTERM, then SIGKILL.
func (l *Locker) stop(inc *incarnation) {
	inc.end()
	_ = inc.stdin.Close()
	t := time.NewTimer(l.b.cfg.StopGrace)
	select {
	case <-inc.proc.Done():
	case <-t.C:
	}
	t.Stop()
	_ = inc.proc.Close()
	if inc.proc.Killed() {
		l.b.killed(fmt.Sprintf("%d (pid %d)", l.id, inc.proc.PID()))
	}
	_ = inc.stdout.Close()
}

// grant is a lease the client reported.
type grant struct {
	lease.Grant
	l    *Locker
	loss *lease.Loss

	mu         sync.Mutex
	validUntil time.Time // Config.Expiry: the grant's end by the client's clock
}

func (le *grant) markLost(why string) { le.loss.MarkWhy(why) }

// LossReason implements harness.LossReasoner: why the lease was lost — the client's
// lost event (with its "reason", if it gave one), its process killed or gone.
func (le *grant) LossReason() string { return le.loss.LossReason() }

// setValidUntil notes a renewal the client reported.
func (le *grant) setValidUntil(t time.Time) {
	le.mu.Lock()
	defer le.mu.Unlock()
	if t.After(le.validUntil) {
		le.validUntil = t
	}
}

// expiringLease is a lease whose client reports its validity (Config.Expiry).
type expiringLease struct{ *grant }

var _ harness.Expiring = expiringLease{}

// ValidUntil implements harness.Expiring: the end the client reported last.
func (e expiringLease) ValidUntil() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.validUntil
}

// Release sends {"op":"release"}; the client answers even for a lease it already lost
// (a definite refusal, typically).
func (le *grant) Release(ctx context.Context) error {
	l := le.l
	l.mu.Lock()
	if l.lease == le {
		l.lease = nil
	}
	l.mu.Unlock()
	r, err := l.send("release")
	if err != nil {
		return err
	}
	a, err := l.wait(ctx, r)
	if err != nil {
		return err
	}
	if !a.ok {
		return refusal(a)
	}
	return nil
}

// linePrefixer writes each line of a client's stderr with the client's name in front.
type linePrefixer struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string
	buf    []byte
}

func (p *linePrefixer) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			break
		}
		if _, err := fmt.Fprintf(p.w, "%s%s\n", p.prefix, p.buf[:i]); err != nil {
			return len(b), nil // a broken log must not break the client
		}
		p.buf = p.buf[i+1:]
	}
	if len(p.buf) > 64<<10 { // no newline for a long time: flush what there is
		_, _ = fmt.Fprintf(p.w, "%s%s\n", p.prefix, p.buf)
		p.buf = p.buf[:0]
	}
	return len(b), nil
}

// ClientShape is what a registry.Shape holds for clients run with cfg: a *Locker, and a
// lease that implements harness.Expiring when the clients report their grants' ends
// (cfg.Expiry). A backend built on exec's clients (kube-lease) states its Shape with it.
func ClientShape(cfg Config) (harness.Locker, harness.Lease) {
	if cfg.Expiry {
		return (*Locker)(nil), expiringLease{}
	}
	return (*Locker)(nil), (*grant)(nil)
}
