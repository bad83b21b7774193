// Package proc starts and stops the real server and client processes fencecheck runs
// (redis-server, nats-server, ZooKeeper's JVM, a user's lock client). Each process gets
// its own process group, so a pause (SIGSTOP) or a crash (SIGKILL) reaches every thread
// and child of it, and Close leaves nothing behind on any exit path. On Linux the child
// is also asked to die with fencecheck (PR_SET_PDEATHSIG), so even a SIGKILL of
// fencecheck itself orphans no server.
package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrNotFound marks a program that is not installed; callers turn it into a skip or a
// one-line "install PACKAGE" message.
var ErrNotFound = errors.New("program not found")

// Config says what to start.
type Config struct {
	// Name is used in messages ("redis-server on 127.0.0.1:6379").
	Name string
	// Path is the program (looked up in PATH when it has no slash); Args its arguments.
	// A program that a bare machine may lack is given as Need instead, so that it is
	// found (or hidden, HideEnv) the one way every such program is.
	Path string
	Need Need
	Args []string
	// Env is added to fencecheck's own environment.
	Env []string
	Dir string
	// Log receives the process's stdout and stderr (nil: discarded). The last lines are
	// also kept for error messages.
	Log io.Writer
	// Ready is polled until it returns nil (the server answers); nil means ready at once.
	Ready func(ctx context.Context) error
	// ReadyTimeout bounds the wait for Ready (default 30 s: a JVM on a loaded machine).
	ReadyTimeout time.Duration
	// Stdin, if set, is the process's standard input.
	Stdin io.Reader
	// Stdout, if set, receives the process's standard output instead of Log (stderr
	// still goes to Log).
	Stdout io.Writer
	// StopGrace is how long Close waits after SIGTERM before SIGKILL (default 2 s).
	StopGrace time.Duration
	// TreeSignals sends every signal also to each descendant of the process, for
	// servers whose children leave its process group (PostgreSQL's backends call
	// setsid), so that a pause or a crash reaches them too.
	TreeSignals bool
}

// Process is a started process and its group.
type Process struct {
	cfg  Config
	cmd  *exec.Cmd
	tail *tailBuffer
	done chan struct{}
	err  error // set before done closes

	mu      sync.Mutex
	stopped bool // SIGSTOPped and not yet continued
	closed  bool
	killed  bool // Close had to escalate to SIGKILL
}

// Start starts the process and waits until Ready succeeds, the process exits, or the
// ready timeout passes; in the last two cases the process group is killed and the error
// names the program and quotes the end of its output.
func Start(ctx context.Context, cfg Config) (*Process, error) {
	if cfg.Name == "" {
		cfg.Name = cfg.Path
		if cfg.Name == "" {
			cfg.Name = cfg.Need.Name()
		}
	}
	if cfg.ReadyTimeout <= 0 {
		cfg.ReadyTimeout = 30 * time.Second
	}
	if cfg.StopGrace <= 0 {
		cfg.StopGrace = 2 * time.Second
	}
	var path string
	var err error
	if !cfg.Need.isZero() || cfg.Path == "" {
		path, err = cfg.Need.Find()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", cfg.Name, err)
		}
	} else if hiddenByName(cfg.Path) {
		return nil, fmt.Errorf("%s: %w", cfg.Name, Need{Program: cfg.Path}.missing(ErrHidden))
	} else if path, err = exec.LookPath(cfg.Path); err != nil {
		return nil, fmt.Errorf("%s: %w: %s", cfg.Name, ErrNotFound, cfg.Path)
	}
	p := &Process{cfg: cfg, tail: &tailBuffer{max: 4096}, done: make(chan struct{})}
	// Not CommandContext: the process outlives the start context; Close ends it.
	cmd := exec.Command(path, cfg.Args...)
	cmd.Env = append(os.Environ(), cfg.Env...)
	cmd.Dir = cfg.Dir
	cmd.Stdin = cfg.Stdin
	var logw io.Writer = p.tail
	if cfg.Log != nil {
		logw = io.MultiWriter(cfg.Log, p.tail)
	}
	cmd.Stderr = logw
	cmd.Stdout = logw
	if cfg.Stdout != nil {
		cmd.Stdout = cfg.Stdout
	}
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: start: %w", cfg.Name, err)
	}
	p.cmd = cmd
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	if err := p.waitReady(ctx); err != nil {
		_ = p.Close()
		return nil, err
	}
	return p, nil
}

func (p *Process) waitReady(ctx context.Context) error {
	if p.cfg.Ready == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, p.cfg.ReadyTimeout)
	defer cancel()
	for {
		err := p.cfg.Ready(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited before it was ready (%v); its output ends: %s", p.cfg.Name, p.err, p.tail.String())
		case <-ctx.Done():
			return fmt.Errorf("%s was not ready within %v (last check: %v); its output ends: %s", p.cfg.Name, p.cfg.ReadyTimeout, err, p.tail.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// PID is the process's id (also its process group's id).
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has exited, with its wait error.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// Output is the end of what the process printed (for error messages).
func (p *Process) Output() string { return p.tail.String() }

// Signal sends sig to the whole process group.
func (p *Process) Signal(sig syscall.Signal) error {
	if exited, _ := p.Exited(); exited {
		return fmt.Errorf("%s (pid %d) has exited", p.cfg.Name, p.PID())
	}
	kids := p.tree()
	if err := syscall.Kill(-p.PID(), sig); err != nil {
		return fmt.Errorf("%s: signal %v to group %d: %w", p.cfg.Name, sig, p.PID(), err)
	}
	signalAll(kids, sig)
	return nil
}

// tree lists the descendants to signal besides the group (TreeSignals), read before the
// group is signalled: once the leader dies, its children are no longer below it.
func (p *Process) tree() []member {
	if !p.cfg.TreeSignals {
		return nil
	}
	var out []member
	for _, pid := range Descendants(p.PID()) {
		if st, ok := startTime(pid); ok {
			out = append(out, member{pid, st})
		}
	}
	return out
}

// member is a process by id and start time: a signal sent later goes only to the same
// process, never to an unrelated one that reused its id.
type member struct {
	pid   int
	start string
}

func signalAll(ms []member, sig syscall.Signal) {
	for _, m := range ms {
		if st, ok := startTime(m.pid); ok && st == m.start {
			_ = syscall.Kill(m.pid, sig)
		}
	}
}

// Pause stops the process group with SIGSTOP: a real stopped process, as in a long GC
// pause or a suspended VM.
func (p *Process) Pause() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		return err
	}
	p.stopped = true
	return nil
}

// Resume continues a paused process group with SIGCONT.
func (p *Process) Resume() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.stopped {
		return nil
	}
	if err := p.Signal(syscall.SIGCONT); err != nil {
		return err
	}
	p.stopped = false
	return nil
}

// Kill ends the process group with SIGKILL (a crash) and waits for the process to exit.
func (p *Process) Kill() error {
	kids := p.tree()
	_ = syscall.Kill(-p.PID(), syscall.SIGKILL)
	signalAll(kids, syscall.SIGKILL)
	<-p.done
	p.mu.Lock()
	p.stopped = false
	p.mu.Unlock()
	return nil
}

// Close ends the process: SIGTERM to the group (with SIGCONT, in case it is paused),
// SIGKILL after the grace period, then waits. Safe to call twice and concurrently.
func (p *Process) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		<-p.done
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	kids := p.tree()
	if exited, _ := p.Exited(); !exited {
		_ = syscall.Kill(-p.PID(), syscall.SIGTERM)
		_ = syscall.Kill(-p.PID(), syscall.SIGCONT)
		signalAll(kids, syscall.SIGTERM)
		signalAll(kids, syscall.SIGCONT)
		select {
		case <-p.done:
		case <-time.After(p.cfg.StopGrace):
			_ = syscall.Kill(-p.PID(), syscall.SIGKILL)
			signalAll(kids, syscall.SIGKILL)
			<-p.done
			p.mu.Lock()
			p.killed = true
			p.mu.Unlock()
		}
	}
	signalAll(kids, syscall.SIGKILL)
	// Children that left the group's leader behind (a daemonizing script) still share
	// the group id: make sure none of them survives.
	_ = syscall.Kill(-p.PID(), syscall.SIGKILL)
	return nil
}

// Killed reports whether Close had to end the process with SIGKILL because it was still
// running StopGrace after SIGTERM (a client that ignores SIGTERM says so in the run).
func (p *Process) Killed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.killed
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > t.max {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-t.max:]...)
	}
	return len(b), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(string(bytes.ToValidUTF8(t.buf, nil))), "\n")
	if len(lines) > 5 { // the last few lines say why a server gave up
		lines = lines[len(lines)-5:]
	}
	s := strings.Join(lines, " | ")
	if s == "" {
		return "(nothing)"
	}
	return s
}
