package sqlsession

import (
	"context"
	"fmt"
	"sync"

	"github.com/fencecheck/fencecheck/harness/proc"
)

// Process is the running process of a database server fencecheck started, replaced on
// every start. Embedded in the server, its PID, Pause, Resume and Crash are the
// server's (proc.Server); the signals reach what proc.Config chose (group or tree).
type Process struct {
	mu sync.Mutex
	p  *proc.Process
}

// Set records a newly started process.
func (s *Process) Set(p *proc.Process) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.p = p
}

// Proc is the current process (nil before the first start).
func (s *Process) Proc() *proc.Process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.p
}

// PID is the process id (0 before the first start).
func (s *Process) PID() int {
	if p := s.Proc(); p != nil {
		return p.PID()
	}
	return 0
}

// Pause stops the server with SIGSTOP.
func (s *Process) Pause() error { return s.Proc().Pause() }

// Resume continues it with SIGCONT.
func (s *Process) Resume() error { return s.Proc().Resume() }

// Crash kills it with SIGKILL.
func (s *Process) Crash() error { return s.Proc().Kill() }

// RestartWith starts a crashed server again: reinit first (a new, empty data dir)
// unless keepData, then start. name prefixes the error of a server still running.
func (s *Process) RestartWith(ctx context.Context, name string, keepData bool, reinit, start func(context.Context) error) error {
	if exited, _ := s.Proc().Exited(); !exited {
		return fmt.Errorf("%s: restart: the server (pid %d) is still running", name, s.PID())
	}
	_ = s.Proc().Close()
	if !keepData {
		if err := reinit(ctx); err != nil {
			return err
		}
	}
	return start(ctx)
}
